"""Work sharing the interpreter with the app's UI thread gives way while a person presses keys.

The simulated cluster's controllers and the panes' reads run in threads of the app's process; a
key handled while one of them runs gets the interpreter half the time.  Between their steps they
call :func:`give_way`, which sleeps (the interpreter released) until the keys' hold ends, in naps
of NAP_SLICE_S so a hold cut short is noticed, and never longer than the caller's budget."""

from __future__ import annotations

import time
from collections.abc import Callable

#: The longest single nap: the hold is read again after each.
NAP_SLICE_S = 0.05


def give_way(hold_until: Callable[[], float], most: float, sleep: Callable[[float], None] = time.sleep) -> float:
    """Sleep while ``hold_until()`` (monotonic) is ahead, for at most ``most`` seconds in all;
    returns the seconds slept."""
    slept = 0.0
    while slept < most:
        left = min(hold_until() - time.monotonic(), most - slept, NAP_SLICE_S)
        if left <= 0:
            break
        sleep(left)
        slept += left
    return slept
