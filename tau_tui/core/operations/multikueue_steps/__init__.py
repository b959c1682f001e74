"""MultiKueue for platform owners: one step engine (``engine.py``) with three
flows — setup (``setup.py``; also what re-enables after a drain), drain
(``drain.py``: the seed's "Drain and rollback" 1-5) and credential rotation
(``rotate.py``) — driven by the app's wizard screen and by ``tau-tui
multikueue`` alike.  Every step's verification builds its check with
``checks.py``.  Exercise records: ``records.py``."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.multikueue_steps.access import AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.engine import Exercise, Flow, Outcome, StepContext
from tau_tui.core.operations.multikueue_steps.records import Recorder, RecordJournal

FLOW_NAMES = ("setup", "drain", "rotate")
#: The name that used to mean "set up again", the opposite of the seed's "Drain and rollback".
REMOVED_FLOW = "rollback"


def removed_flow_message(drain: str, setup: str) -> str:
    """Why ``rollback`` is refused, naming the commands of the face that was asked (CLI or app)."""
    return (f"`{REMOVED_FLOW}` is gone: the seed's 'Drain and rollback' is `{drain}`; "
            f"to re-enable after a drain run `{setup}`")


def flow_for(name: str) -> Flow:
    from tau_tui.core.operations.multikueue_steps.drain import drain_flow
    from tau_tui.core.operations.multikueue_steps.rotate import rotate_flow
    from tau_tui.core.operations.multikueue_steps.setup import setup_flow

    if name == REMOVED_FLOW:
        raise ValueError(removed_flow_message("drain", "setup"))
    if name == "setup":
        return setup_flow()
    if name == "drain":
        return drain_flow()
    if name == "rotate":
        return rotate_flow()
    raise ValueError(f"unknown flow {name!r}; one of {', '.join(FLOW_NAMES)}")


def open_exercise(flow_name: str, backend: Any, connector: Any, plan: Any, *, wait: Callable[[float], None],
                  inputs: dict[str, Any] | None = None, vault: Any = None, record: bool = True,
                  records_dir: Path | None = None, clock: Callable[[], datetime] | None = None, poll_seconds: float = 2.0,
                  now: Callable[[], float] = time.monotonic) -> Exercise:
    """The exercise for ``flow_name`` on the manager behind ``backend``, with its record opened (or resumed).
    ``now`` is the clock ``wait`` moves, in seconds (the simulation passes its world's clock): timeouts are
    deadlines on it."""
    cluster = backend.current_context or "cluster"
    manager = BackendAccess(backend, f"manager {cluster}")
    ctx = StepContext(manager, connector, plan, wait, now, inputs=dict(inputs or {}), keyring=vault)
    recorder = None
    unidentified = ""
    if record:
        try:
            identity = manager.whoami()
        except AccessError as exc:  # the record says who could not be identified, and why; nothing is applied
            identity, unidentified = f"unknown ({exc.message})", exc.message
        recorder = Recorder(flow_name, cluster, identity, directory=records_dir, clock=clock, plan=plan.source)
    ctx.journal = recorder or RecordJournal.latest(flow_name, cluster, records_dir)
    exercise = Exercise(flow_for(flow_name), ctx, recorder, poll_seconds=poll_seconds)
    if unidentified:
        exercise.unidentified = (f"the manager could not say who you are (SelfSubjectReview: {unidentified}); an "
                                 "exercise record must name who ran it, so nothing is applied")
    return exercise


__all__ = ["Exercise", "Flow", "Outcome", "StepContext", "FLOW_NAMES", "REMOVED_FLOW", "flow_for", "open_exercise",
           "removed_flow_message"]
