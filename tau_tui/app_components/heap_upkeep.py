"""Full garbage collections at the app's moment: while nobody is pressing keys.

The collector's own full collections are off in the ``tau-tui`` process (``startup/heap.py``);
what survived since the last settle is collected and frozen here, every HEAP_UPKEEP_S, once keys
have been quiet for KEYS_QUIET_S.  A settle walks only the objects not yet frozen, so done often
it stays short; a person typing for minutes only postpones it."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from tau_tui.app_components.shell import run_in_thread
from tau_tui.startup.heap import settle_heap

if TYPE_CHECKING:
    from tau_tui.app_components.key_activity import KeyActivity
    from tau_tui.app_components.shell import AppShell

#: How often the app looks whether a settle is due.
HEAP_UPKEEP_S = 15.0
#: Keys quiet for this long before a settle starts.
KEYS_QUIET_S = 3.0


def upkeep_due(now: float, last_key_at: float) -> bool:
    return now - last_key_at >= KEYS_QUIET_S


class HeapUpkeep:
    """Settles the heap in a worker when keys have been quiet (start with :meth:`start`)."""

    def __init__(self, app: AppShell, keys: KeyActivity) -> None:
        self.app = app
        self.keys = keys
        #: Settles started (tests count them).
        self.settles = 0
        self.started = False

    def start(self) -> None:
        if not self.started:  # once, whichever cluster comes next
            self.started = True
            self.app.set_interval(HEAP_UPKEEP_S, self.settle_if_quiet, name="heap-upkeep")

    def settle_if_quiet(self) -> None:
        now = time.monotonic()
        if upkeep_due(now, self.keys.last_key_at):
            self.settles += 1
            run_in_thread(self.app, partial(settle_heap, now - self.keys.last_key_at), group="heap-upkeep", exclusive=True)
