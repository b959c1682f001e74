"""LocalQueue position reports read on a thread of their own.

A refresh that shows a queue's rows never waits for a visibility API call (0.03 to 0.2 s each on
a busy machine): the reader says which queues it shows and with which pending Workloads
(:meth:`BackgroundPositions.want`), takes the reports read so far (:meth:`reports`), and reads
again once :attr:`generation` moved (a report arrived).  The thread reads one report at a time,
the queues never read first, then those whose pending Workloads changed, then those only old
(``LocalQueuePositions.update``), and rests while none is due."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from tau_tui.core.cluster.positions import CachedPositions, LocalQueuePositions, PositionReport
from tau_tui.core.cluster.view_types import WorkloadView

QueueKey = tuple[str, str]
#: With nothing due, the thread looks again this often (a report ages out after ``max_age_s``).
IDLE_LOOK_S = 1.0


class BackgroundPositions:
    """Reads ``positions``' reports on a daemon thread started by the first :meth:`want`."""

    def __init__(self, positions: LocalQueuePositions) -> None:
        self.positions = positions
        #: Moves each time a report was read (or failed): a reader reads again when it moved.
        self.generation = 0
        #: The problems of the last reads (one line each), for the reader to show.
        self.problems: list[str] = []
        self._wake = threading.Condition()
        self._wanted: tuple[Mapping[QueueKey, Sequence[WorkloadView]], Callable[[str, str], PositionReport]] | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Set while the thread rests with no report due for what was last wanted (tests wait on it).
        self.idle = threading.Event()

    def want(self, members: Mapping[QueueKey, Sequence[WorkloadView]], read: Callable[[str, str], PositionReport]) -> None:
        """The queues shown now and their pending Workloads (a copy is kept), read with ``read``."""
        with self._wake:
            if self._closed:
                return
            self._wanted = (dict(members), read)
            self.idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tau-positions", daemon=True)
                self._thread.start()
            self._wake.notify()

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

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed and self._wanted is None:
                    self._wake.wait()
                if self._closed:
                    return
                wanted = self._wanted
            assert wanted is not None
            members, read = wanted
            reads = self.positions.reads
            _, problems = self.positions.update(members, read, reads_at_most=1)
            read_one = self.positions.reads != reads
            if read_one or problems != self.problems:
                self.problems = problems
                self.generation += 1
            if read_one:
                continue  # more may be due
            with self._wake:  # nothing due, or a read failed: rest until told of other queues
                if not self._closed and self._wanted is wanted:
                    if not problems:
                        self.idle.set()
                    self._wake.wait(IDLE_LOOK_S)
