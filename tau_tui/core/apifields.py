"""Fields every Kubernetes object shares, read as the API serves them: ``metav1.Condition`` lists
and RFC 3339 times.

Both the run config (the TauCluster's profile conditions) and the cluster views read them, so
they sit below both packages."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Condition:
    """A standard ``metav1.Condition`` (or Node/Job condition)."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None
    observed_generation: int | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def parse_time(value: Any) -> datetime | None:
    """RFC 3339 (seconds or nanoseconds, trailing Z) to an aware datetime."""
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return _parse_time_text(str(value))


@functools.lru_cache(maxsize=65536)
def _parse_time_text(text: str) -> datetime | None:
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:  # trim nanoseconds to microseconds for fromisoformat
        head, rest = text.split(".", 1)
        digits = ""
        i = 0
        while i < len(rest) and rest[i].isdigit():
            digits += rest[i]
            i += 1
        text = f"{head}.{(digits + '000000')[:6]}{rest[i:]}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def parse_conditions(raw: Any) -> tuple[Condition, ...]:
    """A ``conditions`` list as served; malformed entries are skipped."""
    out = []
    for c in raw or ():
        if not isinstance(c, Mapping):
            continue
        out.append(
            Condition(
                type=str(c.get("type", "")),
                status=str(c.get("status", "Unknown")),
                reason=str(c.get("reason") or ""),
                message=str(c.get("message") or ""),
                last_transition_time=parse_time(c.get("lastTransitionTime") or c.get("lastProbeTime")),
                observed_generation=c.get("observedGeneration"),
            )
        )
    return tuple(out)
