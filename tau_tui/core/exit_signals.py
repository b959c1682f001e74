"""SIGTERM and SIGHUP end the process through ``SystemExit``, so the atexit clean-up (log spools,
private credential files) runs.  A module of its own: the app installs it before anything else
is imported, and the kubernetes client need not be loaded for it."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import NoReturn


def install_exit_on_signals() -> None:
    """Only from the main thread (Python's rule for signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def leave(signum: int, _frame: FrameType | None) -> NoReturn:
        signal.signal(signum, signal.SIG_DFL)  # a second signal ends it the hard way
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None:
            signal.signal(signum, leave)
