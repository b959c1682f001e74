"""A pane draws the frame a key asked for one frame interval after the last frame, not up to two.

Textual draws a screen from a 60 Hz timer that is paused while nothing needs drawing and resumed by
a change.  A resumed timer ticks at once, but its next tick is put on its grid of intervals counted
from its start, skipping the ticks it missed while paused: one to two intervals after that tick
(17 to 33 ms).  So a key that comes just after a frame (esc right after the filter was applied, a
character typed while the rows redraw) waits up to 33 ms before its frame starts.  Here the next
frame may start one interval after the last one started, and at once when the last is older: the
same cap of 60 frames a second, without the wait for a grid.
"""

from __future__ import annotations

from textual import _time
from textual._time import sleep
from textual.screen import UPDATE_PERIOD, Screen
from textual.timer import EventTargetGone, Timer


class FramePacer(Timer):
    """The screen's update timer: at most one tick per interval, the first one when resumed."""

    async def _run(self) -> None:
        self._active  # noqa: B018  (made in this thread, as Textual's own run does)
        last_tick = float("-inf")
        count = 0
        while True:
            await self._active.wait()
            wait = last_tick + self._interval - _time.get_time()
            if wait > 0:
                await sleep(wait)
                await self._active.wait()  # a frame drawn meanwhile by a layout paused it again
            last_tick = _time.get_time()
            count += 1
            try:
                await self._tick(next_timer=last_tick, count=count)
            except EventTargetGone:
                break


def paced_update_timer(screen: Screen) -> Timer:
    """What ``Screen._update_timer`` makes on first use (paused, at Textual's frame rate), paced."""
    timer = FramePacer(screen, UPDATE_PERIOD, name="screen_update", callback=screen._on_timer_update, pause=True)
    timer._start()
    screen._timers.add(timer)
    return timer
