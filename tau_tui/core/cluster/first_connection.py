"""The connection before it ever succeeded: there is no data yet, so nothing is "stale since" a time.
It reads "connecting" until the server answers, and "cannot connect: <reason>" when it failed;
once anything was read, a failure reads "reconnecting (stale since T)" as before."""

from __future__ import annotations

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus

_FAILING = (ConnectionStatus.RECONNECTING, ConnectionStatus.STALE)


def never_connected(state: ConnectionState) -> bool:
    """Nothing was read yet under ``state`` (a failing state whose data is stale since no moment)."""
    return state.status in _FAILING and state.stale_since is None


def as_first_connection(previous: ConnectionState, state: ConnectionState) -> ConnectionState:
    """``state`` as it follows ``previous``: a failure before any success is a failed first
    connection (STALE with no ``stale_since``: "cannot connect"), not an outage of data."""
    if state.status in _FAILING and state.stale_since is not None and never_connected(previous):
        return ConnectionState(ConnectionStatus.STALE, state.context, None, state.message)
    return state


def answered(previous: ConnectionState) -> ConnectionState | None:
    """The state once the server sent a first page, when it read "connecting" (None: unchanged)."""
    if never_connected(previous):
        return ConnectionState(ConnectionStatus.CONNECTED, previous.context, None, "")
    return None

