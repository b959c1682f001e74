"""The drafts, end to end: ``tau-tui --demo --file tau.yaml --pane compose`` in a pseudo-terminal,
a key typed into the form, then SIGTERM, or the terminal closed (SIGHUP with no terminal left, the
path that ends the process at once): the form is in a draft (0600) and the file is untouched."""

from __future__ import annotations

import json
import signal
import stat

import pytest

from tests.app.conftest import VALID_TAU_YAML
from tests.app.panes.compose.test_drafts import draft_path
from tests.app.test_exit_bounded import AppInPty

TAB = b"\t"


@pytest.fixture
def compose_in_a_terminal(request, tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # what AppInPty gives the app
    app = AppInPty(tmp_path, str(tmp_path / "no-kubeconfig"),
                   ("--demo", "--file", str(workspace / "tau.yaml"), "--pane", "compose"))
    request.addfinalizer(app.close)
    app.wait_for_text("snap-train")
    app.wait_for_text("kind: RayJob")  # the form is filled and validated (the preview shows what it renders)
    app.keys(TAB)  # the first field, the name: the footer drops ":cmd", which types into a field
    app.wait_for_text("^n New  / /filter")
    app.keys(b"9")  # the field's text was selected as it took focus: "9" replaces it
    app.wait_for_text("● modified")
    return app


def _assert_draft(workspace, reason: str) -> None:
    path = draft_path(workspace / "tau.yaml")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    draft = json.loads(path.read_text())
    assert draft["fields"] == {"run.name": "9"} and draft["reason"] == reason
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML


def test_sigterm_keeps_a_draft_of_what_was_typed(compose_in_a_terminal, workspace):
    app = compose_in_a_terminal
    app.proc.send_signal(signal.SIGTERM)
    assert app.wait_exit() == 128 + signal.SIGTERM
    _assert_draft(workspace, "SIGTERM")
    assert "unsaved Compose changes were kept as a draft (SIGTERM)" in app.text()  # said on the terminal


def test_a_closed_terminal_keeps_a_draft_of_what_was_typed(compose_in_a_terminal, workspace):
    app = compose_in_a_terminal
    app.hang_up()
    assert app.wait_exit() == 128 + signal.SIGHUP
    _assert_draft(workspace, "SIGHUP")
