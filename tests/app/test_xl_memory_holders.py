"""What the app holds per row at scale, counted: a run index keeps no dict per bucket of one view,
cells that read alike (ages, deltas, reasons, priorities, status words) are one object shared by
the rows, and each Workload's key is one string however many maps hold it."""

from __future__ import annotations

import gc
import sys
from datetime import UTC, datetime

import pytest

from tau_tui.core.operations.run_index import RunIndex
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.widgets.cell_text import age, delta, one_line


@pytest.fixture
def backend():
    backend = SimulatedBackend(build_world("demo"))
    backend.start()
    assert backend.wait_synced(10)
    yield backend
    backend.close()


def tracked_dicts() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is dict)


def test_a_run_index_holds_no_dict_per_bucket_of_one(backend) -> None:
    workloads, pods, events = backend.workloads(), backend.pods(), backend.events()
    # Dicts are counted process-wide: other tests' threads (backends, informers) must not run while
    # the index is built, so no thread switch is allowed until the count is taken.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        gc.collect()
        before = tracked_dicts()
        index = RunIndex(workloads, pods, events)
        made = tracked_dicts() - before
    finally:
        sys.setswitchinterval(interval)
    buckets = sum(len(by) for by in (index._workloads_by_uid, index._pods_by_label, index._events_by_name))
    shared = sum(1 for by in (index._workloads_by_uid, index._pods_by_label, index._events_by_name)
                 for held in by.values() if isinstance(held, dict))
    assert buckets > 50
    assert made <= shared + 3, (made, shared, buckets)  # a dict only where two views share a bucket
    assert shared < buckets


def test_a_bucket_of_two_goes_back_to_one_view(backend) -> None:
    owner = next(iter(backend.jobs(tau_managed_only=False)))
    index = RunIndex(backend.workloads(), backend.pods(), backend.events())
    workloads, pods, events = index.parts(owner)
    for view in (*workloads, *pods, *events):
        index.remove(view)
    assert index.parts(owner) == ([], [], [])
    for view in (*workloads, *pods, *events):
        index.put(view)
        index.put(view)  # the same key again replaces, never doubles
    assert index.parts(owner) == (workloads, pods, events)


def test_cells_that_read_alike_are_one_string() -> None:
    assert age(125) is age(125.4)
    assert age(7 * 3600) is age(7 * 3600 + 30)
    assert delta(3) is delta(3) and delta(-2) is delta(-2)
    assert one_line("waiting  for\nquota in cq-01") is one_line("waiting for quota in cq-01")


def test_queue_rows_share_keys_status_and_priority_cells(backend) -> None:
    from tau_tui.core.cluster.positions import LocalQueuePositions
    from tau_tui.screens.queue_workloads import WorkloadRows, queue_of

    rows = WorkloadRows(LocalQueuePositions())
    queues = frozenset(queue_of(w) for w in backend.workloads())
    read = rows.read(backend, ("all",), datetime.now(UTC), set(), queues, False, None, None, lambda: None)
    cells = [cells for _, cells in read.rows]
    assert len(cells) > 10
    statuses = {id(c[0]) for c in cells}
    words = {c[0].plain for c in cells}
    assert len(statuses) == len(words)  # one status cell per word, not one per row
    priorities = [c[6] for c in cells]
    assert len({id(p) for p in priorities}) == len(set(priorities))
    rows.close()


def test_a_settle_hands_freed_heap_memory_back(monkeypatch) -> None:
    """After the collection a settle trims the C heap once (glibc keeps freed pages otherwise)."""
    import tau_tui.startup.heap as heap

    trims: list[int] = []
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "return_free_memory", lambda: trims.append(1) or True)
    monkeypatch.setattr(heap.gc, "freeze", lambda: None)
    heap.settle_heap()
    assert trims == [1]


def test_a_settle_now_and_then_collects_frozen_garbage_too(monkeypatch) -> None:
    """Frozen objects that became cycles of garbage are collected by a settle at most once per
    FULL_SETTLE_EVERY_S, not kept until the process ends."""
    import tau_tui.startup.heap as heap

    unfrozen: list[int] = []
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "return_free_memory", lambda: True)
    monkeypatch.setattr(heap.gc, "freeze", lambda: None)
    monkeypatch.setattr(heap.gc, "unfreeze", lambda: unfrozen.append(1))
    monkeypatch.setattr(heap, "_last_full_at", heap.time.monotonic() - heap.FULL_SETTLE_EVERY_S)
    heap.settle_heap()
    heap.settle_heap()  # the next one within the interval leaves the frozen objects alone
    assert unfrozen == [1]
