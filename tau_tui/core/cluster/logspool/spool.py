"""An append-only spool file with a byte-offset index of line starts, read back and searched by line."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate

#: Spool files and saved logs are created with at most this mode (the umask may narrow it).
SPOOL_MODE = 0o600

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
