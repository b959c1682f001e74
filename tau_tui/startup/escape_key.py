"""Esc answers in tens of milliseconds in a terminal, not after a tenth of a second or more.

A terminal sends the escape key as a lone ESC byte, and ESC also begins every other key's escape
sequence, so Textual's input thread waits ``ESCDELAY`` (100 ms by default) for more bytes before it
says "escape".  It notices that the wait is over only when its ``select`` returns, which it calls
with a 100 ms timeout: a lone esc reaches the app 100 to 200 ms after the key.  k9s users press esc
for "back" all day.  Here the default wait is :data:`ESCAPE_WAIT_MS`, as tmux waits since 3.5
(``escape-time`` 10 ms; neovim's ``ttimeoutlen`` is 50 ms): a terminal writes the bytes of one key
in one write, which reaches the app in one read, locally or over ssh.  An ``ESCDELAY`` the user
set (for a link that splits them) is kept, and for a
moment after any input the input thread's ``select`` wakes every :data:`INPUT_POLL_S`, so the wait
ends when it should; an idle terminal wakes it no more often than before.  Only Textual's Linux
driver (Linux and macOS) is changed; on Windows, and for the pilot's headless driver, nothing is."""

from __future__ import annotations

import os
import selectors
import time
import types

#: The wait for more bytes after ESC when ESCDELAY is not set (milliseconds).
ESCAPE_WAIT_MS = 15
#: The input thread's longest sleep in ``select`` (seconds) for AFTER_INPUT_S after input came.
INPUT_POLL_S = 0.005
AFTER_INPUT_S = 0.25


class _PromptSelector(selectors.SelectSelector):
    """A ``select`` that, shortly after input came, never sleeps past :data:`INPUT_POLL_S`."""

    _input_at = float("-inf")

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if time.monotonic() - self._input_at < AFTER_INPUT_S:
            timeout = INPUT_POLL_S if timeout is None else min(timeout, INPUT_POLL_S)
        ready = super().select(timeout)
        if ready:
            self._input_at = time.monotonic()
        return ready


def answer_escape_promptly() -> None:
    """Before the app runs: the shorter wait (unless ESCDELAY says otherwise) and the prompt select."""
    from textual import constants

    try:
        from textual.drivers import linux_driver
    except ImportError:  # Windows: no termios; its driver reads keys another way
        return
    if "ESCDELAY" not in os.environ:
        setattr(constants, "ESCAPE_DELAY", ESCAPE_WAIT_MS / 1000.0)  # noqa: B010  (Final in Textual; read per key)
    prompt = types.ModuleType("selectors")  # the selectors module as the driver sees it, but its select
    prompt.__dict__.update(vars(selectors))
    prompt.SelectSelector = _PromptSelector  # type: ignore[attr-defined]
    linux_driver.selectors = prompt
