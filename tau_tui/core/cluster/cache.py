"""The local object cache both backends feed, with change coalescing.

Backends push raw objects in (a full list with :meth:`ObjectCache.replace`,
single watch events with :meth:`ObjectCache.apply`); the cache converts them
to views, drops duplicates (same resourceVersion), keeps per-kind generations
and queues coalesced change events that :meth:`ObjectCache.flush` delivers to
subscribers.  Node views are composed here from Node objects, the GPU requests
of pods bound to each node, and the agent's GPU health objects."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from tau_tui.core.cluster.changes import (
    ChangeBatch,
    ChangeCallback,
    ChangeEvent,
    ChangeType,
    ConnectionState,
    ConnectionStatus,
    StateCallback,
    Subscription,
    ViewState,
    ViewStatus,
)
from tau_tui.core.cluster.convert import SIMPLE_VIEW_BUILDERS, node_view, pod_requests, strip_managed_fields
from tau_tui.core.cluster.first_connection import answered, as_first_connection
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.cluster.view_types import GpuHealthView, ObjectView

Key = tuple[str, str]
#: Changes a kind's journal keeps (:meth:`ObjectCache.changed_since`): at 200 changes a second, over a
#: minute's worth; a reader further behind reads everything again.
JOURNAL_KEPT = 16_384
#: A pod's GPU requests on the node it is bound to, as the node views count them.
PodAllocation = tuple[str, dict[str, float]]


class CacheTap(Protocol):
    """Sees every write a backend makes to the cache, in order, under the cache's lock, just after
    it is applied (a session recorder: it must only queue what it is given, never block or
    change it; a snapshot it takes then includes that write)."""

    def attached(self, snapshot: CacheSnapshot) -> None:
        """What the cache held when the tap was attached (the first keyframe)."""
    def replaced(self, kind: ResourceKind, items: list[dict[str, Any]]) -> None: ...
    def applied(self, kind: ResourceKind, event_type: str, obj: dict[str, Any]) -> None: ...
    def cleared(self, kind: ResourceKind, status: ViewStatus, message: str) -> None: ...
    def state_set(self, kind: ResourceKind, status: ViewStatus, message: str) -> None: ...
    def connection_set(self, state: ConnectionState) -> None: ...
    def pod_allocations_replaced(self, allocations: dict[Key, PodAllocation] | None) -> None:
        """Every bound pod's GPU requests (None: unknown, the pod list is not readable)."""
    def pod_allocation_set(self, key: Key, allocation: PodAllocation | None) -> None: ...


@dataclass(frozen=True)
class CacheSnapshot:
    """Everything the cache holds, as a backend fed it (raw objects are shared, never changed)."""

    raw: dict[ResourceKind, list[dict[str, Any]]]
    states: dict[ResourceKind, ViewState]
    connection: ConnectionState
    #: None: the pods bound to nodes are unknown (not readable).
    pod_allocations: dict[Key, PodAllocation] | None


