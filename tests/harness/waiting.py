"""Polling for conditions on a live control plane: bounded in time, and says what it waited for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], what: str, timeout: float = 60.0, interval: float = 0.25,
             explain: Callable[[], str] | None = None) -> T:
    """Return the first truthy value of `predicate`, or fail naming `what` and the last value, and
    what `explain` says about the cluster then (why a pod did not run: the failure alone says nothing)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    message = f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
    if explain is not None:
        try:
            message += "\n" + explain()
        except Exception as error:  # the explanation must not hide the timeout
            message += f"\n(could not explain: {error!r})"
    raise AssertionError(message)
