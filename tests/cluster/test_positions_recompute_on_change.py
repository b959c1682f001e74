"""The position reader's work follows the changes, not the number of LocalQueues: it reads again
only the queues whose pending Workloads changed, reads old reports again one at a time (never all
of them at once when they age together), and a report read again unchanged moves nothing.
Counted in reports read, never timed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from tau_tui.core.cluster.background_positions import BackgroundPositions
from tau_tui.core.cluster.convert import workload_view
from tau_tui.core.cluster.positions import LocalQueuePositions, PendingPosition, PositionReport, PositionSource

QUEUES = 50
MAX_AGE_S = 30.0


def pending(queue: str, serial: int = 0):
    name = f"w-{queue}-{serial}"
    return workload_view({"metadata": {"name": name, "namespace": "a", "uid": name, "resourceVersion": "1",
                                       "creationTimestamp": "2025-03-05T12:00:00Z"},
                          "spec": {"queueName": queue, "priority": 0}, "status": {"conditions": []}})


class Reports:
    """A visibility API that counts what it is asked for; every queue holds its one Workload first in line."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, namespace: str, queue: str) -> PositionReport:
        with self.lock:
            self.asked.append(queue)
        entry = PendingPosition(namespace, f"w-{queue}-0", f"w-{queue}-0", queue, "cq", 0, 0, 0)
        return PositionReport("LocalQueue", queue, namespace, (entry,), PositionSource.VISIBILITY_API)


class Started(NamedTuple):
    background: BackgroundPositions
    read: Reports
    members: dict
    clock: list[float]


@pytest.fixture
def started() -> Iterator[Started]:
    """A reader of QUEUES LocalQueues, each read once, on a clock that moves only when told."""
    clock = [0.0]
    positions = LocalQueuePositions(max_age_s=MAX_AGE_S, clock=lambda: clock[0])
    background = BackgroundPositions(positions)
    read = Reports()
    members = {("a", f"lq-{i:02d}"): (pending(f"lq-{i:02d}"),) for i in range(QUEUES)}
    try:
        background.want(members, read)
        assert background.idle.wait(30)
        assert len(read.asked) == QUEUES and positions.reads == QUEUES
        yield Started(background, read, members, clock)
    finally:
        background.close()


def wait_for(condition, rounds: int = 3000) -> bool:
    """Whether ``condition`` came true (looked at every 10 ms, at most ``rounds`` times)."""
    event = threading.Event()
    for _ in range(rounds):
        if condition():
            return True
        event.wait(0.01)
    return condition()


def test_the_same_queues_wanted_again_are_not_read_again(started):
    background, read, members, _ = started
    for _ in range(20):  # every refresh of the queue pane hands its queues over
        background.want(dict(members), read)
    # a full read builds new tuples of the same views: still nothing changed
    background.want({queue: tuple(list(views)) for queue, views in members.items()}, read)
    assert background.idle.wait(30)
    assert len(read.asked) == QUEUES


def test_after_reports_aged_a_change_reads_the_changed_queues_and_at_most_one_old_one(started):
    background, read, members, clock = started
    clock[0] = MAX_AGE_S + 10  # every report is old now, all at once
    changed = [("a", "lq-03"), ("a", "lq-17"), ("a", "lq-42")]
    for queue in changed:
        members[queue] = (pending(queue[1], 1),)
    background.want(dict(members), read)
    assert background.idle.wait(30)
    assert wait_for(lambda: len(read.asked) >= QUEUES + len(changed))
    again = read.asked[QUEUES:]
    assert again[:len(changed)] == [queue for _, queue in changed]  # the changed queues first
    # the clock stands still: of the 47 old reports, one is read again, not all of them at once
    assert len(again) <= len(changed) + 1, f"{len(again)} reports read again after {len(changed)} changes"


def test_a_report_read_again_unchanged_moves_no_generation(started):
    background, read, _, clock = started
    generation = background.generation
    clock[0] = MAX_AGE_S + 10
    background.want(background_members(background), read)  # the pane looks again, nothing changed
    assert wait_for(lambda: len(read.asked) > QUEUES)  # an old report read again
    looks = background.looks
    # the thread looks for its next queue only after that read's end is counted (idle was set before)
    assert wait_for(lambda: background.looks > looks)
    assert background.generation == generation, "a report read again unchanged asked the pane to read"


def background_members(background: BackgroundPositions) -> dict:
    """The queues as the reader last held them (the same tuples)."""
    return {queue: cached.members for queue, cached in background.positions.current(
        [("a", f"lq-{i:02d}") for i in range(QUEUES)]).items()}


def test_a_refresh_that_rebuilt_the_same_members_holds_them_so_the_next_look_is_one_comparison():
    positions = LocalQueuePositions(max_age_s=MAX_AGE_S, clock=lambda: 0.0)
    read = Reports()
    members = {("a", f"lq-{i:02d}"): (pending(f"lq-{i:02d}"),) for i in range(QUEUES)}
    positions.update(members, read)
    rebuilt = {queue: tuple(list(views)) for queue, views in members.items()}  # a full read's new tuples
    reports, _ = positions.update(rebuilt, read)
    assert len(read.asked) == QUEUES  # the same Workloads: nothing read again
    assert all(reports[queue].members is rebuilt[queue] for queue in rebuilt), \
        "the report still holds the old tuple: every later look compares every Workload again"
