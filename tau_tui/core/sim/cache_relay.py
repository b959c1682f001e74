"""A simulated backend's cache writes, carried from the process that runs the simulated cluster to
the app's process, in order (``process_server.py`` sends them, ``process_backend.py`` replays them).

In the serving process a :class:`SimulatedBackend` writes to a :class:`RelayedCache`: it has the
write half of ObjectCache's interface and stores nothing (the app's cache builds the views, once),
it only queues each write, and :meth:`RelayedCache.end_batch` marks where a batch ends. :func:`relay_messages` cuts
what was queued into messages small enough to unpickle without holding the app's interpreter for
long; :class:`RelayReplayer` makes the same calls on the app's cache, in the same order."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ViewState, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import KUEUE_GROUP
from tau_tui.core.cluster.shared_values import SharedValues

#: Objects in one message at most: a full list of 20,000 Workloads goes as 20 messages, each
#: unpickled in a few milliseconds, so the UI thread never waits long for the interpreter.
OBJECTS_PER_MESSAGE = 1_000

#: Kinds whose first list the app's cache shows while the rest comes (the queue screen's rows with
#: the first thousand Workloads), as a real server's pages of them are (``real.SHOWN_WHILE_LISTED``);
#: the others go in whole, at their list's end.  Shown each time what came has doubled: every showing
#: makes the panes read the kind again, and a read per part of 100,000 Workloads is quadratic.
SHOWN_WHILE_LISTED = frozenset(kind for kind in ResourceKind if kind.type.group == KUEUE_GROUP)

#: One queued write: ``(verb, ...)``; verbs below.
RelayOp = tuple[Any, ...]
REPLACE, APPLY, CLEAR, STATE, CONNECTION, NODE_PODS, NODE_POD, MARK = (
    "replace", "apply", "clear", "state", "connection", "node_pods", "node_pod", "mark")


class RelayedCache:
    """What a SimulatedBackend writes to its cache, queued for the app's process (never blocks)."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now
        self._ops: list[RelayOp] = []
        self._ready = threading.Condition()
        self._closed = False
        self._states: dict[ResourceKind, ViewState] = {k: ViewState(k, ViewStatus.SYNCING) for k in ResourceKind}
        #: The last batch marked; a reply to a write names it, so the caller can wait for it.
        self.seq = 0

    # -- ObjectCache's writes, as SimulatedBackend makes them -----------------------

    def view_state(self, kind: ResourceKind) -> ViewState:
        with self._ready:
            return self._states[kind]

    def set_state(self, kind: ResourceKind, status: ViewStatus, message: str = "") -> None:
        with self._ready:
            self._states[kind] = ViewState(kind, status, message, None)
            self._queue((STATE, kind, status, message))

    def clear(self, kind: ResourceKind, status: ViewStatus = ViewStatus.SYNCING, message: str = "") -> None:
        with self._ready:
            self._states[kind] = ViewState(kind, status, message, None)
            self._queue((CLEAR, kind, status, message))

    def set_connection(self, state: ConnectionState) -> None:
        self._queue((CONNECTION, state))

    def replace(self, kind: ResourceKind, items: Iterable[dict[str, Any]]) -> None:
        self._queue(*((REPLACE, kind, part, last) for part, last in _parts(list(items))))

    def apply(self, kind: ResourceKind, event_type: str, obj: dict[str, Any]) -> None:
        self._queue((APPLY, kind, event_type, obj))

    def replace_node_pods(self, items: Iterable[dict[str, Any]]) -> None:
        self._queue(*((NODE_PODS, part, last) for part, last in _parts(list(items))))

    def set_node_pods_unknown(self) -> None:
        self._queue((NODE_PODS, None, True))

    def apply_node_pod(self, event_type: str, obj: dict[str, Any]) -> None:
        self._queue((NODE_POD, event_type, obj))

    def end_batch(self) -> None:
        """A batch ends here: the app's process notes the simulated time and that the batch is in
        its cache when it reaches this mark (a write's reply names it)."""
        with self._ready:
            self.seq += 1
            self._queue((MARK, self.seq, self._now(), time.monotonic()))

    # -- the sender's side ----------------------------------------------------------

    def take(self) -> list[RelayOp] | None:
        """Everything queued since the last take (None: closed). A first sync goes out kind by
        kind, so the app's cache takes one kind while this process lists the next."""
        with self._ready:
            while not self._closed and not self._ops:
                self._ready.wait()
            if self._closed:
                return None
            ops, self._ops = self._ops, []
            return ops

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _queue(self, *ops: RelayOp) -> None:
        with self._ready:
            self._ops.extend(ops)
            self._ready.notify()


