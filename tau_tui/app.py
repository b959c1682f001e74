"""The Textual app: panes, navigation, themes, settings and the refresh tick.  The command line,
the mutation flow, the replay's keys and the panes prepared ahead are components it owns
(:mod:`tau_tui.app_components`); the app keeps the hooks Textual calls on it and hands them over.

``tau-tui`` with no sub-command (or with app flags) is launched by
:func:`tau_tui.commands.app_command.run_app`.  Every cluster call runs in a thread worker that
only posts messages; the backend itself keeps its cache current on its own
core threads.  Screens reach the app through :class:`tau_tui.screens.host.PaneHost`
only; the app imports them, never the other way round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeAlias

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme
from textual.widget import AwaitMount
from textual.worker import get_current_worker

from tau_tui import app_messages
from tau_tui.app_components.command_mode import CommandMode
from tau_tui.app_components.found_versions_cache import FoundVersionsCache
from tau_tui.app_components.heap_upkeep import HeapUpkeep
from tau_tui.app_components.key_activity import KEY_HOLDS_BACKGROUND_S, KeyActivity
from tau_tui.app_components.key_gate import KeyGate, KeyTrail
from tau_tui.app_components.keys import APP_BINDINGS
from tau_tui.app_components.mutation_flow import MutationFlow
from tau_tui.app_components.pane_modes import PANE_MODES
from tau_tui.app_components.pane_preparation import PanePreparation
from tau_tui.app_components.pane_switch_mask import PaneSwitchMask
from tau_tui.app_components.quitting import Quitting
from tau_tui.app_components.replay_controls import REPLAY_BINDINGS, REPLAY_HELP_KEYS, ReplayControls
from tau_tui.app_components.scope_notice import ScopeNotice
from tau_tui.app_components.unsaved_guard import UnsavedGuard
from tau_tui.app_messages import BackendFailed, BackendReady, MutationApplied, MutationPreviewed
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.demo_trust import demo_audit_log
from tau_tui.core.operations.evidence.cluster_identity import is_simulated
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.core.operations.recording.format import RecordingError
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.core.operations.run_status_memo import RunStatusMemo
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.no_cluster import NoClusterScreen
from tau_tui.settings.settings_file import DEFAULT_THEME, AppSettings, LoadedSettings, load_settings
from tau_tui.settings.theme_files import load_theme_files
from tau_tui.startup.backends import (
    BackendUnavailable,
    connect_kubeconfig_backend,
    start_demo_backend,
    start_replay_backend,
)
from tau_tui.startup.heap import settle_heap
from tau_tui.widgets import status_text
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.header_bar import HeaderState
from tau_tui.widgets.help_dialog import HelpDialog
from tau_tui.widgets.messages import CommandLineSubmitted

if TYPE_CHECKING:  # loaded in the workers that start them, after the first frame
    from tau_tui.core.operations.evidence.recorder import EvidenceRecorder
    from tau_tui.core.operations.recording.replay_clock import ReplayStatus
    from tau_tui.core.operations.recording.writer import SessionRecorder
    from tau_tui.mutations.mutation import Mutation
    from tau_tui.screens.host import UnsavedWork


#: How often the shown pane looks whether a kind it reads moved (generation counters only): a watch
#: event is on screen about this long after it reached the cache, not up to a whole refresh tick.
CHANGE_POLL_S = 0.1
#: How long the heap settle waits for the first sync, and the slices it waits in.
FIRST_SYNC_WAIT_S = 300.0
SYNC_WAIT_SLICE_S = 0.5


class TauApp(App):
    """tau-tui."""

    TITLE = "tau-tui"
    CSS_PATH = "tau.tcss"
    ENABLE_COMMAND_PALETTE = True
    MODES = PANE_MODES
    DEFAULT_MODE = "queue"

    BINDINGS = [*APP_BINDINGS, *REPLAY_BINDINGS]

    # The messages it posts, named on the app as Textual's widgets name theirs.
    BackendReady: TypeAlias = app_messages.BackendReady
    BackendFailed: TypeAlias = app_messages.BackendFailed
    MutationPreviewed: TypeAlias = app_messages.MutationPreviewed
    MutationApplied: TypeAlias = app_messages.MutationApplied
    MutationBlocked: TypeAlias = app_messages.MutationBlocked

    def __init__(
        self,
        backend: ClusterBackend | None = None,
        *,
        demo: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
        readonly: bool = False,
        theme: str | None = None,
        settings: LoadedSettings | None = None,
        audit: AuditLog | None = None,
        start_pane: str | None = None,
        compose_file: str | None = None,
        demo_realtime: bool = True,
        request_timeouts=None,
        evidence: EvidenceStore | None = None,
        record: str | None = None,
        replay: str | None = None,
        record_while_readonly: bool = False,
        all_namespaces: bool = False,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.demo = demo
        self.context_name = context
        self.namespace_name = namespace
        #: ``-A``: every namespace even when the kubeconfig context names one.
        self.all_namespaces = all_namespaces
        #: ``--replay FILE``: a recording played back, read-only by nature.
        self.replay_file = replay
        self.readonly = readonly or replay is not None or isinstance(backend, ReplayBackend)
        #: Why mutations are refused (said with every refusal).
        self.readonly_reason = "a replay is read-only" if self.readonly and not readonly else "started with --readonly"
        #: ``--record FILE``: the session recorder, once the backend is up.  Read-only writes nothing
        #: outside the state directory, so it records only when asked to explicitly (the header says so).
        self.record_file = record if not self.readonly or record_while_readonly else None
        self.session_recorder: SessionRecorder | None = None
        self.loaded_settings = settings or load_settings()
        self.settings: AppSettings = self.loaded_settings.settings
        self.audit = audit or AuditLog()
        self.evidence = evidence or EvidenceStore()
        #: The demo's own audit log and evidence store replace the user's while the backend is the
        #: simulated cluster (each unless a caller gave its own).
        self._own_audit, self._own_evidence = audit is None, evidence is None
        #: Captures a run's evidence when it finishes (a core thread; see core/operations/evidence/recorder.py).
        self.evidence_recorder: EvidenceRecorder | None = None
        self.run_statuses = RunStatusMemo()
        self.node_health = NodeHealthMemo()
        #: Tests and embedders may set the MultiKueue wizard's environment directly.
        self._multikueue_env = None
        self.requested_theme = theme
        self.start_pane = start_pane or self.DEFAULT_MODE
        self.compose_file = compose_file
        self.demo_realtime = demo_realtime
        self.pane_history: list[str] = []
        self.backend_note = ""
        self.connection_label = "connecting" if backend is None else "connected"
        self.problems: list[str] = list(self.loaded_settings.problems)
        self.pending_logs: tuple | None = None
        #: ``--request-timeout`` (else the settings' request_timeout/connect_timeout).
        self.request_timeouts = request_timeouts
        self.key_activity = KeyActivity(self)
        self.key_gate = KeyGate(self)
        self.heap_upkeep = HeapUpkeep(self, self.key_activity)
        self.pane_preparation = PanePreparation(self, self.key_activity)
        self.pane_switch_mask = PaneSwitchMask(self, self.pane_preparation)
        self.replay_controls = ReplayControls(self)
        self.scope_notice = ScopeNotice(self)
        self.command_mode = CommandMode(self, self.replay_controls)
        self.mutation_flow = MutationFlow(self)
        self.unsaved_guard = UnsavedGuard(self)
        self.quitting = Quitting(self)
        self.found_versions = FoundVersionsCache(self)

    # -- what Textual calls on the app, handed to its components ----------------------------------

    async def on_event(self, event: events.Event) -> None:
        if self.key_gate.takes(event):
            self.key_activity.key_pressed()
            await self.key_gate.arrived(event)  # one key at a time, in order (app_components/key_gate.py)
            return
        await super().on_event(event)

    @on(KeyTrail)
    def _on_key_trail(self, message: KeyTrail) -> None:
        self.key_gate.trail_arrived(message)

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual's ``switch_mode`` holds repaints here; a pane made before ends the hold early."""
        self.pane_switch_mask.delay_update(delay)

    def switch_mode(self, mode: str) -> AwaitMount:
        made = self.pane_switch_mask.switch_begins(mode)
        awaited = super().switch_mode(mode)
        self.pane_switch_mask.switch_ended(made)
        return awaited

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.replay_controls.allows(action)

    def action_command(self) -> None:
        self.command_mode.open_command()

    def action_filter(self) -> None:
        self.command_mode.open_filter()

    def action_replay_toggle(self) -> None:
        self.replay_controls.toggle()

    def action_replay_step(self, direction: int) -> None:
        self.replay_controls.step(direction)

    def action_replay_speed(self, direction: int) -> None:
        self.replay_controls.change_speed(direction)

    @on(CommandLineSubmitted)
    async def _on_command(self, message: CommandLineSubmitted) -> None:
        await self.command_mode.submitted(message)

    @on(MutationPreviewed)
    def _on_previewed(self, message: MutationPreviewed) -> None:
        self.mutation_flow.previewed(message)

    @on(MutationApplied)
    def _on_applied(self, message: MutationApplied) -> None:
        self.mutation_flow.applied(message)

    # -- what the panes ask of the app (screens/host.py), handed to its components ---------------

    @property
    def key_hold_until(self) -> float:
        return self.key_activity.key_hold_until

    @key_hold_until.setter
    def key_hold_until(self, until: float) -> None:
        self.key_activity.key_hold_until = until

    @property
    def first_rows_awaited_by(self) -> object | None:
        return self.key_activity.first_rows_awaited_by

    @first_rows_awaited_by.setter
    def first_rows_awaited_by(self, pane: object | None) -> None:
        self.key_activity.first_rows_awaited_by = pane

    @property
    def first_rows_awaited(self) -> bool:
        return self.key_activity.first_rows_awaited

    def hold_background(self, seconds: float = KEY_HOLDS_BACKGROUND_S) -> None:
        self.key_activity.hold_background(seconds)

    def replay_status(self) -> ReplayStatus | None:
        return self.replay_controls.status()

    def request_mutation(self, mutation: Mutation) -> None:
        self.mutation_flow.request(mutation)

    def block_mutation(self, verb: str, target: str) -> None:
        self.mutation_flow.block(verb, target)

    def open_multikueue_flow(self, flow: str, args: list[str]) -> None:
        self.command_mode.open_multikueue_flow(flow, args)

    def multikueue_environment(self, plan_path: str | None = None):
        from tau_tui.settings.settings_file import config_dir
        from tau_tui.startup.multikueue_env import environment_for

        if self._multikueue_env is not None and plan_path is None:
            return self._multikueue_env
        return environment_for(self.backend, plan_path or self.settings.multikueue_plan, config_dir())

    # -- start-up --------------------------------------------------------------

    def on_mount(self) -> None:
        self.pane_preparation.use_prepared_panes()
        self._register_themes()
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._sync_palette())
        self._sync_palette()
        self.switch_mode(self.start_pane)
        self.pane_preparation.import_pane_modules_soon()
        self.set_interval(self.settings.refresh_tick, self.refresh_tick, name="refresh-tick")
        self.set_interval(CHANGE_POLL_S, self._redraw_what_moved, name="change-poll")
        for problem in self.problems:
            self.notify(problem, title="config", severity="warning", timeout=10)
        if self.backend is not None:
            self._backend_started(self.backend)
        elif self.replay_file:
            self.connection_label = "loading recording"
            self._load_replay(self.replay_file)
        elif self.demo:
            self.connection_label = "loading demo"
            self._load_demo(self.demo)
        else:
            self._connect(self.context_name, self.namespace_name)

    def _register_themes(self) -> None:
        files, problems = load_theme_files()
        for item in problems:
            self.notify(item, title="theme", severity="warning", timeout=10)
        for theme_file in files:
            fields = dict(theme_file.fields)
            try:
                self.register_theme(Theme(**fields))
            except Exception as err:  # a bad colour string
                self.notify(f"theme {theme_file.path}: {err}; skipped", severity="warning")
        wanted = self.requested_theme or self.settings.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            fallback = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
            if wanted:
                self.notify(f"theme {wanted!r} not found; using {fallback}. Known: {', '.join(sorted(self.tau_theme_names()))}",
                            severity="warning", timeout=10)
            self.theme = fallback

    def tau_theme_names(self) -> list[str]:
        return [name for name in self.available_themes if name.startswith("tau-")] or list(self.available_themes)

    def _sync_palette(self) -> None:
        theme = self.current_theme
        status_text.set_palette(
            theme.success or "green", theme.warning or "yellow", theme.error or "red", theme.accent or "cyan",
            "dim",
        )
        for screen in self.screen_stack:
            for widget in screen.query("*"):
                widget.refresh()

    @work(description="_load_demo", thread=True, exclusive=True, exit_on_error=False, group="backend")
    def _load_demo(self, scenario: str) -> None:
        try:
            backend = start_demo_backend(scenario, self.namespace_name, self.demo_realtime)
        except BackendUnavailable as err:
            self.post_message(BackendFailed(err.message, offer_demo=err.offer_demo))
            return
        self.post_message(BackendReady(backend, f"demo scenario {scenario!r} (simulated cluster)"))

    @work(description="_load_replay", thread=True, exclusive=True, exit_on_error=False, group="backend")
    def _load_replay(self, path: str) -> None:
        try:
            backend = start_replay_backend(path)
        except BackendUnavailable as err:
            self.post_message(BackendFailed(err.message, offer_demo=err.offer_demo))
            return
        self.post_message(BackendReady(backend, f"replay of {path}"))

    @work(description="_connect", thread=True, exclusive=True, exit_on_error=False, group="backend")
    def _connect(self, context: str | None, namespace: str | None) -> None:
        try:
            backend = connect_kubeconfig_backend(
                context, namespace, self.request_timeouts or self.settings.timeouts(), self.all_namespaces
            )
        except BackendUnavailable as err:
            self.post_message(BackendFailed(err.message, err.offer_demo, err.title, err.label))
            return
        self.post_message(BackendReady(backend))

    @on(BackendReady)
    def _on_backend_ready(self, message: BackendReady) -> None:
        old = self.backend
        self.backend = message.backend
        self.backend_note = message.note
        if old is not None and old is not message.backend:
            self._close_backend(old)
        if isinstance(self.screen, NoClusterScreen):
            self.pop_screen()
        self._backend_started(message.backend)

    def _backend_started(self, backend: ClusterBackend) -> None:
        self.run_statuses = RunStatusMemo()  # another cluster's runs
        self.node_health = NodeHealthMemo()
        simulated = is_simulated(backend)
        if self._own_audit:
            self.audit = demo_audit_log() if simulated else AuditLog()
        if self._own_evidence and simulated != self.evidence.is_demo:
            self.evidence = EvidenceStore.demo() if simulated else EvidenceStore()
        if isinstance(backend, ReplayBackend):
            self.readonly = True
            self.readonly_reason = f"a replay of {backend.reader.path.name} is read-only"
        else:  # a replay has no new runs to keep evidence of; read-only writes no evidence store
            if not self.readonly:
                self._start_recorder(backend)
            if self.record_file:
                self._start_session_recorder(backend, self.record_file)
        self._settle_heap(backend)
        self.found_versions.read(backend)  # for the ? help
        self.connection_label = backend.connection_state().label
        if self.namespace_name and backend.namespace != self.namespace_name:
            self.command_mode.set_namespace(self.namespace_name)
        self.refresh_tick()

    @work(description="_settle_heap", thread=True, exclusive=True, exit_on_error=False, group="heap")
    def _settle_heap(self, backend: ClusterBackend) -> None:
        """Once the first sync is done, take the cache out of the garbage collector's walks.
        Waits in slices: a quit cancels the worker, and the wait ends within one."""
        worker = get_current_worker()
        deadline = time.monotonic() + FIRST_SYNC_WAIT_S
        while not worker.is_cancelled and time.monotonic() < deadline:
            slice_started = time.monotonic()
            if backend.wait_synced(timeout=SYNC_WAIT_SLICE_S):
                settle_heap(collect=False)  # a walk of the whole new cache would stall the keys
                self.call_from_thread(self.pane_preparation.prepare_panes, backend)
                self.call_from_thread(self.heap_upkeep.start)
                return
            # a backend that answers at once (the simulator before it starts) must not spin the loop
            time.sleep(max(0.0, SYNC_WAIT_SLICE_S - (time.monotonic() - slice_started)))

    @work(description="_start_recorder", thread=True, exclusive=True, exit_on_error=False, group="evidence-recorder")
    def _start_recorder(self, backend: ClusterBackend) -> None:
        from tau_tui.core.operations.evidence.recorder import EvidenceRecorder

        old, self.evidence_recorder = self.evidence_recorder, None
        if old is not None:
            old.close()
        try:
            self.evidence_recorder = EvidenceRecorder(backend, self.evidence, self.now, statuses=self.run_statuses,
                                                      node_health=self.node_health,
                                                      # keys, and a pane's first read: the statuses either works
                                                      # out are the other's (one memo)
                                                      foreground_busy_until=self.key_activity.person_waits_until).start()
        except Exception as err:  # evidence is a record, not the app: say so and go on
            self.call_from_thread(self.notify, f"evidence recorder not started: {err}", severity="warning")

    @work(description="_start_session_recorder", thread=True, exclusive=True, exit_on_error=False, group="session-recorder")
    def _start_session_recorder(self, backend: ClusterBackend, path: str) -> None:
        """``--record FILE``: the first backend is recorded until quit (a later one is not)."""
        from tau_tui.core.operations.recording.writer import SessionRecorder

        if self.session_recorder is not None:
            self.call_from_thread(self.notify, f"recording into {path} stopped: the cluster changed", severity="warning")
            self.session_recorder.close()
            return
        if not isinstance(backend, BaseBackend):
            self.call_from_thread(self.notify, "this backend cannot be recorded", severity="warning")
            return
        try:  # the source names the backend class: SimulatedBackend or KubernetesBackend
            self.session_recorder = SessionRecorder(backend, path, source=type(backend).__name__).start()
        except RecordingError as err:
            self.call_from_thread(self.notify, err.message, title="record", severity="error", timeout=10)
            return
        self.call_from_thread(self.notify, f"recording into {path}", title="record")

    @on(BackendFailed)
    def _on_backend_failed(self, message: BackendFailed) -> None:
        self.connection_label = message.label
        self.push_screen(NoClusterScreen(message.message, offer_demo=message.offer_demo, title=message.title))

    def action_open_demo(self) -> None:
        self.demo = self.demo or "demo"
        self.connection_label = "loading demo"
        if isinstance(self.screen, NoClusterScreen):
            self.screen.set_loading()
        self._load_demo("demo")

    @work(description="_close_backend", thread=True, exit_on_error=False, group="backend-close")
    def _close_backend(self, backend: ClusterBackend) -> None:
        backend.close()

    async def action_quit(self) -> None:  # ctrl+q, ctrl+c, :q, the palette: unsaved work asks first
        self.unsaved_guard.then("quit tau-tui", self.quitting.quit)

    def register_unsaved_work(self, holder: UnsavedWork) -> None:
        self.unsaved_guard.register(holder)

    def on_unmount(self) -> None:  # however the app ends, a crash too: unsaved work is kept as a draft
        self.unsaved_guard.app_ended(self.return_code)

    def quit_on_signal(self, signum: int) -> None:
        """SIGINT, SIGTERM, SIGHUP (on the event loop; see startup/app_loop.py): quit as ctrl+q does."""
        self.quitting.signalled(signum)

    # -- the tick ----------------------------------------------------------------

    def refresh_tick(self) -> None:
        """Every ``refresh_tick`` seconds, and after a change: the pane on screen reads again."""
        backend = self.backend
        if backend is not None:
            try:
                label = backend.connection_state().label
                if label == "connected" and self.connection_label != "connected":
                    self.found_versions.read(backend)  # connected again: the server may have been upgraded
                self.connection_label = label
                self.scope_notice.check(backend)  # once: lists across every namespace forbidden
            except Exception as err:
                self.connection_label = f"unknown ({type(err).__name__})"
        if not self.screen_stack:  # shutting down: the timer can fire once more
            return
        screen = self.screen
        if isinstance(screen, PaneScreen):
            screen.update_header()
            screen.tick()
        elif hasattr(screen, "tick"):
            screen.tick()  # drill-down screens

    def _redraw_what_moved(self) -> None:
        """Between ticks: the shown pane reads again as soon as a kind it reads moved."""
        if self.screen_stack and isinstance(self.screen, PaneScreen):
            self.screen.tick_if_moved()

    def header_state(self, pane: str, crumbs: str, filter_text: str) -> HeaderState:
        backend = self.backend
        context = "-"
        namespace = "all"
        if backend is not None:
            try:
                context = backend.current_context or "-"
                namespace = backend.namespace or "all"
            except Exception:
                pass
        elif self.context_name:
            context = self.context_name
        return HeaderState(context, namespace, self.connection_label, self.readonly, pane, crumbs, filter_text,
                           recording=self.readonly and self.record_file is not None)

    def now(self) -> datetime:
        """Cluster time: the backend's clock (frozen in tests), else the wall clock."""
        backend = self.backend
        clock = getattr(backend, "_now", None)
        if callable(clock):
            try:
                return clock()
            except Exception:
                pass
        return datetime.now(UTC)

    # -- navigation ----------------------------------------------------------------

    def action_switch_pane(self, mode: str) -> None:
        if mode == self.current_mode:
            return
        self.pane_history.append(self.current_mode)
        del self.pane_history[:-20]
        self.switch_mode(mode)

    async def action_back(self) -> None:
        screen = self.screen
        command_line = screen.query(CommandLine)
        if command_line and command_line.first().has_class("-open"):
            command_line.first().action_close()
            return
        if len(self.screen_stack) > 1:
            self.pop_screen()
            return
        if isinstance(screen, PaneScreen) and screen.action_back():
            return
        if self.pane_history:
            self.switch_mode(self.pane_history.pop())

    async def open_logs_for_run(self, ref: str, container_all: bool = False, pod: str | None = None) -> None:
        """``:logs RUN`` / ``l``: RUN is ``name`` or ``namespace/name`` of a Job or RayJob.
        With ``pod`` (a pod of RUN's namespace), that pod's log only, not the merged run log."""
        self.pending_logs = (ref, container_all, pod)
        if self.current_mode != "logs":
            self.pane_history.append(self.current_mode)
            await self.switch_mode("logs")
        from tau_tui.screens.logs import LogsScreen  # loaded by now: the Logs pane is open

        screen = self.screen
        if isinstance(screen, LogsScreen):
            screen.open_run(ref, all_containers=container_all, pod=pod)
            self.pending_logs = None

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, (HelpDialog,)):
            return
        focused = self.focused
        about = getattr(focused, "HELP", "") if focused is not None else ""
        if isinstance(screen, PaneScreen):
            about = (screen.HELP + ("\n\nFocused: " + about if about and about != screen.HELP else "")).strip()
            title = screen.PANE_TITLE
            keys = screen.help_keys()
            if self.replay_controls.replay is not None:
                keys = [*keys, *REPLAY_HELP_KEYS]
        else:
            title = getattr(screen, "PANE_TITLE", "tau-tui")
            about = getattr(screen, "HELP", about)
            keys = [(self.get_key_display(b), b.description) for b in getattr(screen, "BINDINGS", []) if isinstance(b, Binding)]
        backend = self.backend
        versions: str | Callable[[], str] | None = self.found_versions.line_for(backend)
        if versions is None:  # not read yet (or another context since): the dialog reads it
            from tau_tui.core.operations.found_versions import found_versions_line

            versions = lambda: found_versions_line(backend)  # noqa: E731
        self.push_screen(HelpDialog(title, about or "tau-tui", keys, slash=getattr(screen, "SLASH_HELP", None),
                                    versions=versions))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("Change theme", "tau-dark, tau-light, tau-high-contrast", self.action_change_theme)
        yield SystemCommand("Quit", "quit tau-tui (ctrl+q)", self.action_quit)
