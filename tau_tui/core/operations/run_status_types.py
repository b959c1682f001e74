"""What the run status engine says about a run: its phases, lifecycle state, diagnostics and
next actions (taugrid.md §8.1-§8.3). Plain data; :mod:`tau_tui.core.operations.runstatus` computes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tau_tui.core.operations.gpufaults import GpuHit

PhaseStatus = Literal["pending", "active", "done", "warning", "skipped"]
#: taugrid.md §8.2's states, plus ``releasing``: the Job or RayJob is deleted (cancelled) and its
#: pods still hold their nodes' GPUs until their grace period ends; and ``cancelled``: the caller
#: cancelled it and every pod is gone.
LifecycleState = Literal["not_found", "queued", "starting", "running", "succeeded", "failed", "releasing", "cancelled"]

PHASE_ORDER = (
    "Submitted",
    "Kueue admission",
    "MultiKueue placement",
    "RayCluster",
    "Pod scheduling",
    "DRA allocation",
    "Image pull",
    "Init containers",
    "Container start",
    "Ready",
    "RayJob",
    "Compute release",
)

#: Symbol and word for every phase status: status is never shown by colour alone.
STATUS_SYMBOLS: dict[str, str] = {"pending": "○", "active": "◐", "done": "✓", "warning": "⚠", "skipped": "–"}

@dataclass(frozen=True)
class Phase:
    name: str
    status: PhaseStatus
    detail: str = ""
    hint: str = ""
    started_at: datetime | None = None

    @property
    def symbol(self) -> str:
        return STATUS_SYMBOLS[self.status]


@dataclass(frozen=True)
class RunDiagnostic:
    #: RUN_NOT_FOUND, RUN_FAILED, ADMISSION_REJECTED, KUEUE_PENDING, MULTIKUEUE_RETRY,
    #: STARTUP_<PHASE>, STARTUP_FAILED, OOM_KILLED, GPU_FAULT
    code: str
    severity: Literal["info", "warning", "error"]
    message: str
    suggestion: str = ""
    #: Commands that help, each an argv (shown, never run by the engine).
    commands: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class RunAction:
    name: str  # list, watch, logs, diagnostics, results, cancel, retry, resume
    description: str
    key: str = ""
    #: The headless equivalent as an argv ("tau-tui status …", "kubectl logs …").
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunStatus:
    namespace: str
    name: str
    kind: Literal["Job", "RayJob", "unknown"]
    state: LifecycleState
    display_state: str
    phases: tuple[Phase, ...]
    diagnostics: tuple[RunDiagnostic, ...] = ()
    actions: tuple[RunAction, ...] = ()
    startup_complete: bool = False
    startup_failed: bool = False
    queue: str | None = None
    cluster: str | None = None
    multikueue: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: The pods of this run a GPU fault hit (node, GPUs, reason): the run is marked with them.
    gpu_hits: tuple[GpuHit, ...] = ()

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)


STATE_SYMBOLS: dict[str, str] = {
    "not_found": "?",
    "queued": "◷",
    "starting": "◐",
    "running": "▶",
    "succeeded": "✓",
    "failed": "✗",
    "releasing": "◑",
    "cancelled": "■",
}
