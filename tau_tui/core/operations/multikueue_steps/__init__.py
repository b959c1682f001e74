"""MultiKueue for platform owners: one step engine (``engine.py``) with three
flows — setup (``setup.py``; rollback is setup again), drain (``drain.py``)
and credential rotation (``rotate.py``) — driven by the app's wizard screen
and by ``tau-tui multikueue`` alike.  Exercise records: ``records.py``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.multikueue_steps.access import BackendAccess
from tau_tui.core.operations.multikueue_steps.engine import Exercise, Flow, Outcome, StepContext
from tau_tui.core.operations.multikueue_steps.records import Recorder

FLOW_NAMES = ("setup", "drain", "rollback", "rotate")


def flow_for(name: str) -> Flow:
    from tau_tui.core.operations.multikueue_steps.drain import drain_flow
    from tau_tui.core.operations.multikueue_steps.rotate import rotate_flow
    from tau_tui.core.operations.multikueue_steps.setup import setup_flow

    if name in ("setup", "rollback"):
        flow = setup_flow()
        if name == "rollback":
            flow.name, flow.title = "rollback", "MultiKueue rollback (setup again from the first step that no longer verifies)"
        return flow
    if name == "drain":
        return drain_flow()
    if name == "rotate":
        return rotate_flow()
    raise ValueError(f"unknown flow {name!r}; one of {', '.join(FLOW_NAMES)}")


def open_exercise(flow_name: str, backend: Any, connector: Any, plan: Any, *, wait: Callable[[float], None],
                  inputs: dict[str, Any] | None = None, vault: Any = None, record: bool = True,
                  records_dir: Path | None = None, clock: Callable[[], datetime] | None = None, poll_seconds: float = 2.0) -> Exercise:
    """The exercise for ``flow_name`` on the manager behind ``backend``, with its record opened (or resumed)."""
    cluster = backend.current_context or "cluster"
    manager = BackendAccess(backend, f"manager {cluster}")
    ctx = StepContext(manager, connector, plan, wait, inputs=dict(inputs or {}), keyring=vault)
    recorder = None
    if record:
        try:
            identity = manager.whoami()
        except Exception as exc:  # the record says who could not be identified, and why
            identity = f"unknown ({getattr(exc, 'message', exc)})"
        recorder = Recorder(flow_name, cluster, identity, directory=records_dir, clock=clock, plan=plan.source)
    return Exercise(flow_for(flow_name), ctx, recorder, poll_seconds=poll_seconds)


__all__ = ["Exercise", "Flow", "Outcome", "StepContext", "FLOW_NAMES", "flow_for", "open_exercise"]
