"""LocalQueue position reports read on a thread of their own.

A refresh that shows a queue's rows never waits for a visibility API call (0.03 to 0.2 s each on
a busy machine): the reader says which queues it shows and with which pending Workloads
(:meth:`BackgroundPositions.want`), takes the reports read so far (:meth:`reports`), and reads
again once :attr:`generation` moved (a report changed).  :meth:`want` notes the queues whose
pending Workloads changed since the last call; the thread reads those one at a time (the queues
never read first), and a report older than ``max_age_s`` again at most once every
:data:`OLD_REPORT_GAP_S`, and sleeps while none is due.  So the thread's work follows the changes,
not the number of queues: 500 LocalQueues whose reports all age at once are read again one by one."""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from tau_tui.core.cluster.positions import CachedPositions, LocalQueuePositions, PositionReport, same_members
from tau_tui.core.cluster.view_types import WorkloadView

QueueKey = tuple[str, str]
Members = tuple[WorkloadView, ...]
ReadReport = Callable[[str, str], PositionReport]
#: A report whose read failed is read again this much later.
IDLE_LOOK_S = 1.0
#: Reports only old (their queue's pending Workloads the same) are read again one at a time, at most
#: one every this many seconds: a read that finds the same report moves nothing.
OLD_REPORT_GAP_S = 0.5


class BackgroundPositions:
    """Reads ``positions``' reports on a daemon thread started by the first :meth:`want`."""

    def __init__(self, positions: LocalQueuePositions) -> None:
        self.positions = positions
        self._clock = positions.clock
        #: Moves each time a report changed (or the problems did): a reader reads again when it moved.
        self.generation = 0
        #: The problems of the queues whose last read failed (one line each), for the reader to show.
        self.problems: list[str] = []
        #: Times the thread looked for a report to read (tests bound its work by it).
        self.looks = 0
        self._wake = threading.Condition()
        self._members: dict[QueueKey, Members] = {}
        self._read: ReadReport | None = None
        #: Queues with no report yet, then queues whose pending Workloads changed (ordered sets).
        self._unread: OrderedDict[QueueKey, None] = OrderedDict()
        self._changed: OrderedDict[QueueKey, None] = OrderedDict()
        #: (when a queue's report is old, or its failed read is tried again; queue): a heap whose
        #: entries stay until they come up, kept only while ``_due_at`` still names that time
        self._old: list[tuple[float, QueueKey]] = []
        self._due_at: dict[QueueKey, float] = {}
        self._next_old_read = 0.0
        self._failed: dict[QueueKey, str] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Set while no report is due for what was last wanted but old ones (tests wait on it).
        self.idle = threading.Event()

    def want(self, members: Mapping[QueueKey, Sequence[WorkloadView]], read: ReadReport) -> None:
        """The queues shown now and their pending Workloads, read with ``read``.  Costs a comparison
        per queue (by identity: a reader keeps each queue's tuple until one of its Workloads changes)."""
        with self._wake:
            if self._closed:
                return
            before = self._members
            wanted: dict[QueueKey, Members] = {}
            for queue, pending in members.items():
                now = pending if isinstance(pending, tuple) else tuple(pending)
                wanted[queue] = now
                previous = before.get(queue)
                if previous is not None:
                    if not same_members(previous, now):
                        self._changed[queue] = None
                    continue
                self._first_wanted(queue, now)
            for queue in before.keys() - wanted.keys():  # no longer shown: not read
                self._unread.pop(queue, None)
                self._changed.pop(queue, None)
                self._due_at.pop(queue, None)
                self._failed.pop(queue, None)
            self._members, self._read = wanted, read
            if self._unread or self._changed:
                self.idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tau-positions", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _first_wanted(self, queue: QueueKey, members: Members) -> None:
        """A queue this reader did not want before: read now, unless its report (read by a refresh
        of its own) is for these members; that one is read again once old."""
        held = self.positions.holds(queue)
        if held is None:
            self._unread[queue] = None
        elif not same_members(held.members, members):
            self._changed[queue] = None
        else:
            checked_at = self.positions.checked_at(queue)
            self._due(queue, (checked_at if checked_at is not None else self._clock()) + self.positions.max_age_s)

    def _due(self, queue: QueueKey, at: float) -> None:
        self._due_at[queue] = at
        heapq.heappush(self._old, (at, queue))

    @property
    def started(self) -> bool:
        """Whether a reader wanted reports yet (its thread runs)."""
        return self._thread is not None

    def reports(self, queues: Mapping[QueueKey, object]) -> dict[QueueKey, CachedPositions]:
        """The reports read so far for ``queues`` (any thread; no read)."""
        return self.positions.current(queues)

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self.idle.set()

    def _next(self) -> tuple[QueueKey, Members, ReadReport] | float | None:
        """Under ``_wake``: the queue to read now, or how long until one is due (None: none is)."""
        self.looks += 1
        read = self._read
        if read is None:
            return None
        for due in (self._unread, self._changed):
            if due:
                queue = due.popitem(last=False)[0]
                return queue, self._members[queue], read
        old = self._old
        while old and self._due_at.get(old[0][1]) != old[0][0]:
            heapq.heappop(old)  # read since, or no longer wanted
        if not old:
            return None
        now = self._clock()
        at = max(old[0][0], self._next_old_read)
        if at > now:
            return at - now
        queue = heapq.heappop(old)[1]
        del self._due_at[queue]
        self._next_old_read = now + OLD_REPORT_GAP_S
        return queue, self._members[queue], read

    def _pick(self) -> tuple[QueueKey, Members, ReadReport] | None:
        """The next queue to read, once one is due (None: closed)."""
        with self._wake:
            while not self._closed:
                picked = self._next()
                if isinstance(picked, tuple):
                    return picked
                if not self._failed:
                    self.idle.set()
                self._wake.wait(picked)
            return None

    def _run(self) -> None:
        while (picked := self._pick()) is not None:
            queue, members, read = picked
            changed, problem = self.positions.read_queue(queue, members, read)
            with self._wake:
                if queue not in self._members:
                    self._failed.pop(queue, None)
                elif problem is not None:
                    self._failed[queue] = problem
                    self._due(queue, self._clock() + IDLE_LOOK_S)
                else:
                    self._failed.pop(queue, None)
                    if queue not in self._changed:  # changed again meanwhile: read again first
                        self._due(queue, self._clock() + self.positions.max_age_s)
                problems = list(self._failed.values())
                if changed or problems != self.problems:
                    self.problems = problems
                    self.generation += 1
