"""The queue pane's read at 20,000 Workloads costs what changed (issue #46), counted, never timed: a
read after 10 changes builds about 10 rows, reads no whole list, sorts nothing of the table's size,
copies no container of the table's size (the memory it allocates is bounded by the change), and its
table update swaps in the rows' next order without indexing the rows again; a position update after
one pending change reads that change and walks one ClusterQueue's pending set."""

from __future__ import annotations

import builtins
import random
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

from tau_tui.core.cluster import cache as cache_module
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.screens import queue_workloads
from tau_tui.widgets import table_plan
from tau_tui.widgets.row_index import RowIndex
from tests import builders
from tests.app.panes.queue.test_reads import Reader
from tests.builders import condition

R = ResourceKind
WORKLOADS = 20_000
T0 = datetime(2025, 3, 1, tzinfo=UTC)


def big_backend() -> SimulatedBackend:
    """The demo's simulated backend whose cache holds 20,000 Workloads in 50 LocalQueues of 10
    ClusterQueues (60 % pending), with no visibility API: positions are estimated."""
    backend = SimulatedBackend(build_world("demo"), realtime=False)
    backend.start()
    backend.use_visibility_api = False
    rng = random.Random(46)
    queues = [(f"team-{i % 10}", f"lq-{i}") for i in range(50)]
    backend.cache.replace(R.LOCAL_QUEUE, [
        {"metadata": {"name": name, "namespace": ns, "resourceVersion": "1"}, "spec": {"clusterQueue": f"cq-{i % 10}"}}
        for i, (ns, name) in enumerate(queues)])
    workloads = []
    for i in range(WORKLOADS):
        ns, queue = queues[i % len(queues)]
        admitted = rng.random() < 0.4
        obj = builders.workload(f"job-{i:05d}", ns, queue=queue, uid=f"uid-{i:05d}", conditions=[
            condition("QuotaReserved", "True"), condition("Admitted", "True")] if admitted else [
            condition("QuotaReserved", "False", reason="Pending", message="waiting for quota")])
        obj["metadata"]["resourceVersion"] = "1"
        obj["metadata"]["creationTimestamp"] = (T0 + timedelta(seconds=i)).isoformat()
        workloads.append(obj)
    backend.cache.replace(R.WORKLOAD, workloads)
    backend.cache.replace(R.EVENT, [])
    return backend


def message_changed(backend: SimulatedBackend, view, rv: str) -> None:
    """What watch_source.py's cold changes do: a new QuotaReserved message (no place in line moves)."""
    obj = dict(view.raw)
    obj["metadata"] = {**obj["metadata"], "resourceVersion": rv}
    obj["status"] = {"conditions": [condition("QuotaReserved", "False", reason="Pending", message=f"waiting ({rv})")]}
    backend.cache.apply(R.WORKLOAD, "MODIFIED", obj)


