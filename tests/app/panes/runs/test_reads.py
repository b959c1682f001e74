"""The Runs pane's read after a few changes costs those changes (run_rows.py) and shows exactly what
a read of every run shows (counts, never time)."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.core.operations.recovery import perform_retry
from tau_tui.core.operations.run_status_memo import RunStatusMemo
from tau_tui.core.operations.rundocument import read_gpu_faults, read_run
from tau_tui.screens import run_rows
from tau_tui.screens.pane_reader import read_place
from tau_tui.screens.run_rows import RunRows, RunsRead
from tau_tui.screens.runs import CancelledRun
from tau_tui.widgets.table_plan import TableState, plan_rows
from tests.app.helpers import demo_backend, plain_cells
from tests.recovery_world import NS, RUN, recovery_world, running_pod

R = ResourceKind


class Reader:
    """A RunRows as the Runs pane drives it, with the table's state carried from plan to plan."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.rows = RunRows()
        self.statuses = RunStatusMemo()
        self.health = NodeHealthMemo()
        self.table = TableState(columns=6)

    def read_only(self, cancelled=None, in_parts=False) -> RunsRead:
        """A read whose rows are not put on the table (one the pane dropped)."""
        backend = self.backend
        now = backend._now()
        return self.rows.read(backend, read_place(backend), now, self.health.faults(backend.nodes(), now), self.statuses,
                              cancelled or {}, lambda *_: None, True, self.table, lambda: None,
                              waited_for=(lambda: True) if in_parts else None)

    def read(self, cancelled=None, in_parts=False) -> RunsRead:
        read = self.read_only(cancelled, in_parts)
        plan = read.plan or plan_rows(self.table, read.rows, None, read.matchable)
        self.table = plan.next_state()
        self.rows.applied(read.token)
        return read


def assert_same_as_a_full_read(reader: Reader, read: RunsRead) -> None:
    whole = Reader(reader.backend).read()
    assert whole.full
    assert [key for key, _ in read.rows] == [key for key, _ in whole.rows]
    assert {key: plain_cells(cells) for key, cells in read.rows} == {key: plain_cells(cells) for key, cells in whole.rows}
    assert list(reader.table.given) == [key for key, _ in whole.rows]
    assert {key: plain_cells(cells) for key, cells in reader.table.cells.items()} == {key: plain_cells(cells) for key, cells in whole.rows}
    assert read.statuses == whole.statuses and read.decisions == whole.decisions
    assert read.matchable == whole.matchable
    assert {state: n for state, n in read.counts.items() if n} == whole.counts
    assert read.owners.keys() == whole.owners.keys() and all(read.owners[k] is v for k, v in whole.owners.items())


def settle(world, backend, seconds: float) -> None:
    world.advance(seconds)  # the in-process cache holds what it did at once


