"""The queue pane's workloads read after a few changes costs those changes (queue_workloads.py), and
shows exactly what a read of every Workload shows."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.positions import LocalQueuePositions
from tau_tui.screens.pane_reader import read_place
from tau_tui.screens.queue_workloads import WorkloadRows, WorkloadsRead
from tau_tui.widgets.table_plan import TableState, plan_rows
from tests.app.helpers import demo_backend, plain_cells

R = ResourceKind


class Reader:
    """A WorkloadRows as the queue pane drives it, with the table's state carried from plan to plan."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.rows = WorkloadRows(LocalQueuePositions())
        self.table = TableState(columns=8)

    def read_only(self) -> WorkloadsRead:
        """A read whose rows are not put on the table (one the pane dropped)."""
        backend = self.backend
        held = {cq.name for cq in backend.cluster_queues() if cq.stop_policy != "None"} | {
            f"{lq.namespace}/{lq.name}" for lq in backend.local_queues() if lq.stop_policy != "None"}
        queues = frozenset((lq.namespace or "", lq.name) for lq in backend.local_queues())
        return self.rows.read(backend, read_place(backend), backend._now(), held, queues, False, None, self.table,
                              lambda: None)

    def read(self) -> WorkloadsRead:
        read = self.read_only()
        plan = read.plan or plan_rows(self.table, read.rows, None, read.matchable)
        self.table = plan.next_state()
        self.rows.applied(read.token)
        return read


def positions_read(reader: Reader) -> None:
    """Until the position reports wanted are read (on their own thread)."""
    assert reader.rows.background.idle.wait(30)


def same_as_a_full_read(reader: Reader) -> WorkloadsRead:
    """Read; once the position reports it asked for came, read again and check the table then holds
    what a reader that reads every Workload shows.  Returns the first read."""
    first = reader.read()
    if reader.rows.quick_reads:
        positions_read(reader)
        read = reader.read()
        assert not read.full
        positions_read(reader)  # no report is read while the reference reads (it writes no history)
    else:
        read = first
    tracker = reader.backend.tracker
    record = tracker.record
    tracker.record = lambda *_args: None  # the pane is the one reader of positions: this one adds no history
    try:
        whole = Reader(reader.backend).read()
    finally:
        tracker.record = record
    assert [key for key, _ in read.rows] == [key for key, _ in whole.rows]
    assert {key: plain_cells(cells) for key, cells in read.rows} == {key: plain_cells(cells) for key, cells in whole.rows}
    assert list(reader.table.given) == [key for key, _ in whole.rows]
    assert {key: plain_cells(cells) for key, cells in reader.table.cells.items()} == {key: plain_cells(cells) for key, cells in whole.rows}
    assert read.matchable == whole.matchable and read.counts == whole.counts and read.views == whole.views
    return first


def pending_workloads(backend):
    return [w for w in backend.workloads() if w.status_word == "pending"]


def test_reads_after_changes_cost_the_changes_and_show_what_a_full_read_shows():
    world, backend = demo_backend()
    reader = Reader(backend)
    first = reader.read()
    assert first.full and reader.rows.full_reads == 1
    again = same_as_a_full_read(reader)  # nothing moved: a read of nothing
    assert not again.full and again.plan is not None and not again.plan.writes and not again.plan.added
    # a Workload moved to a LocalQueue that does not exist (the side-by-side benchmark's change): its
    # row moves, and its old queue's positions are read again
    moved = pending_workloads(backend)[0]
    backend._api_patch(R.WORKLOAD.type, moved.name, moved.namespace, {"spec": {"queueName": "q-1"}}, False)
    read = same_as_a_full_read(reader)
    assert not read.full and read.plan is not None and f"{moved.namespace}/{moved.name}" in dict(read.plan.writes)
    # a label only: its queue's positions are read again (its pending set is a new one); only cells of
    # that queue can move (the place-in-line change, now that the place was seen twice)
    labelled = pending_workloads(backend)[-1]
    backend._api_patch(R.WORKLOAD.type, labelled.name, labelled.namespace, {"metadata": {"labels": {"x": "y"}}}, False)
    read = same_as_a_full_read(reader)
    assert not read.full and read.plan is not None and not read.plan.added and not read.plan.stale
    queue_rows = {key for key, wl in read.views.items() if wl.queue_name == labelled.queue_name}
    assert {key for key, _ in read.plan.writes} <= queue_rows
    # the cluster runs on: admissions, finished runs, new Workloads, ages ticking over, events
    for _ in range(6):
        world.advance(45)
        read = same_as_a_full_read(reader)
        assert not read.full
    # a Workload deleted: its row goes
    gone = pending_workloads(backend)[1]
    backend._api_delete(R.WORKLOAD.type, gone.name, gone.namespace, False)
    read = same_as_a_full_read(reader)
    assert not read.full and read.plan is not None and read.plan.stale == [f"{gone.namespace}/{gone.name}"]
    assert reader.rows.full_reads == 1


def test_a_read_that_never_reached_the_table_is_followed_by_a_full_one():
    world, backend = demo_backend()
    reader = Reader(backend)
    reader.read()
    world.advance(30)
    dropped = reader.read_only()
    assert not dropped.full  # read, but its rows never put on the table (a read the pane dropped)
    world.advance(30)
    read = same_as_a_full_read(reader)
    assert read.full


def test_a_queue_held_or_an_unknown_change_reads_every_workload_again():
    world, backend = demo_backend()
    reader = Reader(backend)
    reader.read()
    queue = backend.local_queues()[0]
    backend._api_patch(R.LOCAL_QUEUE.type, queue.name, queue.namespace, {"spec": {"stopPolicy": "Hold"}}, False)
    read = same_as_a_full_read(reader)
    assert read.full and reader.rows.full_reads == 2  # every row of that queue reads "held"
    reader.rows._workload_changes.forget()  # its cursor says "read everything" (a journal that does not reach back)
    read = same_as_a_full_read(reader)
    assert read.full and reader.rows.full_reads == 3


def test_a_sorted_table_is_planned_whole_and_the_rest_stays_a_read_of_the_changes():
    world, backend = demo_backend()
    reader = Reader(backend)
    reader.read()
    reader.table = TableState(reader.table.cells, reader.table.source, 8, sort_index=3, sort_reverse=False,
                              given=reader.table.given)  # sorted by name
    world.advance(30)
    read = reader.read()
    assert not read.full and read.plan is None  # the pane plans every row (the table sorts them)
