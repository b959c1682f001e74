"""What a pane needs from the app that hosts it (:class:`PaneHost`).

Screens talk to the app only through this protocol (``PaneScreen.tau``), so a
screen never imports :class:`tau_tui.app.TauApp`: the app imports the screens,
never the other way round.  Textual's own ``App`` API (``push_screen``,
``batch_update``, ``current_theme``…) is used through ``Screen.app`` as usual."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tau_tui.mutations.mutation import ClusterHost, Mutation

if TYPE_CHECKING:  # names for the protocol's types only: the evidence recorder loads after the first frame
    from datetime import datetime

    from tau_tui.core.cluster.interfaces import ClusterBackend
    from tau_tui.core.operations.evidence.recorder import EvidenceRecorder
    from tau_tui.core.operations.evidence.store import EvidenceStore
    from tau_tui.core.operations.node_health_memo import NodeHealthMemo
    from tau_tui.core.operations.recording.replay_clock import ReplayStatus
    from tau_tui.core.operations.run_status_memo import RunStatusMemo
    from tau_tui.settings.settings_file import AppSettings
    from tau_tui.widgets.header_bar import HeaderState


class UnsavedWork(Protocol):
    """Work a pane holds that is not on disk yet (the Compose form): the app asks before it quits,
    and keeps it as a draft when it ends without asking."""

    def has_unsaved_work(self) -> bool: ...

    def ask_then(self, doing: str, proceed: Callable[[], None]) -> None:
        """``proceed`` at once when nothing is unsaved; else save / discard / cancel first."""
        ...

    def keep_draft(self, reason: str) -> Path | None:
        """Keep the unsaved work on disk (the app ends without asking); where, or None."""
        ...


class PaneHost(ClusterHost, Protocol):
    #: None until a cluster (or the demo) is connected.
    backend: ClusterBackend | None
    #: ``--readonly``: mutating actions are hidden and refused.
    readonly: bool
    #: Why mutations are refused: "started with --readonly", or the replay's name.
    readonly_reason: str
    settings: AppSettings
    #: ``-n`` from the command line (None: all namespaces).
    namespace_name: str | None
    #: ``--file`` for the compose pane.
    compose_file: str | None
    #: ``(run ref, all containers)`` the logs pane opens when it mounts, then clears.
    pending_logs: tuple | None
    #: The local evidence store (app state, written in --readonly too) and the recorder that fills it.
    evidence: EvidenceStore
    evidence_recorder: EvidenceRecorder | None
    #: Each run's status while none of its objects changed (the recorder's and the Runs pane's).
    run_statuses: RunStatusMemo
    #: Each node's GPU health while its Node and heartbeats hold (the recorder's and the panes').
    node_health: NodeHealthMemo
    #: Until when (monotonic) reads in worker threads nap for a person pressing keys.
    key_hold_until: float
    #: The pane on screen whose first rows are not shown yet (set and cleared by that pane, on the UI
    #: thread), or None: the recorder and read aheads give way to its read.
    first_rows_awaited_by: object | None

    @property
    def first_rows_awaited(self) -> bool: ...

    def hold_background(self, seconds: float = ...) -> None:
        """Work nobody asked for waits ``seconds`` (as after a key)."""
        ...

    def now(self) -> datetime:
        """Cluster time (the backend's clock when it has one)."""
        ...

    def replay_status(self) -> ReplayStatus | None:
        """Where a replay (``--replay FILE``) stands, or None when the cluster is live."""
        ...

    def request_mutation(self, mutation: Mutation) -> None:
        """Preview → confirm → apply → audit; refused in --readonly."""
        ...

    def block_mutation(self, verb: str, target: str) -> None:
        """Say that --readonly refused ``verb target``."""
        ...

    async def open_logs_for_run(self, ref: str, container_all: bool = False, pod: str | None = None) -> None: ...

    def header_state(self, pane: str, crumbs: str, filter_text: str) -> HeaderState: ...

    def register_unsaved_work(self, holder: UnsavedWork) -> None:
        """The app's quit asks ``holder`` first, and keeps its draft if it ends without asking."""
        ...

    def action_open_demo(self) -> None:
        """Switch to the embedded demo cluster (offered when no cluster is reachable)."""
        ...

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any: ...

    def open_multikueue_flow(self, flow: str, args: list[str]) -> None:
        """Open the MultiKueue wizard or checklist (``:mk setup`` and friends)."""
        ...

    def multikueue_environment(self, plan_path: str | None = None) -> Any:
        """The MultiKueue wizard's worker connector, plan and clock (``startup/multikueue_env.py``)."""
        ...
