"""The recording file format (``tau-tui --record FILE``), version 1.

A recording is a series of gzip members (concatenated, so ``zcat FILE`` prints it all), each a
run of JSON lines:

* the first line of the file is the header: ``{"format": "tau-tui-recording", "version": 1, ...}``
  (source, context, contexts, namespace scope, identity, start time);
* every member starts with a **keyframe**: the whole cache (raw objects per kind, view states,
  connection state, GPU allocation of bound pods), the last visibility answer per queue and the
  position histories (the queue pane's Δ column), so
  a seek decompresses one member, never the file from its start;
* then the writes the backend made to its cache, in order: ``replace`` (a full list), ``apply``
  (a watch event), ``clear``, ``state``, ``connection``, ``pods`` / ``pod`` (GPU allocation of
  bound pods) and ``visibility`` (a queue-position answer, which is not in the cache);
* and, when the recorder was closed (not killed), ``end``.

Every record line starts with ``{"t":SECONDS,`` (UNIX seconds, the backend's clock: the
simulated one for ``--demo``), so the reader can index a file without parsing it.  Secrets
never reach the file: objects are redacted before they are written (``writer.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewState, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.positions import PositionSample, PositionSource

#: Per-workload position histories, as :meth:`PositionTracker.export` gives them.
Histories = dict[tuple[str, str], tuple[list[PositionSample], datetime | None]]

FORMAT = "tau-tui-recording"
VERSION = 1

# Record operations.
KEYFRAME = "keyframe"
REPLACE = "replace"
APPLY = "apply"
CLEAR = "clear"
STATE = "state"
CONNECTION = "connection"
PODS = "pods"
POD = "pod"
VISIBILITY = "visibility"
SCOPE = "scope"
#: The recording stopped here (absent when the app was killed): a session's end, not its last change.
END = "end"


class RecordingError(Exception):
    """A recording that cannot be read or written; ``message`` names the file and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def seconds(when: datetime) -> float:
    return round(when.timestamp(), 6)


def instant(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def kind_named(name: str) -> ResourceKind | None:
    return ResourceKind.__members__.get(name)


def encode_connection(state: ConnectionState) -> dict[str, Any]:
    return {"status": state.status.value, "context": state.context,
            "stale_since": seconds(state.stale_since) if state.stale_since else None, "message": state.message}


def decode_connection(data: Mapping[str, Any]) -> ConnectionState:
    since = data.get("stale_since")
    return ConnectionState(ConnectionStatus(data["status"]), data.get("context"),
                           instant(since) if since is not None else None, data.get("message") or "")


def encode_state(state: ViewState) -> list[Any]:
    return [state.status.value, state.message]


def decode_status(value: str) -> ViewStatus:
    return ViewStatus(value)


def encode_key(key: tuple[str, str]) -> str:
    """A cache key (namespace, name) as one JSON object key."""
    return f"{key[0]}/{key[1]}"


def decode_key(text: str) -> tuple[str, str]:
    namespace, _, name = text.partition("/")
    return namespace, name


def encode_histories(histories: Histories) -> dict[str, Any]:
    return {encode_key(key): {"samples": [[seconds(s.at), s.position_in_local_queue, s.position_in_cluster_queue, s.source.value]
                                          for s in samples],
                              "since": seconds(since) if since else None}
            for key, (samples, since) in histories.items()}


def decode_histories(data: dict[str, Any]) -> Histories:
    return {decode_key(key): ([PositionSample(instant(at), lq, cq, PositionSource(source)) for at, lq, cq, source in item["samples"]],
                              instant(item["since"]) if item.get("since") is not None else None)
            for key, item in data.items()}


def encode_allocation(allocation: tuple[str, dict[str, float]] | None) -> list[Any] | None:
    return None if allocation is None else [allocation[0], allocation[1]]


def decode_allocation(value: list[Any] | None) -> tuple[str, dict[str, float]] | None:
    return None if value is None else (str(value[0]), {str(k): float(v) for k, v in value[1].items()})