class Counted:
    """Rows built, whole lists read, sorts of many items and row indexes built, during a read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows_built = self.whole_lists = self.large_sorts = self.indexes_built = 0
        row, listed, index = queue_workloads.WorkloadRows._row, cache_module.ObjectCache.list, RowIndex.__init__
        views = getattr(cache_module.ObjectCache, "views", None)
        real_sorted = builtins.sorted

        def counted_row(rows, *args, **kwargs):
            self.rows_built += 1
            return row(rows, *args, **kwargs)

        def counted_views(cache, kind, *args):
            self.whole_lists += kind is R.WORKLOAD
            return views(cache, kind, *args)

        def counted_list(cache, kind, *args):
            self.whole_lists += kind is R.WORKLOAD
            return listed(cache, kind, *args)

        def counted_sorted(items, *args, **kwargs):
            result = real_sorted(items, *args, **kwargs)
            self.large_sorts += len(result) >= 1_000
            return result

        def counted_index(index_self, keys=()):
            self.indexes_built += len(keys) >= 1_000 and type(keys).__name__ != "OrderedKeys"
            index(index_self, keys)

        monkeypatch.setattr(queue_workloads.WorkloadRows, "_row", counted_row)
        if views is not None:
            monkeypatch.setattr(cache_module.ObjectCache, "views", counted_views)
        monkeypatch.setattr(cache_module.ObjectCache, "list", counted_list)
        for module in (queue_workloads, table_plan):  # a name the modules look up before the builtin
            monkeypatch.setattr(module, "sorted", counted_sorted, raising=False)
        monkeypatch.setattr(RowIndex, "__init__", counted_index)

    def reset(self) -> None:
        self.rows_built = self.whole_lists = self.large_sorts = self.indexes_built = 0


def settled_reader(backend: SimulatedBackend) -> Reader:
    """A reader past its first full read, with every queue's positions read twice (so no place in
    line or Δ moves unless a Workload does)."""
    reader = Reader(backend)
    assert reader.read().full
    for _ in range(3):
        assert not reader.read().full  # the positions' thread reads what this read wants
        assert reader.rows.background.idle.wait(120)
    reader.read()
    return reader


def test_a_read_after_ten_changes_at_20000_workloads_costs_about_ten_rows(monkeypatch):
    backend = big_backend()
    try:
        reader = settled_reader(backend)
        counted = Counted(monkeypatch)
        pending = [v for v in backend.cache.list(R.WORKLOAD) if v.status_word == "pending"]
        for number, view in enumerate(random.Random(7).sample(pending, 10)):
            message_changed(backend, view, f"2-{number}")
        counted.reset()
        wanted: list = []  # the positions' thread is not woken meanwhile: its memory is not this read's
        monkeypatch.setattr(reader.rows.background, "want", lambda members, read: wanted.append(len(members)))
        tracemalloc.start()
        try:
            read = reader.read_only()  # as the pane's worker reads and plans
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert wanted == [50]  # every queue's pending set handed over (by identity: no copy)
        assert not read.full and read.plan is not None
        assert len(dict(read.plan.writes)) == 10 and not read.plan.added and not read.plan.stale
        assert counted.rows_built <= 12, counted.rows_built  # the rows that changed
        assert counted.whole_lists == 0 and counted.large_sorts == 0
        # no container of the table's size is copied (a list of 20,000 keys alone is 160 KB, their cells 600 KB)
        assert peak < 100_000, f"a read of 10 changes allocated {peak:,} bytes at its peak"
        assert len(read.rows) == WORKLOADS and read.views is not None
    finally:
        backend.close()


def test_rows_that_move_are_handed_over_as_the_next_order_and_the_table_indexes_nothing(monkeypatch):
    """A change that moves a row in the order (a priority: first in its queue): the read's plan
    carries the pane's next OrderedKeys, made from that move, and a RowIndex over them indexes
    nothing (the UI thread's part of an update after a move)."""
    backend = big_backend()
    try:
        reader = settled_reader(backend)
        counted = Counted(monkeypatch)
        view = next(v for v in backend.cache.list(R.WORKLOAD) if v.status_word == "pending" and v.name == "job-19950")
        obj = dict(view.raw)
        obj["metadata"] = {**obj["metadata"], "resourceVersion": "3"}
        obj["spec"] = {**obj["spec"], "priority": 1_000}
        backend.cache.apply(R.WORKLOAD, "MODIFIED", obj)
        reader.read()  # its row, and its queue wanted: its place comes with the report read next
        assert reader.rows.background.idle.wait(120)
        counted.reset()
        before = reader.table.given
        read = reader.read()
        keys = read.plan.keys
        index = RowIndex(keys)  # what the table does with them on the UI thread
        assert counted.indexes_built == 0 and counted.whole_lists == 0 and counted.large_sorts == 0
        assert keys is not before and index.position("team-0/job-19950") < list(before).index("team-0/job-19950")
        # its queue's places moved: the rows of that one queue are built again, not the table's
        queue_rows = sum(1 for v in read.views.values() if v.queue_name == view.queue_name and v.status_word == "pending")
        assert counted.rows_built <= queue_rows + 2 < WORKLOADS // 40
    finally:
        backend.close()


def test_a_position_update_after_one_pending_change_reads_one_queues_pending_set(monkeypatch):
    backend = big_backend()
    try:
        reader = settled_reader(backend)
        counted = Counted(monkeypatch)
        view = next(v for v in backend.cache.list(R.WORKLOAD) if v.status_word == "pending")
        message_changed(backend, view, "4")
        counted.reset()
        order = getattr(backend, "pending_order", None)  # the estimated positions' kept order
        if order is not None:
            order.workloads_read = order.entries_walked = 0
        full_reads = getattr(order, "full_reads", None)
        reader.read()  # the pane wants the changed queue's report: its thread reads it
        assert reader.rows.background.idle.wait(120)
        assert counted.whole_lists == 0 and counted.large_sorts == 0
        assert order is not None
        walked, workloads_read = order.entries_walked, order.workloads_read
        cluster_queue = next(q.cluster_queue for q in backend.local_queues() if q.name == view.queue_name
                             and q.namespace == view.namespace)
        cq_pending = len(backend.pending_positions_cluster_queue(cluster_queue).entries)
        assert order.full_reads == full_reads and workloads_read == 1
        assert walked == cq_pending < WORKLOADS // 5  # that ClusterQueue's pending set, for the one report
    finally:
        backend.close()
