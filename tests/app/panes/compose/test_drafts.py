"""Issue 43, drafts: SIGTERM, SIGHUP and a crash keep the unsaved form under the state directory
(directory 0700, file 0600), keyed by the file's absolute path (one for a new document); the next
open of that file offers it: restore, discard or keep for later.  Saving or discarding removes it."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
from pathlib import Path

import pytest

import tau_tui.app_components.quitting as quitting
from tau_tui.screens.compose import ComposeScreen
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, settle, settle_until, settle_until_done
from tests.app.panes.compose.compose_keys import dialog_open, field_input, file_line, form_ready, is_question, type_into


def drafts_dir() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "tau-tui" / "drafts"


def draft_path(file: Path | None) -> Path:
    """Where the draft of ``file`` is kept: named by the SHA-256 of its absolute path ("new-document" for none)."""
    if file is None:
        return drafts_dir() / "new-document.json"
    return drafts_dir() / f"{hashlib.sha256(os.path.abspath(file).encode()).hexdigest()[:40]}.json"


def find_draft(file: Path | None) -> dict | None:
    path = draft_path(file)
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture
def terminal_here(monkeypatch):
    """The pilot has no terminal: a signal's quit must not take the hang-up path (which leaves the process)."""
    monkeypatch.setattr(quitting, "terminal_gone", lambda: False)


async def _edit(pilot) -> ComposeScreen:
    screen = await form_ready(pilot)
    await type_into(pilot, screen, "run.name", "-2", clear=False)
    await type_into(pilot, screen, "runtime.env", "A=1, broken")  # text that cannot be written yet
    await settle_until_done(pilot, lambda: "● modified" in file_line(screen) and screen.entry_errors, "two edits")
    return screen


def _assert_private(path) -> None:
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@async_test
async def test_a_quit_signal_keeps_the_form_as_a_private_draft(tmp_path, workspace, terminal_here, signum):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await _edit(pilot)
        app.quit_on_signal(signum)  # what the event loop's signal handler calls (startup/app_loop.py)
        await settle_until(pilot, lambda: not app.is_running)
        assert app.return_code == 128 + signum
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML  # nothing written to the file
    path = draft_path(workspace / "tau.yaml")
    assert path.parent == tmp_path / "state" / "tau-tui" / "drafts"
    _assert_private(path)
    draft = json.loads(path.read_text())
    assert draft["file"] == str(workspace / "tau.yaml")
    assert draft["fields"] == {"run.name": "snap-train-2", "runtime.env": "A=1, broken"}
    assert draft["reason"] == signal.Signals(signum).name
    assert "name: snap-train-2" in draft["text"]


@async_test
async def test_a_crash_keeps_the_form_as_a_draft(tmp_path, workspace, monkeypatch):
    def crash(self):
        raise RuntimeError("a bug in a handler")

    with pytest.raises(RuntimeError, match="a bug in a handler"):
        async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
            await _edit(pilot)
            monkeypatch.setattr(ComposeScreen, "action_client_dry_run", crash)
            await pilot.press("ctrl+r")
            await settle_until(pilot, lambda: not app.is_running)
    draft = find_draft(workspace / "tau.yaml")
    assert draft is not None and draft["fields"]["run.name"] == "snap-train-2"
    assert draft["reason"] == "the app ended with an error"
    _assert_private(draft_path(workspace / "tau.yaml"))


async def _kept(tmp_path, workspace, terminal_here) -> None:
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await _edit(pilot)
        app.quit_on_signal(signal.SIGTERM)
        await settle_until(pilot, lambda: not app.is_running)
    assert draft_path(workspace / "tau.yaml").exists()


@async_test
async def test_the_next_open_offers_the_draft_and_restore_types_it_back(tmp_path, workspace, terminal_here):
    await _kept(tmp_path, workspace, terminal_here)
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        text = await dialog_open(pilot, "Draft of tau.yaml")
        assert "(SIGTERM)" in text and "name: 'snap-train' → 'snap-train-2'" in text
        assert "Restore (r)" in text and "Discard (d)" in text and "Keep for later (esc)" in text
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        await settle_until_done(pilot, lambda: field_input(screen, "run.name").value == "snap-train-2"
                                and field_input(screen, "runtime.env").value == "A=1, broken", "the draft in the form")
        assert "● modified" in file_line(screen) and "runtime.env" in screen.entry_errors
        await type_into(pilot, screen, "runtime.env", "A=1")  # fixed: now it can be saved
        await pilot.press("ctrl+s")
        await settle_until_done(pilot, lambda: "● modified" not in file_line(screen), "saved")
    saved = (workspace / "tau.yaml").read_text()
    assert "name: snap-train-2   # the run's name" in saved and "A: '1'" in saved
    assert not draft_path(workspace / "tau.yaml").exists()  # saved: the draft is gone


@async_test
async def test_discard_removes_the_draft_and_keep_for_later_keeps_it(tmp_path, workspace, terminal_here):
    await _kept(tmp_path, workspace, terminal_here)
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await dialog_open(pilot, "Draft of tau.yaml")
        await pilot.press("escape")  # keep for later
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ComposeScreen) and field_input(screen, "run.name").value == "snap-train"
    assert draft_path(workspace / "tau.yaml").exists()
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await dialog_open(pilot, "Draft of tau.yaml")
        await pilot.press("d")
        await settle_until_done(pilot, lambda: not is_question(app.screen), "the dialog closed")
        assert not draft_path(workspace / "tau.yaml").exists()
        assert "● modified" not in file_line(app.screen)
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML


@async_test
async def test_a_new_unsaved_document_has_its_own_draft(tmp_path, workspace, terminal_here):
    async with demo_app(tmp_path, start_pane="compose", settled=False) as (_, _, app, pilot):
        screen = await form_ready(pilot, ("run.name", "my-run"))
        await type_into(pilot, screen, "run.name", "fresh-run")
        await settle_until_done(pilot, lambda: "● modified" in file_line(screen), "● modified")
        app.quit_on_signal(signal.SIGHUP)
        await settle_until(pilot, lambda: not app.is_running)
    draft = find_draft(None)
    assert draft is not None and draft["file"] is None and draft["fields"] == {"run.name": "fresh-run"}
    assert [p.name for p in drafts_dir().iterdir()] == ["new-document.json"]
    async with demo_app(tmp_path, start_pane="compose", settled=False) as (_, _, app, pilot):
        await dialog_open(pilot, "Draft of tau.yaml (new)")
        await pilot.press("r")
        screen = app.screen
        await settle_until_done(pilot, lambda: field_input(screen, "run.name").value == "fresh-run", "restored")


@async_test
async def test_opening_the_file_with_ctrl_o_offers_its_draft(tmp_path, workspace, terminal_here):
    await _kept(tmp_path, workspace, terminal_here)
    async with demo_app(tmp_path, start_pane="compose", settled=False) as (_, _, app, pilot):
        await form_ready(pilot, ("run.name", "my-run"))  # a new form: not the file the draft is of
        await pilot.press("ctrl+o")
        await settle_until_done(pilot, lambda: type(app.screen).__name__ == "InputDialog", "the open dialog")
        await pilot.press("enter")  # its default: tau.yaml here
        text = await dialog_open(pilot, "Draft of")
        assert "snap-train-2" in text
