"""Kueue's documented order of every ClusterQueue's pending Workloads, kept from the change feed.

Where the visibility API is not served, a queue's positions are estimated from that order
(``positions.py``).  Working it out from the whole list costs every Workload (and a sort) per
queue read, and one is read whenever a queue's pending Workloads change: at 200 changes a second
over 20,000 Workloads that was most of a thread.  :class:`PendingOrder` instead keeps, per
ClusterQueue, its pending Workloads sorted by Kueue's order, and brings them up to date from its
cursors on Workloads and LocalQueues before each report: a report after one pending change reads
that one Workload and walks that one ClusterQueue's pending set.  Thread-safe (the positions
thread and a pane's worker ask)."""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Protocol

from tau_tui.core.cluster.journal_cursor import ChangeFeed, JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.positions import PendingPosition, PositionReport, PositionSource, is_pending
from tau_tui.core.cluster.view_types import LocalQueueView, ObjectView, WorkloadView

Key = tuple[str, str]
#: Kueue's order (priority descending, queue-order time, UID), then the key: a full list's order
#: for equal ones, as a stable sort of the list by (namespace, name) gives; then the LocalQueue (a
#: report of one walks its ClusterQueue's keys and builds entries for its own alone).
OrderKey = tuple[int, datetime, str, str, str, str]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Source(ChangeFeed, Protocol):
    """What the order is kept from (a backend)."""

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> ObjectView | None: ...
    def views(self, kind: ResourceKind) -> list[ObjectView]: ...


def order_key(wl: WorkloadView) -> OrderKey:
    return (-wl.effective_priority, wl.queue_order_timestamp or _EPOCH, wl.uid, wl.namespace or "", wl.name,
            wl.queue_name or "")


class PendingOrder:
    def __init__(self, source: Source) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._workloads = JournalCursor(ResourceKind.WORKLOAD)
        self._local_queues = JournalCursor(ResourceKind.LOCAL_QUEUE)
        #: (namespace, LocalQueue) -> its ClusterQueue (None: the LocalQueue names none)
        self._cluster_queue_of: dict[Key, str | None] = {}
        #: ClusterQueue -> its pending Workloads' order keys, sorted; and each held Workload's place
        self._pending: dict[str, list[OrderKey]] = {}
        self._held: dict[Key, tuple[str, OrderKey, WorkloadView]] = {}
        #: Whole lists read, Workloads read one by one and pending entries walked for reports (tests
        #: bound a report's work by them).
        self.full_reads = 0
        self.workloads_read = 0
        self.entries_walked = 0

    # -- reports ---------------------------------------------------------------------------------

    def local_queue_report(self, namespace: str, name: str, message: str, at: datetime) -> PositionReport:
        """The LocalQueue's pending Workloads in its ClusterQueue's order, estimated."""
        with self._lock:
            self._follow()
            cluster_queue = self._cluster_queue_of.get((namespace, name))
            entries = [] if cluster_queue is None else self._entries(cluster_queue, (namespace, name))
        return PositionReport("LocalQueue", name, namespace, tuple(entries), PositionSource.ESTIMATED, message, at)

    def cluster_queue_report(self, name: str, message: str, at: datetime) -> PositionReport:
        with self._lock:
            self._follow()
            entries = self._entries(name)
        return PositionReport("ClusterQueue", name, None, tuple(entries), PositionSource.ESTIMATED, message, at)

    def _entries(self, cluster_queue: str, local_queue: Key | None = None) -> list[PendingPosition]:
        """The ClusterQueue's pending Workloads (those of ``local_queue`` alone, when given) with their
        places in it and in their LocalQueues."""
        places = self._pending.get(cluster_queue, ())
        self.entries_walked += len(places)
        per_local_queue: dict[Key, int] = {}
        entries = []
        for index, place in enumerate(places):
            queue = (place[3], place[5])
            if local_queue is not None and queue != local_queue:
                continue
            wl = self._held[(place[3], place[4])][2]
            in_queue = per_local_queue.get(queue, 0)
            per_local_queue[queue] = in_queue + 1
            entries.append(PendingPosition(namespace=wl.namespace or "", name=wl.name, uid=wl.uid,
                                           local_queue=wl.queue_name, cluster_queue=cluster_queue,
                                           priority=wl.effective_priority, position_in_cluster_queue=index,
                                           position_in_local_queue=in_queue, creation_timestamp=wl.creation_timestamp))
        return entries

    # -- following the change feed -----------------------------------------------------------------

    def _follow(self) -> None:
        source = self.source
        queues = self._local_queues.read(source).keys
        if queues is None or self._queues_moved(queues):
            self._read_everything()
            return
        changed = self._workloads.read(source).keys
        if changed is None:
            self._read_everything()
            return
        self.workloads_read += len(changed)
        for namespace, name in changed:
            view = source.get(ResourceKind.WORKLOAD, name, namespace or None)
            self._put((namespace, name), view if isinstance(view, WorkloadView) else None)

    def _queues_moved(self, changed: Iterable[Key]) -> bool:
        """Whether a LocalQueue changed its ClusterQueue, came or went (the pending sets are then
        made again); a status update of one (its counters) moves nothing."""
        moved = False
        for namespace, name in changed:
            view = self.source.get(ResourceKind.LOCAL_QUEUE, name, namespace or None)
            now = view.cluster_queue if isinstance(view, LocalQueueView) else None
            if isinstance(view, LocalQueueView) != ((namespace, name) in self._cluster_queue_of) or \
                    self._cluster_queue_of.get((namespace, name)) != now:
                moved = True
        return moved

    def _read_everything(self) -> None:
        self.full_reads += 1
        source = self.source
        self._local_queues.read(source)  # the generations before the data: a change meanwhile comes again
        self._workloads.read(source)
        self._cluster_queue_of = {(q.namespace or "", q.name): q.cluster_queue
                                  for q in source.views(ResourceKind.LOCAL_QUEUE) if isinstance(q, LocalQueueView)}
        self._pending, self._held = {}, {}
        for view in source.views(ResourceKind.WORKLOAD):
            if isinstance(view, WorkloadView):
                self._put(view.key, view)

    def _put(self, key: Key, view: WorkloadView | None) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            keys = self._pending[held[0]]
            del keys[bisect_left(keys, held[1])]
            if not keys:
                del self._pending[held[0]]
        if view is None or not is_pending(view):
            return
        cluster_queue = self._cluster_queue_of.get((view.namespace or "", view.queue_name or ""))
        if cluster_queue is None:
            return  # its LocalQueue is missing: Kueue keeps it outside any ClusterQueue's heap
        place = order_key(view)
        insort(self._pending.setdefault(cluster_queue, []), place)
        self._held[key] = (cluster_queue, place, view)
