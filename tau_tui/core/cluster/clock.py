"""Clocks: the real one, and a manual one tests and the simulator advance."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """Time moves only when :meth:`advance` is called (deterministic tests)."""

    def __init__(self, start: datetime):
        self._now = start if start.tzinfo else start.replace(tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


class ContinuingClock:
    """Real-time clock that continues from a given simulated instant
    (the demo warms up on a manual clock, then runs at wall-clock speed)."""

    def __init__(self, start: datetime):
        import time

        self._start = start
        self._mono = time.monotonic()

    def now(self) -> datetime:
        import time

        return self._start + timedelta(seconds=time.monotonic() - self._mono)
