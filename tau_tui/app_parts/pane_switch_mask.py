"""A pane that is already made is shown as soon as it has resumed, not after a fixed 50 ms.

A part of :class:`tau_tui.app.TauApp`, which inherits it.  Textual's ``switch_mode`` holds every
repaint for ``delay_update``'s 50 ms, to hide a screen drawn half made.  That was most of a pane
switch (`4`, `6`, `3`, esc back): the new pane was ready 2 ms after the key, and drawn 52 ms after
it.  A pane opened before, or mounted and laid out ahead, is whole: the hold now ends right after it
has handled its resume (its layout for the terminal's present size).  A pane the switch itself makes
keeps Textual's hold, as its widgets are still being mounted.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App
from textual.widget import AwaitMount

from tau_tui.screens.base import PaneScreen


class PaneSwitchMask(App):
    """Ends Textual's repaint hold of a mode switch once a pane already made has resumed."""

    _unopened_panes: dict[str, PaneScreen]
    #: The running hold's early end, between ``delay_update`` and the end of ``switch_mode``.
    _switch_hold_end: Callable[[], None] | None = None
    #: Switches whose hold ended when the pane resumed (for tests: counts, not time).
    switches_shown_on_resume = 0

    def delay_update(self, delay: float = 0.05) -> None:
        """As Textual's (hold repaints for ``delay``), but the hold can also be ended early, once."""
        self._begin_batch()
        ended = False

        def end_hold() -> None:
            nonlocal ended
            if ended:
                return
            ended = True
            self._end_batch()
            if not self._batch_count:
                self.screen.refresh()

        self._switch_hold_end = end_hold
        self.set_timer(delay, end_hold, name="delay_update")

    def switch_mode(self, mode: str) -> AwaitMount:
        made = self._pane_made(mode)
        self._switch_hold_end = None
        awaited = super().switch_mode(mode)
        end_hold, self._switch_hold_end = self._switch_hold_end, None
        if made and end_hold is not None:
            # posted after the ScreenResume that switch_mode posted: runs once the pane has resumed
            self.screen.call_later(self._show_resumed, end_hold)
        return awaited

    def _show_resumed(self, end_hold: Callable[[], None]) -> None:
        self.switches_shown_on_resume += 1
        end_hold()

    def _pane_made(self, mode: str) -> bool:
        """Whether ``mode``'s screen is whole before the switch: opened before, or laid out ahead."""
        stack = self._screen_stacks.get(mode)
        if stack:
            return stack[-1].is_attached
        prepared = self._unopened_panes.get(mode)
        return prepared is not None and prepared.laid_out_ahead
