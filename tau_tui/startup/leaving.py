"""Ending the process when a thread it cannot stop would keep it alive."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import NoReturn

#: How long the app's end waits for a thread that outlives it before the process leaves without it.
LINGER_S = 3.0


def leave_now(code: int) -> NoReturn:
    """End the process while another thread is still in a blocking call: the exit clean-up
    (spools, private files) runs, then the process exits without the interpreter's shutdown, which
    waits for every non-daemon thread (seen to hang with a thread blocked in a socket read)."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001  (a closed pipe: nothing more to say)
                pass
        os._exit(code)


def lingering_threads() -> list[threading.Thread]:
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def leave_if_threads_linger(code: int, grace_s: float = LINGER_S, what_ended_it: str = "") -> None:
    """After the app has ended: leave through :func:`leave_now` if a non-daemon thread is still
    alive ``grace_s`` later. Textual's input thread reads the terminal until the app stops it; a
    terminal that goes away while the app is ending (a killed tmux, a closed window) can leave it
    reading end-of-file in a loop at full speed, and the interpreter would wait for it for ever
    (a `tau-tui --demo faults` was found so, 17 minutes after its tmux was killed).
    ``what_ended_it``: the traceback of an error that ended the app, printed before leaving (the
    interpreter would have printed it)."""
    deadline = time.monotonic() + grace_s
    for thread in lingering_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    if lingering_threads():
        if what_ended_it:
            print(what_ended_it, file=sys.stderr, end="")
        leave_now(code)
