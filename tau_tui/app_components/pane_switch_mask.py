"""A pane that is already made is shown as soon as it has resumed, not after Textual's fixed hold.

Textual's ``switch_mode`` holds every repaint for ``delay_update``'s 50 ms to hide a screen drawn
half made; a pane opened before, or laid out ahead, is whole, so its hold ends once it has handled
its resume.  A pane the switch itself makes keeps Textual's hold.  The app's ``delay_update`` and
``switch_mode`` overrides hand their work here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tau_tui.app_components.shell import textual_app
from tau_tui.textual_compat.app import hold_repaints, mode_top_screen

if TYPE_CHECKING:
    from tau_tui.app_components.pane_preparation import PanePreparation
    from tau_tui.app_components.shell import AppShell


class PaneSwitchMask:
    """Ends Textual's repaint hold of a mode switch once a pane already made has resumed."""

    def __init__(self, app: AppShell, preparation: PanePreparation) -> None:
        self.app = app
        self.preparation = preparation
        #: The running hold's early end, between ``delay_update`` and the end of ``switch_mode``.
        self.hold_end: Callable[[], None] | None = None
        #: Switches whose hold ended when the pane resumed (for tests: counts, not time).
        self.switches_shown_on_resume = 0

    def delay_update(self, delay: float) -> None:
        """As Textual's ``delay_update`` (hold repaints for ``delay``), but the hold can also be
        ended early, once."""
        end_hold = hold_repaints(textual_app(self.app))
        self.hold_end = end_hold
        self.app.set_timer(delay, end_hold, name="delay_update")

    def switch_begins(self, mode: str) -> bool:
        """Before Textual's ``switch_mode``: whether ``mode``'s pane is made already."""
        self.hold_end = None
        return self._pane_made(mode)

    def switch_ended(self, made: bool) -> None:
        """After Textual's ``switch_mode``: a pane made before ends the hold once it has resumed."""
        end_hold, self.hold_end = self.hold_end, None
        if made and end_hold is not None:
            # posted after the ScreenResume that switch_mode posted: runs once the pane has resumed
            self.app.screen.call_later(self.show_resumed, end_hold)

    def show_resumed(self, end_hold: Callable[[], None]) -> None:
        self.switches_shown_on_resume += 1
        end_hold()

    def _pane_made(self, mode: str) -> bool:
        """Whether ``mode``'s screen is whole before the switch: opened before, or laid out ahead."""
        top = mode_top_screen(textual_app(self.app), mode)
        if top is not None:
            return top.is_attached
        prepared = self.preparation.unopened_panes.get(mode)
        return prepared is not None and prepared.laid_out_ahead
