"""The replay's clock: where in the recording it stands, how fast it plays, whether it is paused,
and the ``:seek`` words (``03:12``, ``03:12:30``, ``+90s``, ``-2m``, ``start``, ``end``)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from tau_tui.core.operations.recording.format import instant

#: The speeds ``+`` and ``-`` step through.
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
_CLOCK_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_OFFSET = re.compile(r"^([+-]?)((?:\d+h)?(?:\d+m)?(?:\d+(?:\.\d+)?s?)?)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")


@dataclass(frozen=True)
class ReplayStatus:
    """What the replay bar shows."""

    file: str
    position: datetime
    start: datetime
    end: datetime
    speed: float
    paused: bool
    #: The recording was cut short (the recorder was killed): it ends at ``end``.
    truncated: bool

    @property
    def elapsed_s(self) -> float:
        return (self.position - self.start).total_seconds()

    @property
    def length_s(self) -> float:
        return (self.end - self.start).total_seconds()


class ReplayClock:
    """Recorded time, moved only by the replay (paused at the start until told to play)."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end
        self.position = start
        self.speed = 1.0
        self.paused = True
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return instant(self.position)

    def move_to(self, t: float) -> float:
        """Clamp ``t`` into the recording and stand there; returns where it stands."""
        with self._lock:
            self.position = min(max(t, self.start), self.end)
            return self.position

    def target_after(self, wall_seconds: float) -> float | None:
        """Where playing for ``wall_seconds`` leads (None while paused)."""
        with self._lock:
            if self.paused:
                return None
            return min(self.end, self.position + wall_seconds * self.speed)

    def faster(self) -> float:
        with self._lock:
            self.speed = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])
            return self.speed

    def slower(self) -> float:
        with self._lock:
            self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])
            return self.speed


def parse_seek(text: str, position: float, start: float, end: float) -> float:
    """A ``:seek`` argument as recorded seconds.  ``HH:MM[:SS]`` is a UTC time of day within the
    recording; ``+90s``/``-2m``/``+1m30s`` move from the position; ``90s``/``5m`` are offsets from
    the start; ``start`` and ``end``.  Raises ValueError with what to type instead."""
    word = text.strip().lower()
    span = f"{instant(start):%H:%M:%S}–{instant(end):%H:%M:%S} UTC"
    if word in ("start", "begin", "0"):
        return start
    if word == "end":
        return end
    clock = _CLOCK_TIME.match(word)
    if clock:
        hours, minutes, secs = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        if hours > 23 or minutes > 59 or secs > 59:
            raise ValueError(f"{text.strip()} is not a time of day; use HH:MM or HH:MM:SS within {span}")
        first = instant(start)
        day = first.replace(hour=0, minute=0, second=0, microsecond=0)
        for days in range(0, 1 + int((end - start) // 86400) + 1):
            candidate = (day + timedelta(days=days, hours=hours, minutes=minutes, seconds=secs)).timestamp()
            # HH:MM names the whole minute: 03:12 in a recording that starts at 03:12:40 means its start.
            slack = 59 if clock.group(3) is None else 0
            if start - slack <= candidate <= end:
                return max(candidate, start)
        raise ValueError(f"{text.strip()} is outside the recording ({span})")
    offset = _OFFSET.match(word)
    if offset and offset.group(2):
        total = 0.0
        for number, unit in _PART.findall(offset.group(2)):
            total += float(number) * {"h": 3600, "m": 60}.get(unit, 1)
        if offset.group(1) == "+":
            return min(position + total, end)
        if offset.group(1) == "-":
            return max(position - total, start)
        if start + total > end:
            raise ValueError(f"{text.strip()} is past the end of the recording ({span})")
        return start + total
    raise ValueError(f"cannot seek to {text.strip()!r}: use HH:MM[:SS] within {span}, +90s / -2m from here, "
                     "5m from the start, start or end")