def test_reads_after_changes_cost_the_changes_and_show_what_a_full_read_shows(tmp_path):
    """A run is admitted, runs, is preempted (failed: its retry decision moves with the clock) and
    is retried (a new run, the old one annotated), while the demo's runs stand still beside it."""
    world, backend = recovery_world(tmp_path, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    try:
        reader = Reader(backend)
        first = reader.read()
        assert first.full and reader.rows.rows_built == len(first.owners) == 1
        quiet = reader.read()  # nothing changed: no status worked out, no row built, nothing planned
        assert not quiet.full and reader.rows.rows_built == 1 and quiet.plan is not None
        assert not quiet.plan.added and not quiet.plan.writes and not quiet.plan.stale
        states = []

        def read_and_compare() -> RunsRead:
            built = reader.rows.rows_built
            read = reader.read()
            assert_same_as_a_full_read(reader, read)
            states.append(read.statuses[f"{NS}/{RUN}"].state)
            if not read.full:  # bounded by the objects changed, never by the runs there are
                assert reader.rows.index is not None
                assert reader.rows.rows_built - built <= len(reader.rows.index.moved) + len(read.owners)
            return read

        pod = running_pod(world, backend, RUN)
        assert not read_and_compare().full
        world.disrupt_pod(NS, pod.name, "PreemptionByScheduler")
        settle(world, backend, 2)
        failed = read_and_compare()
        assert not failed.full and failed.decisions[f"{NS}/{RUN}"].verdict == "wait"
        settle(world, backend, 31)  # the backoff passed: the decision moves with the clock alone
        waited = read_and_compare()
        assert not waited.full and waited.decisions[f"{NS}/{RUN}"].verdict == "retry"
        decision, results = perform_retry(backend, read_run(backend, NS, RUN, read_gpu_faults(backend, world.now())),
                                          world.now(), dry_run=False)
        assert decision.verdict == "retry" and all(r.ok for r in results)
        settle(world, backend, 5)
        retried = read_and_compare()
        assert not retried.full and f"{NS}/{decision.new_name}" in retried.owners and len(retried.owners) == 2
        for _ in range(3):  # the new run is admitted and runs; the ages tick over
            settle(world, backend, 40)
            assert not read_and_compare().full
        assert "running" in states and "failed" in states and reader.rows.full_reads == 1
    finally:
        backend.close()


def test_a_read_that_never_reached_the_table_is_followed_by_a_full_one():
    world, backend = demo_backend()
    try:
        reader = Reader(backend)
        reader.read()
        settle(world, backend, 30)
        dropped = reader.read_only()
        assert not dropped.full
        settle(world, backend, 30)
        read = reader.read()
        assert read.full
        assert_same_as_a_full_read(reader, read)
    finally:
        backend.close()


def test_a_run_gone_or_cancelled_from_the_pane_reads_every_run_again():
    world, backend = demo_backend()
    try:
        reader = Reader(backend)
        reader.read()
        job = backend.jobs()[0]
        world.store.remove(R.JOB.type, job.name, job.namespace)
        backend.cache.wait_for(lambda: backend.get(R.JOB, job.name, job.namespace) is None, 5)
        read = reader.read()
        assert read.full and f"{job.namespace}/{job.name}" not in read.owners
        assert_same_as_a_full_read(reader, read)
        # a run cancelled from the pane: read whole while it is kept (its pods and worker are looked for)
        other = backend.jobs()[0]
        assert reader.read({f"{other.namespace}/{other.name}": CancelledRun(other.uid or "")}).full
    finally:
        backend.close()


def test_a_waited_for_read_shows_its_first_runs_then_goes_on_with_the_others_from_the_same_lists(monkeypatch):
    """The pane opened with no rows: the first part's runs are rows at once, in order, and the next
    read reads only the others; every run's status is worked out once, and the read after that
    follows what changed since the first part, as after any full read."""
    monkeypatch.setattr(run_rows, "RUNS_IN_A_FIRST_PART", 3)
    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    world, backend = demo_backend()
    try:
        reader = Reader(backend)
        runs = len(backend.jobs()) + len(backend.ray_jobs())
        assert runs > 3
        first = reader.read(in_parts=True)
        assert first.reading == (3, runs) and len(first.rows) == len(first.statuses) == len(first.owners) == 3
        assert reader.rows.statuses_computed == 3 and sum(first.counts.values()) == 3
        order = [key for key, _ in first.rows]
        assert order == sorted(order, key=lambda key: (run_rows.STATE_ORDER[first.statuses[key].state], key))
        settle(world, backend, 30)  # the cluster moves on between the parts
        rest = reader.read(in_parts=True)  # goes on with the lists the first part read, whatever it is asked
        assert rest.reading is None and rest.full and len(rest.owners) == runs
        assert reader.rows.statuses_computed == runs and reader.rows.full_reads == 1
        assert set(order) <= set(rest.owners)
        after = reader.read()  # what moved since the first part: a quick read finds it
        assert not after.full and reader.rows.full_reads == 1
        assert_same_as_a_full_read(reader, after)
    finally:
        backend.close()


def test_a_read_in_parts_forgotten_half_way_starts_again_whole(monkeypatch):
    monkeypatch.setattr(run_rows, "RUNS_IN_A_FIRST_PART", 3)
    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    world, backend = demo_backend()
    try:
        reader = Reader(backend)
        assert reader.read(in_parts=True).reading is not None
        reader.rows.forget()  # a replay's seek, or the pane's reads stopped: nothing to go on from
        whole = reader.read()
        assert whole.reading is None and whole.full and reader.rows.full_reads == 2
        assert_same_as_a_full_read(reader, whole)
    finally:
        backend.close()


def test_a_read_nobody_waits_for_reads_every_run_at_once(monkeypatch):
    """A read ahead (or a refresh of a pane with rows) shows all its runs; one that a person starts
    to wait for half way (the pane opened meanwhile) shows what it has read at its next look."""
    monkeypatch.setattr(run_rows, "RUNS_IN_A_FIRST_PART", 3)
    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    world, backend = demo_backend()
    try:
        runs = len(backend.jobs()) + len(backend.ray_jobs())
        assert Reader(backend).read().reading is None
        looks: list[bool] = []  # asked once 3 runs are read, then after each run: yes at the second
        opened_meanwhile = Reader(backend)
        now = backend._now()
        read = opened_meanwhile.rows.read(
            backend, read_place(backend), now, NodeHealthMemo().faults(backend.nodes(), now), RunStatusMemo(), {},
            lambda *_: None, True, None, lambda: None, waited_for=lambda: looks.append(True) or len(looks) >= 2)
        assert read.reading == (4, runs) and len(read.rows) == 4 and len(looks) == 2
    finally:
        backend.close()
