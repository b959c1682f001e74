"""Log streams into append-only spool files (no line cap, no dropped line).

A :class:`LogSpool` is a file plus a byte-offset index of line starts (like
toolong): any line is read back by one seek, memory stays small however long
the log grows, and :meth:`LogSpool.search` / :meth:`LogSpool.save` work on the
file.  A :class:`LogStream` fills a spool from one or more container streams:

* every container is requested with server timestamps, so lines of several
  pods are merged by time (each line prefixed ``[pod/container]``) and a
  broken stream resumes from the last timestamp without duplicating lines;
* an unterminated last line is visible as a provisional line and replaced by
  the complete line when its newline arrives;
* text is stored and returned verbatim: nothing here interprets markup or
  escape sequences (widgets must render it as plain text).
"""

from __future__ import annotations

import atexit
import heapq
import os
import re
import shutil
import tempfile
import threading
import time
from array import array
from bisect import bisect_right
from calendar import timegm
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import accumulate
from typing import Protocol

# --------------------------------------------------------------------------
# What to stream
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogRequest:
    """What to stream.  Give exactly one of ``pods``, ``job`` or ``ray_job``.

    * ``job``: pods with label ``job-name=<job>``;
    * ``ray_job``: head and workers of ``status.rayClusterName`` via
      ``ray.io/cluster`` (head first, ``ray.io/node-type``);
    * several pods/containers are merged by timestamp, each line prefixed
      ``[pod/container]``.

    ``tail_lines=None`` means all lines; ``since_seconds`` limits age."""

    namespace: str
    pods: tuple[str, ...] = ()
    job: str | None = None
    ray_job: str | None = None
    container: str | None = None
    all_containers: bool = False
    previous: bool = False
    follow: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    tail_lines: int | None = None


@dataclass(frozen=True, slots=True)
class LogChunkRequest:
    """One container stream as the backend's raw log source sees it
    (always requested with server timestamps, for merge and resume)."""

    namespace: str
    pod: str
    container: str
    previous: bool = False
    follow: bool = False
    since_time: datetime | None = None
    since_seconds: int | None = None
    tail_lines: int | None = None


# --------------------------------------------------------------------------
# Timestamps (nanosecond precision: kubelet writes RFC3339Nano)
# --------------------------------------------------------------------------

_TS_RE = re.compile(rb"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) ")
# The same timestamp on every line of a block at once (one C call per chunk, not a match per line).
_TS_LINES_RE = re.compile(rb"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) ([^\n]*)$", re.M)
_FRACTION_SCALE = tuple(10 ** (9 - digits) for digits in range(10))


@lru_cache(maxsize=1024)
def _epoch_seconds(base: bytes, zone: bytes) -> int:
    # strptime costs ~10 us; a log holds many lines per second, so each second is parsed once.
    secs = timegm(datetime.strptime(base.decode(), "%Y-%m-%dT%H:%M:%S").timetuple())
    if zone != b"Z":
        sign = 1 if zone[:1] == b"+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        secs -= sign * (hours * 3600 + minutes * 60)
    return secs


def split_timestamp(line: bytes) -> tuple[int | None, bytes, bytes]:
    """``(epoch_ns, timestamp_text, rest)`` of a kubelet ``--timestamps`` line."""
    m = _TS_RE.match(line)
    if not m:
        return None, b"", line
    base, frac, zone = m.groups()
    ns = _epoch_seconds(base, zone) * 1_000_000_000
    if frac:
        ns += int(frac.ljust(9, b"0"))
    end = m.end()
    return ns, line[: end - 1], line[end:]


def format_timestamp_ns(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(secs, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac:09d}Z"


def ns_to_datetime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)


# --------------------------------------------------------------------------
# Spool
# --------------------------------------------------------------------------


#: Spool files and saved logs are created with at most this mode (the umask may narrow it).
SPOOL_MODE = 0o600

_process_dirs: dict[str, str] = {}  # spool base -> this process's directory in it
_process_dirs_lock = threading.Lock()


