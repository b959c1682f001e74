"""Kubelet's RFC3339Nano line prefixes, to nanoseconds and back."""

from __future__ import annotations

import re
from calendar import timegm
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import lru_cache

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


def without_timestamps(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A kubelet ``--timestamps`` stream with each line's prefix taken off (lines cut across chunks
    are put together first)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        if lines:
            yield b"".join(split_timestamp(line)[2] + b"\n" for line in lines)
    if buffer:
        yield split_timestamp(buffer)[2]


def format_timestamp_ns(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(secs, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac:09d}Z"


def ns_to_datetime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
