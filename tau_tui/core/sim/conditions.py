"""Status conditions on API-shaped dicts, the way controllers write them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.convert import format_time


def cond(type_: str, status: str, reason: str, message: str, now: datetime, generation: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": format_time(now)}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def set_condition(obj: dict[str, Any], new: dict[str, Any]) -> None:
    """Upsert a condition; keeps lastTransitionTime when the status is unchanged."""
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == new["type"]:
            if c.get("status") == new["status"]:
                new = dict(new, lastTransitionTime=c.get("lastTransitionTime", new["lastTransitionTime"]))
            conds[i] = new
            return
    conds.append(new)


def get_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    for c in conditions:
        if c.get("type") == type_:
            return c
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    c = get_condition(obj, type_)
    return c is not None and c.get("status") == "True"