def _process_tag(pid: int) -> str | None:
    """``pid-starttime``: a PID reused by a later process does not look alive to us.
    None when the process does not exist (or /proc is missing: then only the PID)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return f"{pid}-{int(fields[19])}"  # field 22 of stat: start time in clock ticks
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else _pid_alive_tag(pid)
    except (OSError, IndexError, ValueError):
        return _pid_alive_tag(pid)


def _pid_alive_tag(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return str(pid)


def clean_stale_spools(base: str | os.PathLike[str]) -> list[str]:
    """Remove the spool directories of processes that are gone (or whose PID was reused),
    and loose spool files of the old one-directory layout.  Returns what was removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return removed
    for entry in entries:
        path = entry.path
        if entry.is_dir(follow_symlinks=False):
            pid_text = entry.name.split("-", 1)[0]
            if not pid_text.isdigit():
                continue
            tag = _process_tag(int(pid_text))
            if tag is not None and (tag == entry.name or "-" not in entry.name or "-" not in tag):
                continue  # its owner is alive
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif entry.name.startswith("tau-log-") and entry.name.endswith(".log"):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def process_spool_dir(base: str | os.PathLike[str]) -> str:
    """This process's spool directory under ``base`` (0700, named ``pid-starttime``):
    created on first use after removing stale ones, and removed when the process exits
    (atexit; SIGTERM/SIGHUP reach it through :func:`tau_tui.core.cluster.credentials.install_exit_on_signals`).
    Whatever escapes (SIGKILL, a crash) is removed by the next start's :func:`clean_stale_spools`."""
    key = os.path.abspath(base)
    with _process_dirs_lock:
        existing = _process_dirs.get(key)
        if existing is not None and os.path.isdir(existing):
            return existing
        os.makedirs(key, mode=0o700, exist_ok=True)
        clean_stale_spools(key)
        directory = os.path.join(key, _process_tag(os.getpid()) or str(os.getpid()))
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        if not _process_dirs:
            atexit.register(remove_process_spool_dirs)
        _process_dirs[key] = directory
        return directory


def remove_process_spool_dirs() -> None:
    """Remove every spool directory this process made (its spools with them)."""
    with _process_dirs_lock:
        directories = list(_process_dirs.values())
        _process_dirs.clear()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


