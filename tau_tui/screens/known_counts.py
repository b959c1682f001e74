"""A total read from the cache is only a total once the list behind it has ended: before that it
reads "…" (not yet known), and "?" where the kind cannot be read at all, never a zero."""

from __future__ import annotations

from tau_tui.core.cluster.changes import ViewState, ViewStatus

STILL_LISTING = "…"
UNREADABLE = "?"


def count_text(count: int, *states: ViewState | None) -> str:
    """``count`` as known from the views of ``states`` (a kind not installed holds nothing: known)."""
    statuses = {state.status for state in states if state is not None}
    if ViewStatus.SYNCING in statuses:
        return STILL_LISTING
    if ViewStatus.FORBIDDEN in statuses:
        return UNREADABLE
    return str(count)


def counts_known(*states: ViewState | None) -> bool:
    """Whether every list behind a total has ended and could be read."""
    return not any(state is not None and state.status in (ViewStatus.SYNCING, ViewStatus.FORBIDDEN) for state in states)
