"""Esc in a terminal: the wait for more bytes after ESC is short unless ESCDELAY says otherwise,
and, shortly after input, Textual's input thread never sleeps in ``select`` past the moment that
wait ends; an idle terminal wakes it no more often than Textual does."""

from __future__ import annotations

import inspect
import selectors
from types import SimpleNamespace

from textual import constants
from textual.drivers import linux_driver

from tau_tui.startup import escape_key


def _keep_textual_as_it_was(monkeypatch) -> None:
    monkeypatch.setattr(linux_driver, "selectors", linux_driver.selectors)
    monkeypatch.setattr(constants, "ESCAPE_DELAY", constants.ESCAPE_DELAY)


def test_the_escape_wait_is_short_by_default_and_escdelay_is_kept(monkeypatch):
    _keep_textual_as_it_was(monkeypatch)
    monkeypatch.delenv("ESCDELAY", raising=False)
    escape_key.answer_escape_promptly()
    assert constants.ESCAPE_DELAY == escape_key.ESCAPE_WAIT_MS / 1000.0
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.3)
    monkeypatch.setenv("ESCDELAY", "300")  # the user's own: Textual read it, and it stays
    escape_key.answer_escape_promptly()
    assert constants.ESCAPE_DELAY == 0.3


def test_the_drivers_select_sleeps_short_only_shortly_after_input(monkeypatch):
    _keep_textual_as_it_was(monkeypatch)
    # what this patches must be what the driver uses (a Textual upgrade that changed it would
    # otherwise leave esc slow without a word)
    assert "selectors.SelectSelector()" in inspect.getsource(linux_driver.LinuxDriver.run_input_thread)
    asked: list[float | None] = []
    ready = {"events": []}
    monkeypatch.setattr(selectors.SelectSelector, "select", lambda self, timeout=None: asked.append(timeout) or ready["events"])
    now = [1000.0]  # the selector's clock: the calls below come at once, however busy the machine
    monkeypatch.setattr(escape_key, "time", SimpleNamespace(monotonic=lambda: now[0]))
    escape_key.answer_escape_promptly()
    selector = linux_driver.selectors.SelectSelector()  # what the driver's input thread makes
    selector.select(0.1)  # idle: Textual's own timeout
    ready["events"] = ["ESC"]
    selector.select(0.1)  # input comes
    ready["events"] = []
    selector.select(0.1)  # right after it: the short poll
    selector.select(0.001)
    assert asked == [0.1, 0.1, escape_key.INPUT_POLL_S, 0.001]
    now[0] += escape_key.AFTER_INPUT_S  # the short poll ends a while after the input
    selector.select(0.1)
    assert asked[-1] == 0.1
    assert linux_driver.selectors.EVENT_READ == selectors.EVENT_READ  # the rest of the module as it was
