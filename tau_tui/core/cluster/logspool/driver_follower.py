"""Following a RayJob's driver output, as TauGrid reads it (``ray job logs <jobId>`` in the head).

That output has no timestamps and no offsets: every read gives it whole from its first line.  So
the driver's history is read first, on its own, and its lines go before every container's (the
stream starts the containers once it is in); each later read (``--follow``) skips the lines already
taken, by count, and stamps a new line with the newest time the stream has merged so far, so it
lands where it arrived.  A broken read is read again the same way: no line lost, none twice.  A
retried RayJob's next attempt is another Ray job (another ``status.jobId``): its output starts
afresh."""

from __future__ import annotations

import threading
import time
from collections import deque

from .sources import DriverOutput, DriverUnavailable, Entry, FollowerHost


class DriverFollower(threading.Thread):
    #: Following, after a read that ended (its Ray job ended): how soon to look again (a retry's next
    #: attempt) until the stream says the run is over.
    AFTER_END = 1.0

    def __init__(self, stream: FollowerHost, prefix: str):
        super().__init__(name="tau-log-driver", daemon=True)
        self.stream = stream
        self.order = 0
        self.pod = "driver"
        self.container = ""
        self.prefix = prefix
        self._prefix_bytes = prefix.encode("utf-8", "replace")
        self.pushed_ns = 0
        self.finished = False
        self.connected = False
        self.error = ""
        self.reconnects = 0
        #: Until its history is in, the merge waits for it (and its history lines carry time 0).
        self.holds_watermark = True
        self.history_in = threading.Event()
        #: Where the output was last read: ``ray job logs`` in the head, or the log-offload sidecar.
        self.where = ""
        self._finishing = False
        self._wake = threading.Event()
        self._current: DriverOutput | None = None
        self._job_id: str | None = None
        self._seen = 0  # lines of the current Ray job's output already taken
        self._seq = 0

    def finish(self) -> None:
        """The run has ended: one last read to the end, then stop."""
        self._finishing = True
        self._wake.set()
        self.abort()

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
            self._history_done()
            self.stream._source_done(self)

    def _history_done(self) -> None:
        self.holds_watermark = False
        self.history_in.set()

    def _run(self) -> None:
        req = self.stream.request
        stopped = self.stream._stopped
        failures = 0
        while not stopped.is_set():
            history = not self.history_in.is_set()
            follow = req.follow and not history and not self._finishing
            broke = False
            try:
                output = self.stream.source.open_driver_log(req, follow=follow)
                self._current = output
                if self._finishing and follow:
                    output.close()  # finish() came while this was opening: read once more instead
                if output.job_id != self._job_id:
                    self._job_id, self._seen = output.job_id, 0
                self.where, self.connected, self.error = output.where, True, ""
                self._read(output, history)
                failures = 0
            except DriverUnavailable as exc:
                broke, self.error = True, exc.reason
                if not req.follow or (not exc.retry and self._finishing):
                    return
            except Exception as exc:  # a broken exec, a failed request: read again below
                broke, failures = True, failures + 1
                self.error = str(exc) or type(exc).__name__
            finally:
                self.connected = False
                current, self._current = self._current, None
                if current is not None:
                    try:
                        current.close()
                    except Exception:
                        pass
            if history:
                self._history_done()
            if stopped.is_set() or not req.follow:
                return
            if self._finishing and not follow and (not broke or failures > 3):
                return
            if broke:
                self.reconnects += 1
                self.stream._note_reconnect(self)
            wait = min(0.2 * 2 ** min(failures, 5), 5.0) if broke else self.AFTER_END
            if not self._finishing:
                self._wake.wait(wait)
                self._wake.clear()

    def _read(self, output: DriverOutput, history: bool) -> None:
        """Every new line of one read into the merge; the history's lines at time 0 (``tail_lines``:
        its last ones only, the only lines held in memory)."""
        tail = self.stream.request.tail_lines if history else None
        kept: deque[bytes] | None = deque(maxlen=max(tail, 0)) if tail is not None else None
        index = 0
        buffer = b""

        def take(lines: list[bytes]) -> None:
            nonlocal index
            fresh = [line.rstrip(b"\r") for line in lines[max(0, self._seen - index):]]
            index += len(lines)
            if not fresh:
                return
            self._seen = index
            if kept is not None:
                kept.extend(fresh)
            else:
                self._push(fresh, history)

        for chunk in output:
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            take(complete)
        if buffer:  # the read ended on a line without its newline: that is its last line
            take([buffer])
        if kept is not None:
            self._push(list(kept), history)

    def _push(self, lines: list[bytes], history: bool) -> None:
        if not lines:
            return
        # History first (time 0); a later line where it arrived: after everything merged so far.
        ns = 0 if history else self.stream.newest_ns() + 1
        queued = time.monotonic()
        batch: list[Entry] = []
        for line in lines:
            self._seq += 1
            batch.append((ns, self.order, self._seq, queued, self._prefix_bytes + line))
        self.stream._push(self, batch)
