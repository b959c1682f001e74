"""The local object cache both backends feed, and its one change feed.

Backends push raw objects in (a full list with :meth:`ObjectCache.replace`,
single watch events with :meth:`ObjectCache.apply`); the cache converts them
to views, drops duplicates (same resourceVersion) and keeps per-kind generations
and a journal of the keys each generation changed.  Readers follow it with a
:class:`~tau_tui.core.cluster.journal_cursor.JournalCursor` (:meth:`ObjectCache.changes`):
nothing is pushed, so a change costs the cache a journal entry, not an event per
subscriber.  Node views are composed here from Node objects, the GPU requests
of pods bound to each node, and the agent's GPU health objects."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from tau_tui.core.cluster.change_journal import ChangeJournals
from tau_tui.core.cluster.changes import ChangeType, ConnectionState, ConnectionStatus, ViewState, ViewStatus
from tau_tui.core.cluster.convert import SIMPLE_VIEW_BUILDERS, node_view, strip_managed_fields
from tau_tui.core.cluster.first_connection import answered, as_first_connection
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.node_allocations import Key as Key
from tau_tui.core.cluster.node_allocations import NodeAllocations, pod_allocation
from tau_tui.core.cluster.node_allocations import PodAllocation as PodAllocation
from tau_tui.core.cluster.view_types import GpuHealthView, ObjectView

#: Up to this many changed keys a reader is handed them, however few objects the kind has: either
#: read costs little then.
INCREMENTAL_LEAST = 256
#: A full list is diffed and its views built outside the lock, then swapped in; a write that comes
#: in meanwhile makes it start again, this many times at most, then once under the lock.
REPLACE_TRIES = 3


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


@dataclass
class _Relist:
    """A full list diffed against the cache: its objects and views, and the keys it changes."""

    raw: dict[Key, dict[str, Any]]
    views: dict[Key, ObjectView]
    keys: list[Key]
    #: The views stored or removed (True), in the order of ``keys``.
    changed: list[tuple[ObjectView, bool]]

    def add(self, key: Key, view: ObjectView, removed: bool) -> None:
        self.keys.append(key)
        self.changed.append((view, removed))


def _release_gradually(*held: dict[Key, Any]) -> None:
    """Empty ``held`` one entry at a time: freeing 100,000 objects in one go holds the interpreter,
    and so every other thread, for as long as it takes."""
    for mapping in held:
        while mapping:
            mapping.popitem()


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
        self._alloc = NodeAllocations()
        self._node_pods_known = False
        #: Bumped whenever what node views are built from (allocations, health) may have changed.
        self._node_inputs = 0
        self._health_by_node: dict[str, GpuHealthView] = {}
        self._connection = ConnectionState(ConnectionStatus.RECONNECTING, None, None, "connecting")
        self._changed = threading.Condition(self._lock)
        self._tap: CacheTap | None = None
        self._journals = ChangeJournals()

    # -- reads -------------------------------------------------------------

    def list(self, kind: ResourceKind, namespace: str | None = None) -> list[ObjectView]:
        """Every view of ``kind`` by (namespace, name).  The sort is made outside the lock, from a
        copy of the views taken under it, and kept while the kind's generation stays."""
        with self._lock:
            gen = self._gen[kind]
            cached = self._sorted.get(kind)
            pairs = list(self._views[kind].items()) if cached is None or cached[0] != gen else None
        if pairs is not None:
            pairs.sort(key=_first)
            items = [view for _, view in pairs]
            with self._lock:
                if self._gen[kind] == gen:
                    self._sorted[kind] = (gen, items)
        else:
            assert cached is not None
            items = cached[1]
        if namespace is not None and kind.type.namespaced:
            return [v for v in items if v.namespace == namespace]
        return list(items)

    def views(self, kind: ResourceKind) -> builtins.list[ObjectView]:
        """Every view of ``kind``, in no order (a copy of the references: no sort)."""
        with self._lock:
            return list(self._views[kind].values())

    def count(self, kind: ResourceKind) -> int:
        with self._lock:
            return len(self._views[kind])

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

    def changes(self, kind: ResourceKind, since: int | None, cost_ratio: int = 1) -> tuple[int, set[Key] | None]:
        """The kind's generation now and, taken with it, the keys stored or removed after ``since``
        (a generation this gave before).  None for the keys: read everything, when ``since`` is None
        (a first read: the kind is journaled from now on), the journal does not reach back to it, or
        more keys changed than a ``cost_ratio``-th of the kind's objects (reading each changed
        object costs a reader ``cost_ratio`` times what one object of a whole read does) and more
        than INCREMENTAL_LEAST."""
        with self._lock:
            current = self._gen[kind]
            if not self._journals.follows(kind):
                self._journals.start(kind, current)
                return current, None
            if since is None:
                return current, None
            most = max(len(self._views[kind]) // max(cost_ratio, 1), INCREMENTAL_LEAST)
            return current, self._journals.changed_since(kind, since, current, most)

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
                {key: (node, dict(gpus)) for key, (node, gpus) in self._alloc.pods.items()} if self._node_pods_known else None,
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
            self._changed.notify_all()

    def wait_for_change(self, seen: Mapping[ResourceKind, int], timeout: float) -> bool:
        """Block until a kind of ``seen`` is at another generation than the one given (real time);
        False when ``timeout`` passed first."""
        import time

        deadline = time.monotonic() + timeout
        gen = self._gen
        with self._changed:  # every write that moves a generation notifies under this lock
            while all(gen[kind] == generation for kind, generation in seen.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def replace(self, kind: ResourceKind, items: Iterable[dict[str, Any]]) -> None:
        """A fresh full list: diff against the cache, emit the difference.  The diff and its views
        are made outside the lock and swapped in under it: readers wait for the swap alone, and
        see the whole old list or the whole new one."""
        incoming = {}
        for obj in items:
            strip_managed_fields(obj)
            incoming[key_of(kind, obj)] = obj
        for _ in range(REPLACE_TRIES):
            with self._lock:
                seen = self._writes_seen(kind)
                current = dict(self._raw[kind])
            relist = self._diff(kind, incoming, current)
            with self._lock:
                retired = self._swap_in(kind, incoming, relist) if self._writes_seen(kind) == seen else None
            if retired is not None:
                _release_gradually(current, *retired)
                return
        with self._lock:  # written to all along: diff under the lock
            retired = self._swap_in(kind, incoming, self._diff(kind, incoming, self._raw[kind]))
        _release_gradually(*retired)

    def _writes_seen(self, kind: ResourceKind) -> tuple[int, int]:
        """Changes when anything a diff of ``kind`` read has changed."""
        return self._gen[kind], self._node_inputs if kind is ResourceKind.NODE else 0

    def _diff(self, kind: ResourceKind, incoming: dict[Key, dict[str, Any]],
              current: Mapping[Key, dict[str, Any]]) -> _Relist:
        views = self._views[kind]
        relist = _Relist({}, {}, [], [])
        for key in current:
            if key not in incoming and (gone := views.get(key)) is not None:
                relist.add(key, gone, True)
        for key, obj in incoming.items():
            old = current.get(key)
            if old is not None and _rv(old) == _rv(obj) and (kept := views.get(key)) is not None:
                relist.raw[key], relist.views[key] = old, kept
                continue
            view = self._build(kind, obj)
            relist.raw[key], relist.views[key] = obj, view
            relist.add(key, view, False)
        return relist

    def _swap_in(self, kind: ResourceKind, incoming: dict[Key, dict[str, Any]],
                 relist: _Relist) -> tuple[dict[Key, Any], ...]:
        """Put ``relist`` in; what it replaced, for the caller to free after the lock (the sorted
        list goes now: the views it holds are held by what is returned, so none is freed here)."""
        self._sorted.pop(kind, None)
        retired = (self._raw[kind], self._views[kind])
        self._raw[kind], self._views[kind] = relist.raw, relist.views
        self._journals.note_many(kind, self._gen[kind] + 1, relist.keys, len(relist.views))
        self._gen[kind] += len(relist.keys)
        if kind is ResourceKind.GPU_HEALTH:
            for view, removed in relist.changed:
                self._health_changed(view, removed)
        self._gen[kind] += 1
        if self._tap is not None:
            self._tap.replaced(kind, list(incoming.values()))
        self._changed.notify_all()
        return retired

    def add_listed_page(self, kind: ResourceKind, items: Iterable[dict[str, Any]], listed: int) -> None:
        """A page of a kind's first list, shown while the rest is listed (20,000 Workloads take the
        server 20 s on two busy cores; the first page, a second).  Only while the kind is SYNCING
        (a first list, or one after :meth:`clear`): the view stays SYNCING, its message says how many
        are listed so far, and the list's end replaces the kind as usual, which drops what was
        deleted meanwhile.  A relist of a kind already shown is never shown by halves.  The views
        are built before the lock is taken (a node's, which reads the node's pods, under it)."""
        built = [(key_of(kind, obj), obj, None if kind is ResourceKind.NODE else self._build(kind, obj))
                 for obj in items]
        with self._lock:
            if self._states[kind].status is not ViewStatus.SYNCING:
                return
            for key, obj, view in built:
                change = self._store_if_moved(kind, key, obj, view)
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
                self._remove(kind, key)
            else:
                if old is not None and _rv(old) == _rv(obj):
                    return False
                self._store(kind, key, obj)
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
        allocations: dict[Key, PodAllocation] = {}
        for obj in items:
            key = key_of(ResourceKind.POD, obj)
            if (allocation := pod_allocation(obj)) is None:
                allocations.pop(key, None)
            else:
                allocations[key] = allocation
        self._replace_allocations(allocations)

    def replace_pod_allocations(self, allocations: Mapping[Key, PodAllocation] | None) -> None:
        """Set every bound pod's GPU requests at once (a replay of :meth:`replace_node_pods`;
        None as :meth:`set_node_pods_unknown`)."""
        if allocations is None:
            self.set_node_pods_unknown()
        else:
            self._replace_allocations(dict(allocations))

    def _replace_allocations(self, allocations: dict[Key, PodAllocation]) -> None:
        """Every node's view again, built outside the lock (as :meth:`replace` builds a list's)."""
        fresh = NodeAllocations()
        fresh.replace(allocations)
        for _ in range(REPLACE_TRIES):
            with self._lock:
                seen = self._writes_seen(ResourceKind.NODE)
                nodes, health = dict(self._raw[ResourceKind.NODE]), dict(self._health_by_node)
            views = {key: node_view(obj, fresh.by_node.get(key[1], {}), health.get(key[1]))
                     for key, obj in nodes.items()}
            with self._lock:
                if self._writes_seen(ResourceKind.NODE) == seen:
                    self._set_allocations(fresh, views)
                    return
        with self._lock:  # written to all along: build under the lock
            self._set_allocations(fresh, None)

    def _set_allocations(self, fresh: NodeAllocations, views: Mapping[Key, ObjectView] | None) -> None:
        self._alloc, self._node_pods_known = fresh, True
        self._node_inputs += 1
        for key, view in (views or {}).items():
            self._views[ResourceKind.NODE][key] = view
            self._note(ResourceKind.NODE, key)
        if views is None:
            self._rebuild_all_nodes()
        if self._tap is not None:
            self._tap.pod_allocations_replaced(dict(fresh.pods))
        self._changed.notify_all()

    def set_pod_allocation(self, key: Key, allocation: PodAllocation | None) -> None:
        """One pod's GPU requests on its node (a replay of :meth:`apply_node_pod`)."""
        with self._lock:
            self._after_pod_change(key, allocation)

    def apply_node_pod(self, event_type: str, obj: dict[str, Any]) -> None:
        allocation = None if event_type == "DELETED" else pod_allocation(obj)
        with self._lock:
            self._after_pod_change(key_of(ResourceKind.POD, obj), allocation)

    def _after_pod_change(self, key: Key, allocation: PodAllocation | None) -> None:
        if self._alloc.pods.get(key) == allocation:
            return
        for node in self._alloc.set(key, allocation):
            self._rebuild_node(node)
        if self._tap is not None:
            self._tap.pod_allocation_set(key, allocation)
        self._changed.notify_all()

    def set_node_pods_unknown(self) -> None:
        with self._lock:
            self._node_pods_known = False
            self._alloc.clear()
            self._rebuild_all_nodes()
            if self._tap is not None:
                self._tap.pod_allocations_replaced(None)

    # -- internals ---------------------------------------------------------

    def _build(self, kind: ResourceKind, obj: dict[str, Any]) -> ObjectView:
        if kind is ResourceKind.NODE:
            name = (obj.get("metadata") or {}).get("name", "")
            alloc = self._alloc.by_node.get(name, {}) if self._node_pods_known else None
            return node_view(obj, alloc, self._health_by_node.get(name))
        return SIMPLE_VIEW_BUILDERS[kind](obj)

    def _note(self, kind: ResourceKind, key: Key) -> None:
        """Bump the kind's generation for a change of ``key``, in its journal if it keeps one."""
        self._gen[kind] += 1
        self._journals.note(kind, self._gen[kind], key, len(self._views[kind]))

    def _store_if_moved(self, kind: ResourceKind, key: Key, obj: dict[str, Any],
                        view: ObjectView | None = None) -> ChangeType | None:
        """Store ``obj`` (its ``view`` if built already) unless the cache holds it at the same
        resourceVersion; the change it made."""
        old = self._raw[kind].get(key)
        if old is not None and _rv(old) == _rv(obj):
            return None
        self._store(kind, key, obj, view)
        return ChangeType.ADDED if old is None else ChangeType.MODIFIED

    def _store(self, kind: ResourceKind, key: Key, obj: dict[str, Any], view: ObjectView | None = None) -> None:
        self._raw[kind][key] = obj
        view = view if view is not None else self._build(kind, obj)
        self._views[kind][key] = view
        self._note(kind, key)
        if kind is ResourceKind.GPU_HEALTH:
            self._health_changed(view, False)

    def _remove(self, kind: ResourceKind, key: Key) -> None:
        self._raw[kind].pop(key, None)
        view = self._views[kind].pop(key, None)
        if view is None:
            return
        self._note(kind, key)
        if kind is ResourceKind.GPU_HEALTH:
            self._health_changed(view, True)

    def _health_changed(self, view: ObjectView, removed: bool) -> None:
        """A GPU health object stored or removed: its node's view shows it."""
        if not isinstance(view, GpuHealthView):
            return
        if removed:
            if self._health_by_node.pop(view.node_name, None) is None:
                return
        else:
            self._health_by_node[view.node_name] = view
        self._rebuild_node(view.node_name)

    def _rebuild_node(self, name: str) -> None:
        self._node_inputs += 1
        obj = self._raw[ResourceKind.NODE].get(("", name))
        if obj is None:
            return
        self._views[ResourceKind.NODE][("", name)] = self._build(ResourceKind.NODE, obj)
        self._note(ResourceKind.NODE, ("", name))

    def _rebuild_all_nodes(self) -> None:
        self._node_inputs += 1
        for (_, name) in list(self._raw[ResourceKind.NODE]):
            self._rebuild_node(name)


def _first(pair: tuple[Key, ObjectView]) -> Key:
    return pair[0]
