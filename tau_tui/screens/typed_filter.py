"""The filter a person is typing in a pane's ``/`` line, applied once the keys pause.

The pane owns it: the line's change message stops at the pane, which keeps the text and the one
timer.  The typed character is drawn first and the rows are filtered once the keys pause, so a
key's echo never waits for the last key's 20,000 rows; keys typed meanwhile are filtered once,
together, and keys that never pause still filter every so often."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.timer import Timer

#: A typed filter is applied once no key came for this long (a fast typist's keys are 50-100 ms apart)...
FILTER_QUIET_S = 0.06
#: ...or this long after the first key it holds, when keys keep coming.
FILTER_LONGEST_WAIT_S = 0.3
#: Never a timer of 0 s: Textual's Timer divides by its interval when it fires late (a busy machine),
#: and a ZeroDivisionError then ends the app.
FILTER_SOONEST_S = 0.001


class TypedFilter:
    """Text typed in the filter line and not applied yet, and the timer that will apply it."""

    def __init__(self, set_timer: Callable[..., Timer], apply: Callable[[str], None]) -> None:
        self._set_timer = set_timer
        self._apply = apply
        #: The text waiting for the keys to pause, or None.
        self.text: str | None = None
        #: When the first key of the waiting text came (monotonic).
        self.since = 0.0
        self._timer: Timer | None = None

    def typed(self, text: str) -> None:
        now = time.monotonic()
        if self.text is None:
            self.since = now
        self.text = text
        if self._timer is not None:
            self._timer.stop()
        wait = min(FILTER_QUIET_S, max(FILTER_SOONEST_S, self.since + FILTER_LONGEST_WAIT_S - now))
        self._timer = self._set_timer(wait, self.apply_now, name="typed filter")

    def apply_now(self) -> None:
        """The latest text typed, unless enter or esc settled the filter since."""
        text, self.text = self.text, None
        if text is not None:
            self._apply(text)

    def settle(self) -> None:
        """Enter or esc decided the filter: what was typed before is not applied after."""
        self.text = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
