"""The event loop the app runs on: its thread workers never hold the process at quit, and SIGINT,
SIGTERM and SIGHUP quit it the way ctrl+q does (what must be kept is written, the terminal is
restored) instead of ending the process in the middle of a frame."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from tau_tui.core.exit_signals import install_exit_on_signals
from tau_tui.startup.daemon_executor import DaemonThreadPool

T = TypeVar("T")

#: Signals that quit the app cleanly; the exit code is 128 + the signal's number.
QUIT_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def app_event_loop(on_signal: Callable[[int], None]) -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_default_executor(DaemonThreadPool())
    if threading.current_thread() is threading.main_thread():  # Python's rule for signal handlers

        def quit_once(signum: int) -> None:
            # A second signal takes the hard way: SIGINT a KeyboardInterrupt, SIGTERM/SIGHUP a SystemExit.
            loop.remove_signal_handler(signum)
            install_exit_on_signals()
            on_signal(signum)

        for signum in QUIT_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored on purpose (nohup): left so
                loop.add_signal_handler(signum, quit_once, signum)
    return loop


def run_on_app_loop(main: Coroutine[Any, Any, T], on_signal: Callable[[int], None]) -> T:
    """Run ``main`` (the app's ``run_async()``) to its end on :func:`app_event_loop`.  Closing the
    loop gives the signals back to their defaults; :func:`install_exit_on_signals` takes them again."""
    try:
        with asyncio.Runner(loop_factory=lambda: app_event_loop(on_signal)) as runner:
            return runner.run(main)
    finally:
        install_exit_on_signals()  # the closed loop left SIGTERM and SIGHUP at their defaults
