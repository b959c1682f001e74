"""When the person last pressed a key: work nobody asked for waits for a quiet moment."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tau_tui.core.pacing import NAP_SLICE_S

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell

#: How long after a key the background work in this process (the simulated cluster's controllers,
#: the panes' reads in worker threads) is held back, so the key and the next one are answered first.
KEY_HOLDS_BACKGROUND_S = 0.3


class KeyActivity:
    """Notes each key's time, and tells the backend a person is pressing keys."""

    def __init__(self, app: AppShell) -> None:
        self.app = app
        #: When the last key came (monotonic); 0.0 before the first.
        self.last_key_at = 0.0
        #: Until when (monotonic) the app's own reads in worker threads nap for keys (PaneScreen.keep_reading).
        self.key_hold_until = 0.0
        #: The pane on screen whose first rows are not shown yet (set and cleared by that pane, on the UI
        #: thread, through the app), or None.
        self.first_rows_awaited_by: object | None = None

    @property
    def first_rows_awaited(self) -> bool:
        return self.first_rows_awaited_by is not None

    def key_pressed(self) -> None:
        self.last_key_at = time.monotonic()
        self.hold_background()

    def person_waits_until(self) -> float:
        """Until when (monotonic) work nobody asked for (the evidence recorder) gives way: a key's
        hold, or while a pane's first read is waited for, a moment more each time it asks."""
        if self.first_rows_awaited:
            return max(self.key_hold_until, time.monotonic() + NAP_SLICE_S)
        return self.key_hold_until

    def hold_background(self, seconds: float = KEY_HOLDS_BACKGROUND_S) -> None:
        """Work nobody asked for, in this process and in the simulated cluster's, waits ``seconds``:
        after each key, and as a pane's first rows appear (the person reads them, then answers with
        a key, which finds the interpreter free)."""
        self.key_hold_until = max(self.key_hold_until, time.monotonic() + seconds)
        backend = self.app.backend
        if backend is not None:
            backend.foreground_busy(seconds)
