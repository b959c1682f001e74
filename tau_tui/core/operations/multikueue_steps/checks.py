"""Building a step's :class:`~tau_tui.core.operations.multikueue_steps.engine.Check` from what its
verification found, and reading the conditions it checks. Every MultiKueue step (setup, drain,
rotate, revocation) builds its checks here, so "verified" means the same everywhere: no problem,
the reason is the problems joined, the evidence is every line seen."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tau_tui.core.operations.multikueue_steps.engine import Check


def check_from(problems: Sequence[str], evidence: Iterable[str] = (), action: str = "") -> Check:
    """Verified when there is no problem; otherwise the problems, joined, are the reason."""
    return Check(not problems, "; ".join(problems), tuple(evidence), action=action)


def verified(evidence: Iterable[str]) -> Check:
    return Check(True, "", tuple(evidence))


def refuted(reason: str, evidence: Iterable[str] = (), action: str = "") -> Check:
    return Check(False, reason, tuple(evidence), action=action)


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    """The first status condition of ``type_`` of a raw object (None: not reported yet)."""
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


def describe_condition(c: dict[str, Any] | None) -> str:
    if c is None:
        return "no condition yet"
    return f"{c.get('type')}={c.get('status')} ({c.get('reason') or '-'}: {c.get('message') or '-'})"