class LogSpool:
    """Append-only file of lines with a byte-offset index."""

    def __init__(self, path: str | None = None, directory: str | None = None):
        if path is None:
            fd, path = tempfile.mkstemp(prefix="tau-log-", suffix=".log", dir=directory)
            os.close(fd)
        self.path = path
        # 0600: logs can hold workload data; only this user reads the spool.
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, SPOOL_MODE)
        os.chmod(path, SPOOL_MODE)
        self._lock = threading.Lock()
        # Start of each line, plus end of file: 4 bytes a line until the file passes 4 GiB (then 8),
        # half the memory of a 64-bit index for the common case (3 M lines: 12 MB, not 24 MB).
        self._offsets = array("I", [0])
        self._partials: dict[object, str] = {}
        self._changed = threading.Condition(self._lock)
        self.closed = False

    # writing

    def append_line(self, text: str) -> None:
        self.append_lines((text,))

    def append_encoded(self, lines: list[bytes]) -> int:
        """Append UTF-8 lines that hold no newline (what a log stream hands over) with one write.
        Bytes are stored as they came; readers decode with replacement."""
        if not lines:
            return 0
        data = b"\n".join(lines) + b"\n"
        with self._lock:
            written = 0
            while written < len(data):  # a short write (large batch, signal) continues
                written += os.write(self._fd, data[written:])
            if self._offsets.typecode == "I" and self._offsets[-1] + len(data) > 0xFFFF_FFFF:
                self._offsets = array("Q", self._offsets)  # readers holding the old array keep valid lines
            ends = accumulate(map(len, lines), lambda end, size: end + size + 1, initial=self._offsets[-1])
            next(ends)  # the current end, already in the index
            self._offsets.extend(ends)
            self._changed.notify_all()
        return len(lines)

    def append_lines(self, texts: Iterable[str]) -> int:
        """Append several lines with one write; returns how many."""
        return self.append_encoded([text.replace("\n", " ").encode("utf-8", "replace") for text in texts])

    def set_partial(self, source: object, text: str | None) -> None:
        """Show (or with None, clear) an unterminated line of ``source``."""
        with self._lock:
            if text is None:
                self._partials.pop(source, None)
            else:
                self._partials[source] = text
            self._changed.notify_all()

    # reading

    @property
    def committed_count(self) -> int:
        with self._lock:
            return len(self._offsets) - 1

    @property
    def line_count(self) -> int:
        """Committed lines plus visible partial lines."""
        with self._lock:
            return len(self._offsets) - 1 + len(self._partials)

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._offsets[-1]

    def line(self, index: int) -> str:
        return self.lines(index, index + 1)[0]

    def lines(self, start: int = 0, stop: int | None = None) -> list[str]:
        with self._lock:
            committed = len(self._offsets) - 1
            partials = list(self._partials.values())
            total = committed + len(partials)
            if stop is None or stop > total:
                stop = total
            if start < 0:
                start = max(0, total + start)
            out: list[str] = []
            if start < min(stop, committed):
                end = min(stop, committed)
                begin_off, end_off = self._offsets[start], self._offsets[end]
                data = os.pread(self._fd, end_off - begin_off, begin_off)
                out = data.decode("utf-8", "replace").split("\n")[:-1]
            for index in range(max(start, committed), stop):
                out.append(partials[index - committed])
            return out

    def search(self, pattern: str, *, regex: bool = False, ignore_case: bool = True, start: int = 0) -> list[int]:
        """Indexes of lines matching ``pattern`` (plain substring by default), ascending.

        The results are those of matching every line on its own; the file is scanned in blocks of
        whole lines (see :meth:`_search_block`), never line by line in Python."""
        flags = re.IGNORECASE if ignore_case else 0
        rx = re.compile(pattern if regex else re.escape(pattern), flags)
        with self._lock:
            committed = len(self._offsets) - 1
            partials = list(self._partials.values())
        hits: list[int] = []
        start = max(0, start)
        # Patterns whose block-wide match could differ from a per-line one go line by line: a plain
        # pattern holding "\n" (no line contains one), anchors at the string (\A, \Z) and look-arounds
        # (they would see the neighbouring line's "\n").
        per_line = "\n" in pattern if not regex else any(t in pattern for t in ("\\A", "\\Z", "(?<", "(?=", "(?!"))
        literal = _required_literal(rx) if regex else None
        line = start
        while line < committed:
            stop = self._block_end(line, committed)
            if per_line:
                hits.extend(line + i for i, text in enumerate(self.lines(line, stop)) if rx.search(text))
            else:
                hits.extend(self._search_block(rx, None if regex else pattern, line, stop, literal))
            line = stop
        hits.extend(committed + i for i, text in enumerate(partials) if committed + i >= start and rx.search(text))
        return hits

    #: Bytes read per step of a search.
    SEARCH_BLOCK = 8 << 20

    def _block_end(self, first: int, committed: int) -> int:
        """The line after the last whole line within SEARCH_BLOCK bytes of line ``first`` (at least one line)."""
        offsets = self._offsets
        limit = offsets[first] + self.SEARCH_BLOCK
        return max(first + 1, min(committed, bisect_right(offsets, limit, first, committed + 1) - 1))

    def _search_block(self, rx: re.Pattern[str], plain: str | None, first: int, stop: int,
                      literal: str | None = None) -> list[int]:
        """Matching lines among ``first..stop``.  A plain pattern on an all-ASCII block is found with
        bytes.find (after bytes.lower when ignoring case: on ASCII text that is exactly re.IGNORECASE);
        a regex with a ``literal`` every match contains is found the same way and each line holding
        the literal is confirmed with the regex; otherwise the decoded block is searched with
        MULTILINE and each candidate confirmed on its own line. After a hit the scan resumes at the
        next line, so a line counts once."""
        offsets = self._offsets
        with self._lock:
            if self.closed:
                return []
            begin = offsets[first]
            data = os.pread(self._fd, offsets[stop] - begin, begin)
        hits: list[int] = []
        needle_text = plain if plain is not None else literal
        if needle_text is not None and needle_text.isascii() and data.isascii():
            needle = needle_text.encode()
            haystack = data
            if rx.flags & re.IGNORECASE:
                haystack, needle = data.lower(), needle.lower()
            pos = haystack.find(needle)
            while pos >= 0:
                line = bisect_right(offsets, begin + pos, first, stop + 1) - 1
                start, end = offsets[line] - begin, offsets[line + 1] - begin
                if plain is not None or rx.search(data[start:end - 1].decode()):
                    hits.append(line)
                pos = haystack.find(needle, end)
            return hits
        text = data.decode("utf-8", "replace")  # exactly what lines() returns for these lines
        block_rx = re.compile(rx.pattern, rx.flags | re.MULTILINE)
        pos, line, counted_to = 0, first, 0
        while pos < len(text):
            m = block_rx.search(text, pos)
            if m is None or m.start() >= len(text):
                break
            line += text.count("\n", counted_to, m.start())
            line_start = text.rfind("\n", 0, m.start()) + 1
            line_end = text.find("\n", m.start())
            if rx.search(text[line_start:line_end]):  # a slice: with pos=, "^" would not match there
                hits.append(line)
            pos = counted_to = line_end + 1
            line += 1
        return hits

    def save(self, path: str) -> int:
        """Copy every line (partials included, as final lines) to ``path``; returns lines written."""
        with self._lock:
            size = self._offsets[-1]
            committed = len(self._offsets) - 1
            partials = list(self._partials.values())
        tmp = f"{path}.tmp-{os.getpid()}"
        # Created with the spool's mode, so the user's umask still applies but the copy
        # is never readable by more people than the spool was.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SPOOL_MODE)
        try:
            with os.fdopen(fd, "wb") as out:
                written = 0
                while written < size:
                    block = os.pread(self._fd, min(1 << 20, size - written), written)
                    if not block:
                        break
                    out.write(block)
                    written += len(block)
                for text in partials:
                    out.write(text.encode("utf-8", "replace") + b"\n")
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return committed + len(partials)

    def wait_for_lines(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._offsets) - 1 + len(self._partials) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def close(self, delete: bool = True) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            os.close(self._fd)
        if delete:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def _required_literal(rx: re.Pattern[str]) -> str | None:
    """The longest run of plain characters in the top-level sequence of ``rx`` (3 or more), which
    every match contains: a search finds the lines holding it with bytes.find and runs the regex on
    those lines only (as grep does).  None when there is no such run, e.g. a top-level alternation."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python >= 3.11
        from re._constants import LITERAL  # type: ignore[import-not-found]

        parsed = sre_parse.parse(rx.pattern, rx.flags)
    except Exception:  # noqa: BLE001 - an internal parser changed: search without the shortcut
        return None
    if parsed.state.flags & re.VERBOSE:
        return None
    best, run = "", []
    for op, arg in [*parsed.data, (None, None)]:
        if op is LITERAL:
            run.append(chr(arg))
        else:
            best, run = max(best, "".join(run), key=len), []
    return best if len(best) >= 3 else None


# --------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------


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


def save_spool(spool: LogSpool, path: str) -> int:
    """Save a spool to ``path`` (atomic replace); returns the line count."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    return spool.save(path)


def _current_umask() -> int | None:
    """Read without os.umask(), which would change it for every thread meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def save_narrowed(path: str) -> str | None:
    """If the user's umask alone would have let more people read a saved file than
    its mode now does, say so (``"mode 0600 (umask 022 allows 0644)"``); else None."""
    umask = _current_umask()
    if umask is None:
        return None
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return None
    wanted = 0o666 & ~umask
    if wanted & ~mode:
        return f"mode {mode:04o}, as private as the log spool (your umask {umask:03o} allows {wanted:04o})"
    return None


__all__ = ["LogSpool", "LogStream", "LogSource", "split_timestamp", "format_timestamp_ns", "save_spool",
           "SPOOL_MODE", "clean_stale_spools", "process_spool_dir", "remove_process_spool_dirs", "save_narrowed"]
