"""The frame pacer (``textual_compat/screen.py``) paces a screen's frames from the last frame: one
interval after it at the soonest, and at once when it is older.  Counted on a clock the test moves,
never timed.  ``tests/app/test_frame_pacing.py`` checks that a pane draws through it."""

from __future__ import annotations

import asyncio

from textual import _time

from tau_tui.textual_compat import screen as frame_pacing
from tau_tui.textual_compat.screen import FramePacer
from tests.app.helpers import async_test

INTERVAL = 1 / 60


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def get_time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class Target:
    """What the timer is for (it keeps a weak reference only)."""


class RecordingPacer(FramePacer):
    """Notes the clock at each tick and pauses itself, as the screen's frame does."""

    def __init__(self, clock: Clock, target: Target) -> None:
        super().__init__(target, INTERVAL, name="frames", pause=True)
        self.clock = clock
        self.ticks: list[float] = []

    async def _tick(self, *, next_timer: float, count: int) -> None:
        self.ticks.append(round(self.clock.now, 4))
        self.pause()


async def let_run() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@async_test
async def test_a_frame_asked_for_soon_after_the_last_waits_one_interval_from_it_and_a_later_one_none(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(_time, "get_time", clock.get_time)
    monkeypatch.setattr(frame_pacing, "sleep", clock.sleep)
    target = Target()
    pacer = RecordingPacer(clock, target)
    pacer._start()
    await let_run()
    assert pacer.ticks == []  # paused: no frame is asked for
    pacer.resume()
    await let_run()
    clock.now = 0.010  # a key 10 ms after that frame
    pacer.resume()
    await let_run()
    clock.now = 0.500  # a key after a quiet half second
    pacer.resume()
    await let_run()
    clock.now = 0.505  # and one right after it
    pacer.resume()
    await let_run()
    await FramePacer._stop_all([pacer])
    assert pacer.ticks == [0.0, round(INTERVAL, 4), 0.5, round(0.5 + INTERVAL, 4)]

