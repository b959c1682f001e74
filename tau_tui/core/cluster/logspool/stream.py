"""Following container streams and merging their lines by timestamp into a spool."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Protocol

from .log_requests import LogChunkRequest, LogRequest
from .spool import LogSpool
from .timestamps import _FRACTION_SCALE, _TS_LINES_RE, _epoch_seconds, ns_to_datetime, split_timestamp


class ClosableIterator(Protocol):
    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class LogSource(Protocol):
    """What a backend provides to :class:`LogStream`."""

    def resolve_log_targets(self, request: LogRequest) -> list[tuple[str, str]]:
        """``(pod, container)`` pairs in display order (Ray head first)."""

    def open_container_log(self, request: LogChunkRequest) -> ClosableIterator:
        """Raw bytes of one container log, every line prefixed by an
        RFC3339Nano timestamp and a space (``timestamps=true``)."""

    def container_finished(self, namespace: str, pod: str, container: str) -> bool:
        """True when this container will write no more (terminated, pod gone)."""


# A line waiting in the merge heap: (ns, source order, seq, queued at (monotonic), UTF-8 line). A
# plain tuple: the heap compares in C, and (ns, order, seq) is unique, so the line is never compared.
_Entry = tuple[int, int, int, float, bytes]


class _ContainerFollower(threading.Thread):
    """Reads one container; reconnects and resumes on a broken stream."""

    def __init__(self, stream: LogStream, order: int, pod: str, container: str, prefix: str):
        super().__init__(name=f"tau-log-{pod}-{container}", daemon=True)
        self.stream = stream
        self.order = order
        self.pod = pod
        self.container = container
        self.prefix = prefix
        self._prefix_bytes = prefix.encode("utf-8", "replace")
        self.last_ns = 0  # timestamp of the last emitted complete line
        self.same_ns_count = 0  # lines emitted with exactly last_ns
        self.pushed_ns = 0  # timestamp of the last line handed to the merge (the watermark reads it)
        self.finished = False
        self.reconnects = 0
        self.error = ""
        self.connected = False
        self._current: ClosableIterator | None = None
        self._seq = 0

    def abort(self) -> None:
        current = self._current
        if current is not None:
            try:
                current.close()
            except Exception:
                pass

    def run(self) -> None:
        try:
            self._run()
        finally:
            self.finished = True
            self.stream._source_done(self)

    def _run(self) -> None:
        req = self.stream.request
        source = self.stream.source
        first = True
        backoff = 0.2
        failures = 0
        while not self.stream._stopped.is_set():
            chunk_req = LogChunkRequest(
                namespace=req.namespace,
                pod=self.pod,
                container=self.container,
                previous=req.previous,
                follow=req.follow and not req.previous,
                since_time=ns_to_datetime(self.last_ns) if self.last_ns else None,
                since_seconds=req.since_seconds if first and not self.last_ns else None,
                tail_lines=req.tail_lines if first and not self.last_ns else None,
            )
            skip_before, skip_equal = self.last_ns, self.same_ns_count
            buffer = b""
            had_partial = False
            broke = False
            try:
                self._current = source.open_container_log(chunk_req)
                self.connected = True
                self.stream._note_connected()
                for chunk in self._current:
                    if self.stream._stopped.is_set():
                        break
                    buffer += chunk
                    cut = buffer.rfind(b"\n")
                    batch: list[_Entry] = []
                    queued = time.monotonic()
                    if cut >= 0:
                        complete, buffer = buffer[:cut], buffer[cut + 1 :]
                        if skip_before or not self._emit_block(complete, batch, queued):
                            for raw in complete.split(b"\n"):
                                skip_equal = self._emit(raw, skip_before, skip_equal, batch, queued)
                                if skip_equal < 0:
                                    skip_before, skip_equal = 0, 0
                    self.stream._push(self, batch)
                    if buffer or had_partial:  # most chunks end on a newline: no lock, no wake-up
                        self.stream.spool.set_partial(self, self._display(buffer) if buffer else None)
                        had_partial = bool(buffer)
                failures = 0
            except Exception as exc:  # network break, server error: resume below
                broke = True
                failures += 1
                self.error = str(exc) or type(exc).__name__
                if getattr(exc, "code", None) in (400, 401, 403, 404):
                    # Not a broken stream: no previous container, no access, pod gone.
                    self.stream.spool.set_partial(self, None)
                    if buffer:
                        self._emit_last(buffer, skip_before, skip_equal)
                    return
            finally:
                self.connected = False
                current, self._current = self._current, None
                if current is not None:
                    try:
                        current.close()
                    except Exception:
                        pass
            first = False
            if self.stream._stopped.is_set():
                return
            done = not broke and (not chunk_req.follow or source.container_finished(req.namespace, self.pod, self.container))
            if done:
                if buffer:
                    self._emit_last(buffer, skip_before, skip_equal)
                self.stream.spool.set_partial(self, None)
                return
            # Broken or ended early: drop the partial (it is sent again) and resume.
            self.stream.spool.set_partial(self, None)
            if not chunk_req.follow and failures > 5:
                self.error = f"gave up after {failures} failed attempts: {self.error}"
                return
            self.reconnects += 1
            self.stream._note_reconnect(self)
            if self.stream._stopped.wait(min(backoff * (2 ** min(failures, 5)), 5.0) if broke else 0.2):
                return

    def _emit_last(self, raw: bytes, skip_before: int, skip_equal: int) -> None:
        batch: list[_Entry] = []
        self._emit(raw, skip_before, skip_equal, batch, time.monotonic())
        self.stream._push(self, batch)

    def _emit_block(self, block: bytes, batch: list[_Entry], queued: float) -> bool:
        """Every line of ``block`` (newline-separated, none skipped) into ``batch``, when every line
        starts with a timestamp: one regex call for the block.  False (nothing added) otherwise;
        the caller then goes line by line.  Same result as :meth:`_emit` on each line."""
        parsed = _TS_LINES_RE.findall(block)
        if len(parsed) != block.count(b"\n") + 1:  # a match is anchored to one line: equal counts = all matched
            return False
        order, prefix, seq = self.order, self._prefix_bytes, self._seq
        last_ns, same = self.last_ns, self.same_ns_count
        keep_ts = self.stream.request.timestamps
        strip_cr = b"\r" in block
        append = batch.append
        for base, frac, zone, rest in parsed:
            ns = _epoch_seconds(base, zone) * 1_000_000_000
            if frac:
                ns += int(frac) * _FRACTION_SCALE[len(frac)]
            if ns == last_ns:
                same += 1
            else:
                last_ns, same = ns, 1
            if strip_cr:
                rest = rest.rstrip(b"\r")
            if keep_ts:
                rest = base + (b"." + frac if frac else b"") + zone + b" " + rest
            seq += 1
            append((ns, order, seq, queued, prefix + rest))
        self._seq, self.last_ns, self.same_ns_count = seq, last_ns, same
        return True

    def _emit(self, raw: bytes, skip_before: int, skip_equal: int, batch: list[_Entry], queued: float) -> int:
        """Add one complete line to ``batch`` unless it was already emitted
        before a reconnect.  Returns the remaining same-timestamp skip count
        (-1 once past the resume point)."""
        ns, ts_text, rest = split_timestamp(raw)
        if ns is None:
            ns = self.last_ns
        elif skip_before:
            if ns < skip_before:
                return skip_equal
            if ns == skip_before and skip_equal > 0:
                return skip_equal - 1
        if ns == self.last_ns:
            self.same_ns_count += 1
        else:
            self.last_ns, self.same_ns_count = ns, 1
        # Bytes all the way to the spool: decoding and re-encoding every line cost a third of the
        # time at 50,000 lines/s; the spool decodes (with replacement) when it is read.
        line = rest.rstrip(b"\r")
        if ts_text and self.stream.request.timestamps:
            line = ts_text + b" " + line
        self._seq += 1
        batch.append((ns, self.order, self._seq, queued, self._prefix_bytes + line))
        return -1 if skip_before else 0

    def _display(self, raw: bytes) -> str:
        _, ts_text, rest = split_timestamp(raw)
        text = rest.decode("utf-8", "replace")
        if self.stream.request.timestamps and ts_text:
            text = f"{ts_text.decode()} {text}"
        return self.prefix + text


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
    ):
        self.source = source
        self.request = request
        self.targets = list(targets)
        self.spool = spool or LogSpool(directory=spool_dir)
        self.state = "streaming"
        self.reconnects = 0
        self._stopped = threading.Event()
        self._lock = threading.Condition(threading.Lock())
        self._heap: list[_Entry] = []
        self._fifo: list[bytes] = []  # one source: nothing to merge, lines go in arrival order
        pods = {p for p, _ in self.targets}
        multi_container = len(self.targets) > len(pods)
        many = len(self.targets) > 1
        self._followers = [
            _ContainerFollower(
                self,
                order,
                pod,
                container,
                (f"[{pod}/{container}] " if multi_container else f"[{pod}] ") if many else "",
            )
            for order, (pod, container) in enumerate(self.targets)
        ]
        self._open = len(self._followers)
        self._writer = threading.Thread(target=self._write_loop, name="tau-log-merge", daemon=True)

    def start(self) -> LogStream:
        self._writer.start()
        for follower in self._followers:
            follower.start()
        return self

    # -- from followers ----------------------------------------------------

    def _push(self, follower: _ContainerFollower, batch: list[_Entry]) -> None:
        """Hand one chunk's lines to the merge (one lock and one wake-up per chunk, not per line)."""
        if not batch:
            return
        single = len(self._followers) == 1
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

    def _source_done(self, follower: _ContainerFollower) -> None:
        with self._lock:
            self._open -= 1
            self._lock.notify_all()

    def _note_connected(self) -> None:
        with self._lock:
            if self.state == "reconnecting" and all(f.connected or f.finished for f in self._followers):
                self.state = "streaming"

    def _note_reconnect(self, follower: _ContainerFollower) -> None:
        with self._lock:
            self.reconnects += 1
            if self.state == "streaming":
                self.state = "reconnecting"

    # -- merge writer ------------------------------------------------------

    def _watermark(self) -> int | None:
        """Lines at or before this time can be written: every open source has
        moved past it."""
        open_marks = [f.pushed_ns for f in self._followers if not f.finished]
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
    def done(self) -> bool:
        return self.state in ("done", "closed")

    @property
    def errors(self) -> list[str]:
        return [f"{f.pod}/{f.container}: {f.error}" for f in self._followers if f.error]

    def wait_done(self, timeout: float) -> bool:
        self._writer.join(timeout)
        return not self._writer.is_alive()

    def close(self, delete_spool: bool = False) -> None:
        """Stop streaming (the spool stays readable unless ``delete_spool``)."""
        self._stopped.set()
        for follower in self._followers:
            follower.abort()
        for follower in self._followers:
            follower.join(timeout=5)
        self._writer.join(timeout=5)
        self.state = "closed"
        if delete_spool:
            self.spool.close(delete=True)
