"""Issue 43 defect 2: edits are never thrown away without asking.  With the form differing from its
file, ctrl+n, ctrl+o, ctrl+q, ctrl+c, ``:q`` and the palette's Quit ask save / discard / cancel,
naming the file and the keys that differ; cancel leaves everything as it was, focus included."""

from __future__ import annotations

import pytest

from tau_tui.screens.compose import ComposeScreen
from tau_tui.widgets.input_dialog import InputDialog
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, settle, settle_until, settle_until_done
from tests.app.panes.compose.compose_keys import dialog_open, field_input, file_line, form_ready, is_question, type_into


async def _modified(pilot) -> ComposeScreen:
    screen = await form_ready(pilot)
    await type_into(pilot, screen, "run.name", "-2", clear=False)
    await settle_until_done(pilot, lambda: "● modified" in file_line(screen), "● modified")
    return screen


@async_test
async def test_ctrl_n_asks_and_cancel_returns_to_the_field_as_it_was(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await _modified(pilot)
        name = field_input(screen, "run.name")
        await pilot.press("ctrl+n")
        text = await dialog_open(pilot, "Unsaved changes")
        assert "tau.yaml differs from the form" in text
        assert "name: 'snap-train' → 'snap-train-2'" in text  # the file, and what differs
        assert "Save (s)" in text and "Discard (d)" in text and "Cancel (esc)" in text
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and app.focused is name
        await pilot.press("x")  # typing goes on where it was
        assert name.value == "snap-train-2x"
        assert "● modified" in file_line(screen)
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML


@async_test
async def test_ctrl_n_discard_starts_a_new_form_and_leaves_the_file(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await _modified(pilot)
        await pilot.press("ctrl+n")
        await dialog_open(pilot, "Unsaved changes")
        await pilot.press("d")
        await settle_until_done(pilot, lambda: screen.document.path is None, "a new form")
        assert field_input(screen, "run.name").value == "my-run"
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML


@async_test
async def test_ctrl_o_save_writes_the_file_then_asks_which_file_to_open(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await _modified(pilot)
        await pilot.press("ctrl+o")
        await dialog_open(pilot, "Unsaved changes")
        await pilot.press("s")
        await settle_until_done(pilot, lambda: isinstance(app.screen, InputDialog), "the open dialog, after the save")
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML.replace("name: snap-train ", "name: snap-train-2 ")


QUITS = {
    "ctrl+q": ["ctrl+q"],
    "ctrl+c": ["ctrl+c"],  # as in k9s, even with a text field focused
    ":q": ["colon", "q", "enter"],
    "palette Quit": ["ctrl+p", *"quit", "enter"],
}


@pytest.mark.parametrize("how", list(QUITS))
@async_test
async def test_every_quit_asks_and_cancel_keeps_the_app(tmp_path, workspace, how):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await _modified(pilot)
        name = field_input(screen, "run.name")
        if how in (":q", "palette Quit"):
            await pilot.press("escape")  # out of the field: ":" types into a field
            await settle(pilot)
        focused = app.focused
        await pilot.press(*QUITS[how])
        if how == "palette Quit":
            await settle(pilot)
        text = await dialog_open(pilot, "Unsaved changes")
        assert "Before you quit tau-tui" in text
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and app.screen is screen and name.value == "snap-train-2"
        if how in ("ctrl+q", "ctrl+c"):  # keys: the field they were pressed in has focus again
            assert app.focused is focused is name


@pytest.mark.parametrize(("answer", "file_after"), [
    ("d", VALID_TAU_YAML),  # discard: the file as it was, and no draft either
    ("s", VALID_TAU_YAML.replace("name: snap-train ", "name: snap-train-2 ")),  # save, then quit
])
@async_test
async def test_quit_discard_or_save_then_quits(tmp_path, workspace, answer, file_after):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await _modified(pilot)
        await pilot.press("ctrl+q")
        await dialog_open(pilot, "Unsaved changes")
        await pilot.press(answer)
        await settle_until(pilot, lambda: not app.is_running)
        assert app.return_code == 0
    assert (workspace / "tau.yaml").read_text() == file_after
    assert not list((tmp_path / "state").glob("tau-tui/drafts/*.json"))


@async_test
async def test_quit_from_another_pane_asks_and_cancel_returns_there(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        await _modified(pilot)
        await pilot.press("alt+3")
        await settle_until_done(pilot, lambda: app.current_mode == "queue", "the Queue pane")
        queue, focused = app.screen, app.focused
        await pilot.press("ctrl+q")
        text = await dialog_open(pilot, "Unsaved changes")
        assert "tau.yaml differs from the form" in text
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and app.screen is queue and app.focused is focused
        await pilot.press("ctrl+q")  # and save from there: the Compose pane writes, then the app quits
        await dialog_open(pilot, "Unsaved changes")
        await pilot.press("s")
        await settle_until(pilot, lambda: not app.is_running)
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML.replace("name: snap-train ", "name: snap-train-2 ")


@async_test
async def test_read_only_offers_discard_and_cancel_only(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False,
                        readonly=True) as (_, _, app, pilot):
        await _modified(pilot)
        await pilot.press("ctrl+q")
        text = await dialog_open(pilot, "Unsaved changes")
        assert "Save" not in text.splitlines()[-1] and "Discard (d)" in text and "Cancel (esc)" in text
        assert "read-only mode: saving is disabled" in text
        await pilot.press("s")  # not an answer here
        await settle(pilot)
        assert is_question(app.screen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running
    assert (workspace / "tau.yaml").read_text() == VALID_TAU_YAML


@async_test
async def test_an_unchanged_form_quits_at_once(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await form_ready(pilot)
        await type_into(pilot, screen, "run.name", "snap-train")  # cleared and typed again: the file's own
        await settle(pilot)
        assert "● modified" not in file_line(screen)
        await pilot.press("ctrl+q")
        await settle_until(pilot, lambda: not app.is_running)
        assert app.return_code == 0
