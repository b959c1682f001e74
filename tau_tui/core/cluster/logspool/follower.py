"""Following one container's log: reconnect and resume on a broken stream, never a line twice."""

from __future__ import annotations

import threading
import time

from .log_requests import LogChunkRequest
from .sources import ClosableIterator, Entry, FollowerHost
from .timestamps import _FRACTION_SCALE, _TS_LINES_RE, _epoch_seconds, ns_to_datetime, split_timestamp


class ContainerFollower(threading.Thread):
    """Reads one container; reconnects and resumes on a broken stream."""

    def __init__(self, stream: FollowerHost, order: int, pod: str, container: str, prefix: str):
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
        self.holds_watermark = True
        self._finishing = False
        self._current: ClosableIterator | None = None
        self._seq = 0

    def finish(self) -> None:
        """The run has ended: stop following and read once more to the end, so that every line the
        container wrote so far lands (the container may go on running, as a Ray head does)."""
        self._finishing = True
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
                follow=req.follow and not req.previous and not self._finishing,
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
                if self._finishing and chunk_req.follow:
                    self._current.close()  # finish() came while this was opening: read once more instead
                self.connected = True
                self.error = ""
                self.stream._note_connected()
                for chunk in self._current:
                    if self.stream._stopped.is_set():
                        break
                    buffer += chunk
                    cut = buffer.rfind(b"\n")
                    batch: list[Entry] = []
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
                if chunk_req.follow and _waiting_to_start(exc):
                    pass  # a new pod of a followed run: its container starts soon, read it then
                elif getattr(exc, "code", None) in (400, 401, 403, 404):
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
            if self._finishing and not chunk_req.follow:
                continue  # the finishing read came back early: once more, at once
            self.reconnects += 1
            self.stream._note_reconnect(self)
            if self.stream._stopped.wait(min(backoff * (2 ** min(failures, 5)), 5.0) if broke else 0.2):
                return

    def _emit_last(self, raw: bytes, skip_before: int, skip_equal: int) -> None:
        batch: list[Entry] = []
        self._emit(raw, skip_before, skip_equal, batch, time.monotonic())
        self.stream._push(self, batch)

    def _emit_block(self, block: bytes, batch: list[Entry], queued: float) -> bool:
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

    def _emit(self, raw: bytes, skip_before: int, skip_equal: int, batch: list[Entry], queued: float) -> int:
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




def _waiting_to_start(exc: Exception) -> bool:
    """The API's 400 for a container not started yet (``... is waiting to start: ContainerCreating``)."""
    return getattr(exc, "code", None) == 400 and "waiting to start" in str(exc)
