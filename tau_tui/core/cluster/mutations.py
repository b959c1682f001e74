"""Outcomes of mutations (submit, cancel, stop policies, cordon, drain, MultiKueue objects)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StopPolicy = Literal["None", "Hold", "HoldAndDrain"]


@dataclass(frozen=True, slots=True)
class MutationResult:
    """Outcome of one object mutation.  ``message`` is the plain, user-facing
    text (from :func:`tau_tui.core.cluster.errors.describe_api_error` on
    failure).  ``existing`` is True when an idempotent submit found the object
    already there (same submission id)."""

    ok: bool
    verb: str
    kind: str
    name: str
    namespace: str | None
    message: str = ""
    dry_run: bool = False
    existing: bool = False
    code: int | None = None
    object: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class DrainResult:
    node: str
    cordoned: bool
    evicted: tuple[str, ...]  # "ns/name"
    skipped: tuple[str, ...]  # DaemonSet / mirror / finished pods
    failed: tuple[MutationResult, ...]  # e.g. blocked by a PodDisruptionBudget (429)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.cordoned and not self.failed