def key_of(kind: ResourceKind, obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return ((meta.get("namespace") or "") if kind.type.namespaced else "", meta.get("name", ""))


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


class _Subscription(Subscription):
    def __init__(self, cache: ObjectCache, callback: ChangeCallback, kinds: Iterable[ResourceKind] | None,
                 on_state: StateCallback | None):
        self.cache = cache
        self.callback = callback
        self.kinds = None if kinds is None else frozenset(kinds)
        self.on_state = on_state
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.cache._unsubscribe(self)


class ObjectCache:
    def __init__(self, now: Callable[[], datetime] | None = None):
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._raw: dict[ResourceKind, dict[Key, dict[str, Any]]] = {k: {} for k in ResourceKind}
        self._views: dict[ResourceKind, dict[Key, ObjectView]] = {k: {} for k in ResourceKind}
        self._sorted: dict[ResourceKind, tuple[int, list[ObjectView]]] = {}
        self._gen: dict[ResourceKind, int] = {k: 0 for k in ResourceKind}
        self._states: dict[ResourceKind, ViewState] = {k: ViewState(k, ViewStatus.SYNCING) for k in ResourceKind}
        # node composition
        self._pod_alloc: dict[Key, PodAllocation] = {}
        self._node_alloc: dict[str, dict[str, float]] = {}
        self._node_pods_known = False
        self._health_by_node: dict[str, GpuHealthView] = {}
        # change queue
        self._pending: dict[tuple[ResourceKind, Key], ChangeEvent] = {}
        self._relisted: set[ResourceKind] = set()
        self._subs: list[_Subscription] = []
        self._connection = ConnectionState(ConnectionStatus.RECONNECTING, None, None, "connecting")
        self._changed = threading.Condition(self._lock)
        self._tap: CacheTap | None = None
        #: Per kind asked about (:meth:`changed_since`): (generation, key) of each object stored or
        #: removed since, and the newest generation the journal has dropped.
        self._journals: dict[ResourceKind, deque[tuple[int, Key]]] = {}
        self._journal_forgot: dict[ResourceKind, int] = {}

    # -- reads -------------------------------------------------------------

    def list(self, kind: ResourceKind, namespace: str | None = None) -> list[ObjectView]:
        with self._lock:
            gen = self._gen[kind]
            cached = self._sorted.get(kind)
            if cached is None or cached[0] != gen:
                items = [self._views[kind][k] for k in sorted(self._views[kind])]
                self._sorted[kind] = (gen, items)
            else:
                items = cached[1]
        if namespace is not None and kind.type.namespaced:
            return [v for v in items if v.namespace == namespace]
        return list(items)

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> ObjectView | None:
        with self._lock:
            return self._views[kind].get(((namespace or "") if kind.type.namespaced else "", name))

    def raw(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self._lock:
            return self._raw[kind].get(((namespace or "") if kind.type.namespaced else "", name))

    def generation(self, kind: ResourceKind) -> int:
        with self._lock:
            return self._gen[kind]

    def view_state(self, kind: ResourceKind) -> ViewState:
        with self._lock:
            return self._states[kind]

    def changed_since(self, kind: ResourceKind, generation: int) -> set[Key] | None:
        """The keys of ``kind`` stored or removed after ``generation`` (a value :meth:`generation`
        gave), so that a reader reads those alone; None when not known (the first time a kind is
        asked about, or a reader further behind than the journal keeps): read everything."""
        with self._lock:
            journal = self._journals.get(kind)
            if journal is None:
                self._journals[kind] = deque(maxlen=JOURNAL_KEPT)
                self._journal_forgot[kind] = self._gen[kind]
                return None
            if generation < self._journal_forgot[kind] or generation > self._gen[kind]:
                return None
            keys: set[Key] = set()
            for changed_at, key in reversed(journal):
                if changed_at <= generation:
                    break
                keys.add(key)
            return keys

    def connection_state(self) -> ConnectionState:
        with self._lock:
            return self._connection

    def attach_tap(self, tap: CacheTap | None) -> None:
        """Send every later write to ``tap`` (None: stop), after telling it what the cache holds
        now, atomically: no write falls between that snapshot and the first tapped one."""
        with self._lock:
            self._tap = tap
            if tap is not None:
                tap.attached(self.snapshot())

    def snapshot(self) -> CacheSnapshot:
        with self._lock:
            return CacheSnapshot(
                {kind: list(self._raw[kind].values()) for kind in ResourceKind},
                dict(self._states),
                self._connection,
                {key: (node, dict(gpus)) for key, (node, gpus) in self._pod_alloc.items()} if self._node_pods_known else None,
            )

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Block until ``predicate()`` holds after some change (real time)."""
        import time

        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.2))
            return True

    # -- writes from backends ---------------------------------------------

    def set_state(self, kind: ResourceKind, status: ViewStatus, message: str = "") -> None:
        with self._lock:
            old = self._states[kind]
            synced = self._now() if status is ViewStatus.READY else old.synced_at
            new = ViewState(kind, status, message, synced)
            if (old.status, old.message) != (status, message):
                self._states[kind] = new
                if self._tap is not None:
                    self._tap.state_set(kind, status, message)
                self._gen[kind] += 1
                self._changed.notify_all()

    def set_connection(self, state: ConnectionState) -> None:
        with self._lock:
            state = as_first_connection(self._connection, state)
            if state == self._connection:
                return
            self._connection = state
            if self._tap is not None:
                self._tap.connection_set(state)
            subs = [s for s in self._subs if s.on_state is not None]
            self._changed.notify_all()
        for sub in subs:
            on_state = sub.on_state
            if not sub.closed and on_state is not None:
                on_state(state)

    def replace(self, kind: ResourceKind, items: Iterable[dict[str, Any]]) -> None:
        """A fresh full list: diff against the cache, emit the difference."""
        incoming = {}
        for obj in items:
            strip_managed_fields(obj)
            incoming[key_of(kind, obj)] = obj
        with self._lock:
            current = self._raw[kind]
            for key in [k for k in current if k not in incoming]:
                self._remove(kind, key)
            for key, obj in incoming.items():
                self._store_if_moved(kind, key, obj)
            self._relisted.add(kind)
            self._gen[kind] += 1
            if self._tap is not None:
                self._tap.replaced(kind, list(incoming.values()))
            self._changed.notify_all()

    def add_listed_page(self, kind: ResourceKind, items: Iterable[dict[str, Any]], listed: int) -> None:
        """A page of a kind's first list, shown while the rest is listed (20,000 Workloads take the
        server 20 s on two busy cores; the first page, a second).  Only while the kind is SYNCING
        (a first list, or one after :meth:`clear`): the view stays SYNCING, its message says how many
        are listed so far, and the list's end replaces the kind as usual, which drops what was
        deleted meanwhile.  A relist of a kind already shown is never shown by halves."""
        with self._lock:
            if self._states[kind].status is not ViewStatus.SYNCING:
                return
            for obj in items:
                change = self._store_if_moved(kind, key_of(kind, obj), obj)
                if change is not None and self._tap is not None:
                    self._tap.applied(kind, change.value, obj)
            self.set_state(kind, ViewStatus.SYNCING, f"{listed:,} listed so far")
            self._changed.notify_all()
        if (now_connected := answered(self.connection_state())) is not None:  # the server answers
            self.set_connection(now_connected)

    def apply(self, kind: ResourceKind, event_type: str, obj: dict[str, Any]) -> bool:
        """One watch event.  Returns False when it was a duplicate."""
        strip_managed_fields(obj)
        key = key_of(kind, obj)
        with self._lock:
            old = self._raw[kind].get(key)
            if event_type == "DELETED":
                if old is None:
                    return False
                self._remove(kind, key, last=obj)
            else:
                if old is not None and _rv(old) == _rv(obj):
                    return False
                self._store(kind, key, obj, ChangeType.ADDED if old is None else ChangeType.MODIFIED)
            if self._tap is not None:  # after the write: a keyframe the tap takes now includes it
                self._tap.applied(kind, event_type, obj)
            self._changed.notify_all()
            return True

    def clear(self, kind: ResourceKind, status: ViewStatus = ViewStatus.SYNCING, message: str = "") -> None:
        """Drop everything of one kind (scope or context change, forbidden)."""
        with self._lock:
            for key in list(self._raw[kind]):
                self._remove(kind, key)
            self._states[kind] = ViewState(kind, status, message, None)
            self._gen[kind] += 1
            if self._tap is not None:
                self._tap.cleared(kind, status, message)
            self._changed.notify_all()

    # node-pod allocation (pods bound to nodes, cluster-wide)

    def replace_node_pods(self, items: Iterable[dict[str, Any]]) -> None:
        with self._lock:
            self._pod_alloc.clear()
            for obj in items:
                self._track_pod(obj, rebuild=False)
            self._recompute_alloc()
            self._node_pods_known = True
            self._rebuild_all_nodes()
            if self._tap is not None:
                self._tap.pod_allocations_replaced(dict(self._pod_alloc))

    def replace_pod_allocations(self, allocations: Mapping[Key, PodAllocation] | None) -> None:
        """Set every bound pod's GPU requests at once (a replay of :meth:`replace_node_pods`;
        None as :meth:`set_node_pods_unknown`)."""
        if allocations is None:
            self.set_node_pods_unknown()
            return
        with self._lock:
            self._pod_alloc = dict(allocations)
            self._recompute_alloc()
            self._node_pods_known = True
            self._rebuild_all_nodes()
            if self._tap is not None:
                self._tap.pod_allocations_replaced(dict(allocations))
            self._changed.notify_all()

    def set_pod_allocation(self, key: Key, allocation: PodAllocation | None) -> None:
        """One pod's GPU requests on its node (a replay of :meth:`apply_node_pod`)."""
        with self._lock:
            before = self._pod_alloc.get(key)
            if before == allocation:
                return
            if allocation is None:
                self._pod_alloc.pop(key, None)
            else:
                self._pod_alloc[key] = allocation
            self._after_pod_change(key, before)

    def apply_node_pod(self, event_type: str, obj: dict[str, Any]) -> None:
        with self._lock:
            key = key_of(ResourceKind.POD, obj)
            before = self._pod_alloc.get(key)
            if event_type == "DELETED":
                self._pod_alloc.pop(key, None)
            else:
                self._track_pod(obj, rebuild=False)
            if before == self._pod_alloc.get(key):
                return
            self._after_pod_change(key, before)

    def _after_pod_change(self, key: Key, before: PodAllocation | None) -> None:
        after = self._pod_alloc.get(key)
        touched = {n for n in ((before or ("",))[0], (after or ("",))[0]) if n}
        self._recompute_alloc(touched)
        for node in touched:
            self._rebuild_node(node)
        if self._tap is not None:
            self._tap.pod_allocation_set(key, after)
        self._changed.notify_all()

    def set_node_pods_unknown(self) -> None:
        with self._lock:
            self._node_pods_known = False
            self._pod_alloc.clear()
            self._node_alloc.clear()
            self._rebuild_all_nodes()
            if self._tap is not None:
                self._tap.pod_allocations_replaced(None)

    def _track_pod(self, obj: dict[str, Any], rebuild: bool) -> None:
        key = key_of(ResourceKind.POD, obj)
        spec = obj.get("spec") or {}
        node = spec.get("nodeName")
        phase = (obj.get("status") or {}).get("phase")
        if not node or phase in ("Succeeded", "Failed"):
            self._pod_alloc.pop(key, None)
            return
        gpus = {k: v for k, v in pod_requests(spec).items() if is_gpu_resource(k) and v}
        if gpus:
            self._pod_alloc[key] = (node, gpus)
        else:
            self._pod_alloc.pop(key, None)

    def _recompute_alloc(self, nodes: set[str] | None = None) -> None:
        if nodes is None:
            self._node_alloc = {}
            targets = None
        else:
            targets = nodes
            for n in nodes:
                self._node_alloc.pop(n, None)
        for node, gpus in self._pod_alloc.values():
            if targets is not None and node not in targets:
                continue
            slot = self._node_alloc.setdefault(node, {})
            for res, value in gpus.items():
                slot[res] = slot.get(res, 0.0) + value

    # -- internals ---------------------------------------------------------

    def _build(self, kind: ResourceKind, obj: dict[str, Any]) -> ObjectView:
        if kind is ResourceKind.NODE:
            name = (obj.get("metadata") or {}).get("name", "")
            alloc = self._node_alloc.get(name, {}) if self._node_pods_known else None
            return node_view(obj, alloc, self._health_by_node.get(name))
        return SIMPLE_VIEW_BUILDERS[kind](obj)

    def _note(self, kind: ResourceKind, key: Key) -> None:
        """Bump the kind's generation for a change of ``key``, in its journal if it keeps one."""
        self._gen[kind] += 1
        journal = self._journals.get(kind)
        if journal is not None:
            if len(journal) == journal.maxlen:
                self._journal_forgot[kind] = journal[0][0]
            journal.append((self._gen[kind], key))

    def _store_if_moved(self, kind: ResourceKind, key: Key, obj: dict[str, Any]) -> ChangeType | None:
        """Store ``obj`` unless the cache holds it at the same resourceVersion; the change it made."""
        old = self._raw[kind].get(key)
        if old is not None and _rv(old) == _rv(obj):
            return None
        change = ChangeType.ADDED if old is None else ChangeType.MODIFIED
        self._store(kind, key, obj, change)
        return change

    def _store(self, kind: ResourceKind, key: Key, obj: dict[str, Any], change: ChangeType) -> None:
        self._raw[kind][key] = obj
        view = self._build(kind, obj)
        self._views[kind][key] = view
        self._note(kind, key)
        self._queue(ChangeEvent(kind, change, view))
        if kind is ResourceKind.GPU_HEALTH and isinstance(view, GpuHealthView):
            self._health_by_node[view.node_name] = view
            self._rebuild_node(view.node_name)

    def _remove(self, kind: ResourceKind, key: Key, last: dict[str, Any] | None = None) -> None:
        self._raw[kind].pop(key, None)
        view = self._views[kind].pop(key, None)
        if view is None:
            return
        if last is not None:
            strip_managed_fields(last)
            view = self._build(kind, last) if kind is not ResourceKind.NODE else view
        self._note(kind, key)
        self._queue(ChangeEvent(kind, ChangeType.DELETED, view))
        if kind is ResourceKind.GPU_HEALTH and isinstance(view, GpuHealthView):
            node = view.node_name
            if self._health_by_node.get(node) is not None:
                self._health_by_node.pop(node, None)
                self._rebuild_node(node)

    def _rebuild_node(self, name: str) -> None:
        obj = self._raw[ResourceKind.NODE].get(("", name))
        if obj is None:
            return
        view = self._build(ResourceKind.NODE, obj)
        self._views[ResourceKind.NODE][("", name)] = view
        self._note(ResourceKind.NODE, ("", name))
        self._queue(ChangeEvent(ResourceKind.NODE, ChangeType.MODIFIED, view))

    def _rebuild_all_nodes(self) -> None:
        for (_, name) in list(self._raw[ResourceKind.NODE]):
            self._rebuild_node(name)

    def _queue(self, event: ChangeEvent) -> None:
        slot = (event.kind, event.key)
        prev = self._pending.get(slot)
        if prev is None:
            self._pending[slot] = event
            return
        if prev.type is ChangeType.ADDED and event.type is ChangeType.DELETED:
            del self._pending[slot]
            return
        if prev.type is ChangeType.ADDED:
            self._pending[slot] = ChangeEvent(event.kind, ChangeType.ADDED, event.obj)
        elif prev.type is ChangeType.DELETED and event.type is not ChangeType.DELETED:
            self._pending[slot] = ChangeEvent(event.kind, ChangeType.MODIFIED, event.obj)
        else:
            self._pending[slot] = event

    # -- delivery ----------------------------------------------------------

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending or self._relisted)

    def flush(self) -> ChangeBatch | None:
        """Deliver the coalesced changes queued so far (on the caller's thread)."""
        with self._lock:
            if not self._pending and not self._relisted:
                return None
            batch = ChangeBatch(tuple(self._pending.values()), frozenset(self._relisted))
            self._pending = {}
            self._relisted = set()
            subs = list(self._subs)
        for sub in subs:
            if sub.closed:
                continue
            if sub.kinds is None:
                part = batch
            else:
                events = tuple(e for e in batch.events if e.kind in sub.kinds)
                relisted = batch.relisted & sub.kinds
                if not events and not relisted:
                    continue
                part = ChangeBatch(events, relisted)
            sub.callback(part)
        return batch

    def subscribe(
        self,
        callback: ChangeCallback,
        kinds: Iterable[ResourceKind] | None = None,
        on_state: StateCallback | None = None,
    ) -> Subscription:
        sub = _Subscription(self, callback, kinds, on_state)
        with self._lock:
            self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: _Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)


class Dispatcher(threading.Thread):
    """Flushes the cache every ``window`` seconds while changes are queued,
    so bursts (a relist, a mass update) reach subscribers as one batch."""

    def __init__(self, cache: ObjectCache, window: float = 0.1):
        super().__init__(name="tau-cluster-dispatch", daemon=True)
        self.cache = cache
        self.window = window
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(self.window):
            try:
                self.cache.flush()
            except Exception:  # a subscriber bug must not stop delivery
                import logging

                logging.getLogger(__name__).exception("change subscriber failed")

    def stop(self) -> None:
        self._stopping.set()
