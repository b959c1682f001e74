"""Esc answers in a few tens of milliseconds, not a tenth of a second, in a terminal.

A terminal sends the escape key as a lone ESC byte, and ESC also begins every other key's escape
sequence, so Textual's input thread waits ``ESCDELAY`` (100 ms by default) for more bytes before it
says "escape".  It notices that the wait is over only when its ``select`` returns, which it calls
with a 100 ms timeout: a lone esc reaches the app 100 ms after the key.  k9s users press esc for
"back" all day.  Here the default wait is :data:`ESCAPE_WAIT_MS` (as vim's and many terminal apps':
the bytes of one key come in one write), ``ESCDELAY`` set by the user is kept, and the input thread's
``select`` wakes every :data:`INPUT_POLL_S`, so the wait ends when it should.  Only Textual's Linux
driver is changed (the pilot's headless driver reads no terminal)."""

from __future__ import annotations

import os
import selectors
import types

#: The wait for more bytes after ESC when ESCDELAY is not set (milliseconds).
ESCAPE_WAIT_MS = 25
#: The input thread's longest sleep in ``select`` (seconds): it checks the escape wait after each.
INPUT_POLL_S = 0.02


class _PromptSelector(selectors.SelectSelector):
    """A ``select`` that never sleeps past :data:`INPUT_POLL_S`."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return super().select(INPUT_POLL_S if timeout is None else min(timeout, INPUT_POLL_S))


def answer_escape_promptly() -> None:
    """Before the app runs: the shorter wait (unless ESCDELAY says otherwise) and the prompt select."""
    from textual import constants
    from textual.drivers import linux_driver

    if "ESCDELAY" not in os.environ:
        setattr(constants, "ESCAPE_DELAY", ESCAPE_WAIT_MS / 1000.0)  # noqa: B010  (Final in Textual; read per key)
    prompt = types.ModuleType("selectors")  # the selectors module as the driver sees it, but its select
    prompt.__dict__.update(vars(selectors))
    prompt.SelectSelector = _PromptSelector  # type: ignore[attr-defined]
    linux_driver.selectors = prompt
