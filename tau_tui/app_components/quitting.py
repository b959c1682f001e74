"""Quitting in bounded time whatever the server does: ctrl+q, ctrl+c, ``:q``, the palette's Quit
(each through the unsaved-work guard, ``unsaved_guard.py``) and the quit signals (SIGINT, SIGTERM,
SIGHUP; see ``startup/app_loop.py``), which keep unsaved work as a draft before anything else.

What must be kept is on the local disk and written before the app ends: the session recording's
end here; audit entries as they happen; log spools and private files by the exit clean-up.
Closing the evidence recorder and the backend may wait on the network (a read that no close can
interrupt, on a server that accepts and never answers), so they close in a daemon thread that the
quit waits for at most CLOSE_WAIT_S; what is still running then ends with the process."""

from __future__ import annotations

import signal
import sys
import termios
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tau_tui.startup.leaving import leave_now

if TYPE_CHECKING:
    from tau_tui.app_components.unsaved_guard import UnsavedGuard
    from tau_tui.core.cluster.interfaces import ClusterBackend
    from tau_tui.core.operations.evidence.recorder import EvidenceRecorder
    from tau_tui.core.operations.recording.writer import SessionRecorder

#: How long the quit waits for the evidence recorder and the backend to close.
CLOSE_WAIT_S = 0.25
#: The exit code of a quit by signal: the shell's convention.
SIGNAL_EXIT_BASE = 128


class QuittingApp(Protocol):
    backend: ClusterBackend | None
    evidence_recorder: EvidenceRecorder | None
    session_recorder: SessionRecorder | None
    unsaved_guard: UnsavedGuard

    def exit(self, result: Any = ..., return_code: int = ..., message: Any = ...) -> None: ...

    def call_next(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None: ...


def terminal_gone() -> bool:
    """Whether the terminal the app draws on (Textual's output: stderr) was hung up or closed."""
    output = sys.__stderr__
    try:
        termios.tcgetattr(output.fileno() if output is not None else -1)
    except (termios.error, OSError, ValueError):
        return True
    return False


def close_within(closers: list[Callable[[], None]], seconds: float) -> bool:
    """Run ``closers`` one after the other in a daemon thread; whether they ended within ``seconds``.
    A closer's error is not the quit's: it is dropped."""

    def close_all() -> None:
        for close in closers:
            try:
                close()
            except Exception:  # noqa: BLE001  (quitting goes on)
                pass

    closing = threading.Thread(target=close_all, name="tau-quit-close", daemon=True)
    closing.start()
    closing.join(seconds)
    return not closing.is_alive()


class Quitting:
    def __init__(self, app: QuittingApp) -> None:
        self.app = app
        #: The signal that asked for the quit, if one did.
        self.signal: int | None = None

    def quit(self, return_code: int = 0) -> None:
        self._close()
        self.app.exit(return_code=return_code)

    def signalled(self, signum: int) -> None:
        """On the event loop, for a quit signal: the same quit as ctrl+q, exit code 128 + signum,
        except that nobody can be asked about unsaved work: it is kept as a draft, first.
        When the terminal is gone (a closed window hangs it up) there is nothing to restore, and
        Textual's last writes to it would block its shutdown: the process leaves at once."""
        self.signal = signum
        self.app.unsaved_guard.keep_drafts(signal.Signals(signum).name)
        if terminal_gone():
            self._close()
            leave_now(SIGNAL_EXIT_BASE + signum)
        self.app.call_next(self.quit, SIGNAL_EXIT_BASE + signum)

    def _close(self) -> None:
        app = self.app
        session, app.session_recorder = app.session_recorder, None
        if session is not None:
            session.close()  # local: the recording's end record and its file
        recorder, app.evidence_recorder = app.evidence_recorder, None
        backend, app.backend = app.backend, None
        closers: list[Callable[[], None]] = []
        if recorder is not None:
            closers.append(recorder.close)
        if backend is not None:
            closers.append(backend.close)
        if closers:
            close_within(closers, CLOSE_WAIT_S)
