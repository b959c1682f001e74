"""Textual's private screen internals a pane relies on, each behind one named hook.

Written against Textual 8.2.8 (pinned); ``tests/textual_compat/test_canary.py`` checks that
every name used here still exists and behaves as assumed, so an upgrade fails there first."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual import _time
from textual._time import sleep
from textual.app import App
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import UPDATE_PERIOD, Screen
from textual.timer import EventTargetGone, Timer


class FramePacer(Timer):
    """A screen's update timer that draws the frame a key asked for one frame interval after the
    last frame, and at once when the last is older: the same cap of 60 frames a second.

    Written against Textual 8.2.8.  Textual's own timer, resumed after a pause, puts its next tick
    on a grid of intervals counted from its start, so a key that comes just after a frame waits up
    to two intervals.  No public API sets how a screen's frames are timed: this overrides the
    private ``Timer._run`` loop and uses Textual's clock (``textual._time``) as ``_tick`` does."""

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
    """What ``Screen._update_timer`` makes on first use (paused, at Textual's frame rate), paced.

    Written against Textual 8.2.8, whose ``Screen._update_timer`` makes its timer with
    ``set_interval``; the timer's class cannot be chosen through a public API."""
    timer = FramePacer(screen, UPDATE_PERIOD, name="screen_update", callback=screen._on_timer_update, pause=True)
    timer._start()
    screen._timers.add(timer)
    return timer


def css_update_count(app: App) -> int:
    """How many times the app's stylesheet was refreshed (CSS or theme changes).

    Written against Textual 8.2.8: ``App._css_update_count`` is how Textual itself decides whether
    a screen's styles are current; no public API tells it."""
    return app._css_update_count


#: Once a frame is drawn, callbacks waiting for it run this much later (the terminal writer thread
#: takes the frame meanwhile), or FRAME_WAIT_S after they were queued when no frame comes by then.
FRAME_WRITE_S = 0.01
FRAME_WAIT_S = 0.25


class CompatScreen(Screen):
    """A Screen with the hooks a pane needs where Textual's public API has none (Textual 8.2.8)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._frame_callbacks: list[Callable[[], None]] = []

    @property
    def _update_timer(self) -> Timer:
        """Textual's timer that draws this screen's frames, made as a :class:`FramePacer`.

        Written against Textual 8.2.8, where ``Screen._update_timer`` is a private property that
        makes the timer into the name-mangled ``_Screen__update_timer`` on first use."""
        timer = self._Screen__update_timer  # type: ignore[has-type]
        if timer is None:
            timer = self._Screen__update_timer = paced_update_timer(self)
        return timer

    def call_after_frame(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the next frame of this screen is drawn and handed to the terminal,
        or :data:`FRAME_WAIT_S` from now when no frame comes (nothing on the screen changed)."""
        self._frame_callbacks.append(callback)
        self.refresh()
        self.set_timer(FRAME_WAIT_S, self._run_frame_callbacks)

    def _compositor_refresh(self) -> None:
        """Textual 8.2.8's frame refresh, then the callbacks waiting for a frame (:meth:`call_after_frame`).

        No public event says that a screen's frame was drawn and handed to the terminal (a
        ``call_after_refresh`` callback may run before it, on an idle pass)."""
        super()._compositor_refresh()
        if self._frame_callbacks and self.is_current:
            # the writer thread takes the frame once the UI thread is idle: a moment for it first
            self.set_timer(FRAME_WRITE_S, self._run_frame_callbacks)

    def _run_frame_callbacks(self) -> None:
        waiting, self._frame_callbacks = self._frame_callbacks, []
        for callback in waiting:
            callback()

    def mark_styled(self) -> None:
        """Mark this screen's styles as current with the app's stylesheet.

        Written against Textual 8.2.8, which marks a mode's screen as styled only when it is
        mounted as the app's CSS is refreshed; an unmarked screen has the whole stylesheet re-parsed
        and every widget restyled on each switch to it.  The mark is the private
        ``Screen._css_update_count``; no public API sets it."""
        self._css_update_count = self.app._css_update_count

    def lay_out_unshown(self, size: Size) -> None:
        """Lay out this screen (not the current one) at ``size`` and draw it once, into nothing, so
        that its first showing finds its widgets' sizes and lines made.

        Written against Textual 8.2.8: the private ``Screen._refresh_layout`` and the compositor's
        ``render_update`` do it; the public ``refresh(layout=True)`` waits until it is shown."""
        self._refresh_layout(size)
        self._compositor.render_update(full=True)

    def bindings_of_key(self, key: str) -> Iterable[Binding]:
        """This screen's own bindings of ``key`` as declared (a user keymap is not applied), whether shown or not.

        Written against Textual 8.2.8: ``DOMNode._bindings`` holds them; the public
        ``active_bindings`` leaves out the ones ``check_action`` hides."""
        return self._bindings.key_to_bindings.get(key, ())

    def all_own_bindings(self) -> Iterable[Binding]:
        """Every binding of this screen itself as declared, no keymap applied (Textual 8.2.8's ``DOMNode._bindings``;
        see :meth:`bindings_of_key`)."""
        for bindings in self._bindings.key_to_bindings.values():
            yield from bindings
