"""What the app's process and the simulated cluster's process say to each other over their Unix
socket (``multiprocessing.connection``, with an authentication key only the two of them know).

Each connection opens with its role: WATCH (a session: a backend's identity and scope; the server
answers with the session's number, then streams its cache writes), CALL (requests of one app thread,
each answered in turn), LOG (one container log stream) or CONTROL (one-way notes: keys pressed).
Errors cross as plain tuples, so the app raises the same ApiFailure or ClusterError the simulated
backend raised, with its code and message."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import ClusterError

WATCH, CALL, LOG, CONTROL = "watch", "call", "log", "control"

#: Backend methods a session may call (the primitives below BaseBackend and the context/scope
#: calls); properties are read, not called.
SESSION_CALLS = frozenset({
    "_api_get", "_api_list", "_api_create", "_api_delete", "_api_patch", "_api_evict", "_server_version",
    "_visibility_get", "who_am_i", "contexts", "current_context", "namespace", "use_context", "use_namespace",
    "close",
})
#: Of those, the ones that write: the caller waits until their effect is in its cache.
SESSION_WRITES = frozenset({"_api_create", "_api_delete", "_api_patch", "_api_evict", "use_context", "use_namespace"})

#: What a test may do to the simulated world itself, as a cluster admin would (never the app).
WORLD_CALLS = frozenset({
    "advance", "tick", "now", "break_log_streams", "api_outage", "api_restore",
    "store.put", "store.read", "store.grant", "store.api_create", "store.api_patch", "store.api_delete",
})


def encode_error(err: BaseException) -> tuple[Any, ...]:
    if isinstance(err, ApiFailure):
        return ("ApiFailure", err.code, err.reason, err.message, err.body)
    if isinstance(err, ClusterError):
        return ("ClusterError", err.message, err.code)
    if isinstance(err, ConnectionResetError):
        return ("ConnectionResetError", str(err))
    return ("Exception", type(err).__name__, str(err))


def decode_error(encoded: tuple[Any, ...]) -> Exception:
    kind = encoded[0]
    if kind == "ApiFailure":
        return ApiFailure(encoded[1], encoded[2], encoded[3], encoded[4])
    if kind == "ClusterError":
        return ClusterError(encoded[1], code=encoded[2])
    if kind == "ConnectionResetError":
        return ConnectionResetError(encoded[1])
    return ClusterError(f"the simulated cluster failed: {encoded[1]}: {encoded[2]}")
