"""Small text formatters the panes share (ages, durations, deltas)."""

from __future__ import annotations

from datetime import datetime

#: Texts that many cells show alike (ages, deltas, reasons), one copy each: a table of 100,000 rows
#: would otherwise hold a string per row.  Started over when full; a dropped text is shared again.
_SHARED: dict[str, str] = {}
_SHARED_KEPT = 65536


def shared(text: str) -> str:
    """``text``, or the equal string handed out before (any thread: one dict operation)."""
    kept = _SHARED.get(text)
    if kept is not None:
        return kept
    if len(_SHARED) >= _SHARED_KEPT:
        _SHARED.clear()
    return _SHARED.setdefault(text, text)


def age(seconds: float | None) -> str:
    """``45s``, ``12m``, ``3h5m``, ``2d4h`` (kubectl-like); ``—`` when unknown."""
    if seconds is None:
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return shared(f"{seconds}s")
    minutes, _ = divmod(seconds, 60)
    if minutes < 60:
        return shared(f"{minutes}m")
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return shared(f"{hours}h{minutes}m" if minutes else f"{hours}h")
    days, hours = divmod(hours, 24)
    return shared(f"{days}d{hours}h" if hours else f"{days}d")


def age_changes_at(since: datetime, now: datetime) -> float:
    """When (a timestamp) the age from ``since`` reads otherwise than it does ``now`` (see ``age``)."""
    seconds = max(0, int((now - since).total_seconds()))
    step = 1 if seconds < 60 else 60 if seconds < 86_400 else 3_600
    return since.timestamp() + (seconds // step + 1) * step


def since(moment: datetime | None, now: datetime) -> str:
    return "—" if moment is None else age((now - moment).total_seconds())


def delta(change: int | None) -> str:
    """Queue position change: ``↑2`` moved forward, ``↓1`` back, ``=`` unchanged."""
    if change is None:
        return ""
    if change < 0:
        return shared(f"↑{-change}")
    if change > 0:
        return shared(f"↓{change}")
    return "="


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return shared(flat if len(flat) <= limit else flat[: limit - 1] + "…")
