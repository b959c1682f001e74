"""Following container streams (and a RayJob's driver) and merging their lines by timestamp into a spool."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Iterable

from .driver_follower import DriverFollower
from .follower import ContainerFollower
from .log_requests import LogRequest
from .sources import ClosableIterator, Entry, Follower, LogSource
from .spool import LogSpool

__all__ = ["ClosableIterator", "LogSource", "LogStream"]


class LogStream:
    """Streams the containers selected by a :class:`LogRequest` into a spool.

    ``state``: ``streaming`` → ``reconnecting`` (while any source resumes) →
    ``done`` (all sources ended) or ``closed``."""

    #: How long a line may wait for a slower pod before it is written anyway.
    REORDER_WINDOW = 0.3
    #: Lines handed over but not yet written beyond which a source waits (unless it holds back the
    #: merge): a source faster than the disk or the merge is slowed, never dropped, and memory stays
    #: bounded; the lines wait in the connection, where the server keeps them.
    MAX_PENDING = 10_000

    def __init__(
        self,
        source: LogSource,
        request: LogRequest,
        targets: Iterable[tuple[str, str]],
        spool: LogSpool | None = None,
        spool_dir: str | None = None,
        *,
        driver: bool = False,
        watch_run: bool = False,
    ):
        """``driver``: the RayJob's driver output comes first (its history before any container's);
        ``watch_run``: look for the run's new pods until it ends, then read every source to its end."""
        self.source = source
        self.request = request
        self.targets = list(targets)
        self.spool = spool or LogSpool(directory=spool_dir)
        self.state = "streaming"
        self.reconnects = 0
        self._stopped = threading.Event()
        self._lock = threading.Condition(threading.Lock())
        self._heap: list[Entry] = []
        self._fifo: list[bytes] = []  # one source: nothing to merge, lines go in arrival order
        self._watch_run = watch_run
        self._single = len(self.targets) == 1 and not driver and not watch_run
        pods = {p for p, _ in self.targets}
        self._pod_container_prefix = request.all_containers or len(self.targets) > len(pods)
        self._prefixed = request.prefix or len(self.targets) + int(driver) > 1
        self._followers: list[Follower] = []
        self._next_order = 0  # a source's place among equal timestamps (the driver's is 0)
        self._driver: DriverFollower | None = None
        if driver:
            self._next_order = 1
            self._driver = DriverFollower(self, self._prefix_for("driver", ""))
            self._followers.append(self._driver)
        self._later = [self._container_follower(pod, container) for pod, container in self.targets]
        self._known = set(self.targets)
        self._open = len(self._followers) + len(self._later) + (1 if (driver or watch_run) else 0)
        if not (driver or watch_run):
            self._followers += self._later
            self._later = []
        self._writer = threading.Thread(target=self._write_loop, name="tau-log-merge", daemon=True)
        self._runner = threading.Thread(target=self._run_sources, name="tau-log-run", daemon=True)

    def _prefix_for(self, pod: str, container: str) -> str:
        if not self._prefixed:
            return ""
        if pod == "driver" and not container:
            return "[driver] "
        return f"[{pod}/{container}] " if self._pod_container_prefix else f"[{pod}] "

    def _container_follower(self, pod: str, container: str) -> ContainerFollower:
        self._next_order += 1
        return ContainerFollower(self, self._next_order, pod, container, self._prefix_for(pod, container))

    def start(self) -> LogStream:
        self._writer.start()
        for follower in self._followers:
            follower.start()
        if self._driver is not None or self._watch_run:
            self._runner.start()
        return self

    # -- a run's sources: the driver's history first, new pods, the run's end ----------

    #: How long the containers wait for the driver's history at most (its ``ray job logs``).
    DRIVER_HISTORY_WAIT = 10.0
    #: How often a followed run is asked for new pods and whether it has ended.
    RUN_WATCH_INTERVAL = 1.0

    def _run_sources(self) -> None:
        try:
            if self._driver is not None:
                self._driver.history_in.wait(self.DRIVER_HISTORY_WAIT)
            self._add(self._later)
            self._later = []
            while self._watch_run and not self._stopped.wait(self.RUN_WATCH_INTERVAL):
                if self._look_at_run():
                    return
        finally:
            self._source_done(None)

    def _look_at_run(self) -> bool:
        """Start followers for the run's new pods; at its end, finish every source. True: ended."""
        try:
            ended = self.source.run_finished(self.request)
        except Exception:  # a failed read is not an end: ask again next time
            ended = False
        if self.request.containers or not self.request.ray_job:
            try:
                targets = self.source.resolve_log_targets(self.request)
            except Exception:  # no pods yet, or a failed read: ask again next time
                targets = []
            self._add([self._container_follower(p, c) for p, c in targets if (p, c) not in self._known])
        if ended:
            with self._lock:
                followers = list(self._followers)
            for follower in followers:
                follower.finish()
        return ended

    def _add(self, followers: list[ContainerFollower]) -> None:
        if not followers:
            return
        with self._lock:
            for follower in followers:
                self._known.add((follower.pod, follower.container))
                if follower not in self._later:
                    self._open += 1
                self._followers.append(follower)
        for follower in followers:
            follower.start()

    # -- from followers ----------------------------------------------------

    def _push(self, follower: Follower, batch: list[Entry]) -> None:
        """Hand one chunk's lines to the merge (one lock and one wake-up per chunk, not per line)."""
        if not batch:
            return
        single = self._single
        with self._lock:
            while (len(self._heap) + len(self._fifo) >= self.MAX_PENDING and not self._stopped.is_set()
                   and (single or follower.pushed_ns > (self._watermark() or 0))):
                self._lock.wait(0.1)  # the writer notifies when it took lines
            if single:
                self._fifo.extend(entry[4] for entry in batch)
            else:
                for entry in batch:
                    heapq.heappush(self._heap, entry)
            # Under the lock with the push: the watermark never passes a line still in a batch.
            follower.pushed_ns = batch[-1][0]
            self._lock.notify_all()

    def _source_done(self, follower: Follower | None) -> None:
        with self._lock:
            self._open -= 1
            self._lock.notify_all()

    def _note_connected(self) -> None:
        with self._lock:
            if self.state == "reconnecting" and all(f.connected or f.finished for f in self._followers):
                self.state = "streaming"

    def _note_reconnect(self, follower: Follower) -> None:
        with self._lock:
            self.reconnects += 1
            if self.state == "streaming":
                self.state = "reconnecting"

    def newest_ns(self) -> int:
        return max((f.pushed_ns for f in list(self._followers)), default=0)

    # -- merge writer ------------------------------------------------------

    def _watermark(self) -> int | None:
        """Lines at or before this time can be written: every open source has
        moved past it."""
        open_marks = [f.pushed_ns for f in self._followers if not f.finished and f.holds_watermark]
        if not open_marks:
            return None  # all closed: everything may go
        return min(open_marks)

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                ready: list[bytes] = []
                heap = self._heap
                if self._fifo:
                    ready, self._fifo = self._fifo, []
                else:
                    oldest_allowed = time.monotonic() - self.REORDER_WINDOW
                    mark = self._watermark()
                    while heap:
                        ns, _order, _seq, queued, text = heap[0]
                        if mark is None or ns <= mark or queued <= oldest_allowed:
                            heapq.heappop(heap)
                            ready.append(text)
                        else:
                            break
                finished = self._open == 0 and not heap and not self._fifo
                if ready:
                    self._lock.notify_all()  # a source may wait for room
                elif not finished:
                    self._lock.wait(self.REORDER_WINDOW / 3)
            # One write per batch, outside the merge lock: followers keep pushing meanwhile.
            self.spool.append_encoded(ready)
            if finished:
                if self.state != "closed":
                    self.state = "done"
                with self._lock:
                    self._lock.notify_all()
                return

    # -- public ------------------------------------------------------------

    @property
    def live(self) -> bool:
        """Every container stream is currently connected (or has ended)."""
        return all(f.connected or f.finished for f in self._followers)

    @property
    def driver_where(self) -> str | None:
        """Where a RayJob's driver output is read (``ray job logs`` in the head, or the log-offload
        sidecar), "waiting" before it could be; None: this stream has no driver."""
        if self._driver is None:
            return None
        return self._driver.where or "waiting"

    @property
    def done(self) -> bool:
        return self.state in ("done", "closed")

    @property
    def errors(self) -> list[str]:
        return [f"{f.pod}/{f.container}: {f.error}" if f.container else f"{f.pod}: {f.error}"
                for f in list(self._followers) if f.error]

    def wait_done(self, timeout: float) -> bool:
        self._writer.join(timeout)
        return not self._writer.is_alive()

    def close(self, delete_spool: bool = False) -> None:
        """Stop streaming (the spool stays readable unless ``delete_spool``)."""
        self._stopped.set()
        with self._lock:
            followers = list(self._followers)
        for follower in followers:
            follower.abort()
        for follower in followers:
            follower.join(timeout=5)
        self._writer.join(timeout=5)
        self.state = "closed"
        if delete_spool:
            self.spool.close(delete=True)