def _parts(items: list[dict[str, Any]]) -> list[tuple[list[dict[str, Any]], bool]]:
    """A full list in parts of OBJECTS_PER_MESSAGE, each with whether it is the last."""
    parts = [items[i:i + OBJECTS_PER_MESSAGE] for i in range(0, len(items), OBJECTS_PER_MESSAGE)] or [[]]
    return [(part, i == len(parts) - 1) for i, part in enumerate(parts)]


def relay_messages(ops: list[RelayOp], shared: SharedValues | None = None) -> Iterator[list[RelayOp]]:
    """``ops`` cut into messages of about OBJECTS_PER_MESSAGE objects each, in order; ``shared``:
    the objects of full lists go as copies in which equal values are one object, so that a message
    carries each once and the app's process unpickles one copy of it per message, not per object."""
    message: list[RelayOp] = []
    weight = 0
    for op in ops:
        if shared is not None and op[0] == REPLACE:
            op = (REPLACE, op[1], [shared.copy(obj) for obj in op[2]], op[3])
        message.append(op)
        weight += len(op[2]) if op[0] == REPLACE else len(op[1] or ()) if op[0] == NODE_PODS else 1
        if weight >= OBJECTS_PER_MESSAGE:
            yield message
            message, weight = [], 0
    if message:
        yield message


class RelayReplayer:
    """Applies relayed writes to the app's cache, in the order the serving cache made them."""

    def __init__(self, cache: ObjectCache) -> None:
        self.cache = cache
        self._parts: dict[ResourceKind, list[dict[str, Any]]] = {}
        self._shown: dict[ResourceKind, int] = {}
        self._node_pods: list[dict[str, Any]] = []
        #: A watch event's object, unpickled alone, holds every value anew: equal values are shared.
        self._shared = SharedValues()

    def apply(self, op: RelayOp) -> tuple[int, datetime, float] | None:
        """Apply one write; a batch's mark returns its ``(seq, simulated now, monotonic)``."""
        verb, cache = op[0], self.cache
        if verb == APPLY:
            cache.apply(op[1], op[2], self._shared.copy(op[3]))
        elif verb == REPLACE:
            listed = self._parts.setdefault(op[1], [])
            listed.extend(op[2])
            if op[3]:
                cache.replace(op[1], self._parts.pop(op[1]))
                self._shown.pop(op[1], None)
            elif op[1] in SHOWN_WHILE_LISTED and len(listed) >= 2 * (shown := self._shown.get(op[1], 0)):
                # only while a first list: the cache never shows a relist by halves
                cache.add_listed_page(op[1], listed[shown:], len(listed))
                self._shown[op[1]] = len(listed)
        elif verb == MARK:
            return op[1], op[2], op[3]
        elif verb == STATE:
            cache.set_state(op[1], op[2], op[3])
        elif verb == CLEAR:
            cache.clear(op[1], op[2], op[3])
        elif verb == CONNECTION:
            cache.set_connection(op[1])
        elif verb == NODE_POD:
            cache.apply_node_pod(op[1], op[2])
        elif verb == NODE_PODS:
            if op[1] is None:
                cache.set_node_pods_unknown()
            else:
                self._node_pods.extend(op[1])
                if op[2]:
                    pods, self._node_pods = self._node_pods, []
                    cache.replace_node_pods(pods)
        return None
