"""Background work steps aside while its host's foreground is busy.

Work that shares the interpreter with a foreground (whatever must be answered first: the app's UI
thread) is handed a hook, ``busy_until``, that says until when (monotonic) the foreground wants the
interpreter; the host decides what makes it busy.  Between its steps the work calls
:func:`give_way`, which sleeps (the interpreter released) until then, in naps of NAP_SLICE_S so an
end brought forward is noticed, and never longer than the caller's budget."""

from __future__ import annotations

import time
from collections.abc import Callable

#: Until when (monotonic) the foreground wants the interpreter; 0.0 (or any past time) when it does not.
BusyUntil = Callable[[], float]

#: The longest single nap: ``busy_until`` is read again after each.
NAP_SLICE_S = 0.05


def give_way(busy_until: BusyUntil, most: float, sleep: Callable[[float], None] = time.sleep,
             monotonic: Callable[[], float] = time.monotonic) -> float:
    """Sleep while ``busy_until()`` is ahead of ``monotonic()``, for at most ``most`` seconds in all;
    returns the seconds slept."""
    slept = 0.0
    while slept < most:
        left = min(busy_until() - monotonic(), most - slept, NAP_SLICE_S)
        if left <= 0:
            break
        sleep(left)
        slept += left
    return slept
