"""Full garbage collections at the app's moment: while nobody is pressing keys.

The collector's own full collections are off in the ``tau-tui`` process (``startup/heap.py``);
what survived since the last settle is collected and frozen here, every HEAP_UPKEEP_S, once keys
have been quiet for KEYS_QUIET_S.  A settle walks only the objects not yet frozen, so done often
it stays short; a person typing for minutes only postpones it."""

from __future__ import annotations

import time

from textual import work
from textual.app import App

from tau_tui.startup.heap import settle_heap

#: How often the app looks whether a settle is due.
HEAP_UPKEEP_S = 15.0
#: Keys quiet for this long before a settle starts.
KEYS_QUIET_S = 3.0


def upkeep_due(now: float, last_key_at: float) -> bool:
    return now - last_key_at >= KEYS_QUIET_S


class HeapUpkeep(App):
    """Settles the heap in a worker when keys have been quiet (start with :meth:`start_heap_upkeep`)."""

    _last_key_at: float = 0.0
    #: Settles started (tests count them).
    heap_settles = 0

    _heap_upkeep_started = False

    def start_heap_upkeep(self) -> None:
        if not self._heap_upkeep_started:  # once, whichever cluster comes next
            self._heap_upkeep_started = True
            self.set_interval(HEAP_UPKEEP_S, self.heap_upkeep, name="heap-upkeep")

    def heap_upkeep(self) -> None:
        if upkeep_due(time.monotonic(), self._last_key_at):
            self.heap_settles += 1
            self._settle_heap_quietly()

    @work(thread=True, exclusive=True, exit_on_error=False, group="heap-upkeep")
    def _settle_heap_quietly(self) -> None:
        settle_heap()
