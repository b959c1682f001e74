"""Every key reaches its target in order, however the keys arrive (issue #43, defect 1).

The keys of each test are sent at once, as a paste, a fast typist or a busy machine delivers them
(``type_burst``: posted as the terminal driver posts them, no wait between two), with a CPU hog
beside the test.  What is checked is what the user typed against what the app holds: the field's
text, the form's document, the pane reached.  Nothing is timed.

Before the key gate (app_components/key_gate.py), five backspaces and ``STEPS=42`` typed into
``A=1`` left ``A=1STE``: a printable key is handled by the field at once, a backspace only after it
has bubbled up to the app, so the text overtook the backspaces."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from tau_tui.screens.compose import ComposeScreen
from tau_tui.screens.nodes import NodesScreen
from tau_tui.screens.queue import QueueScreen
from tau_tui.widgets.form_field import FormField
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import (
    async_test,
    demo_app,
    record_notifications,
    settle,
    settle_until,
    settle_until_done,
    type_burst,
)

#: (field path, its value in the file, what is typed after clearing it, the text the field must hold,
#: the document's value after it).  One per kind of field the form has (text, int, list, map).  Each
#: typing moves the cursor back and types again, so bound keys (left, backspace) and printable ones
#: interleave.
FIELD_BURSTS = [
    ("run.name", "snap-train", ["n", "e", "w", "-", "r", "n", "left", "u", "end"],
     "new-run", "new-run"),
    ("compute.gpus_per_worker", "8", ["4", "2", "left", "backspace", "1"],
     "12", 12),
    ("runtime.pip", None, ["t", "o", "r", "c", "h", ",", " ", "n", "u", "m", "p", "x", "backspace", "y"],
     "torch, numpy", ["torch", "numpy"]),
    ("runtime.env", None, [*"STEPS=42", "left", "left", "backspace", "X", "end", "0"],
     "STEPSX420", None),  # an unfinished entry (no "="): the field keeps it and says so; the file keeps its old value
    ("runtime.env", None, [*"A=1", "backspace", "backspace", "backspace", *"STEPS=42"],
     "STEPS=42", {"STEPS": "42"}),
]


@pytest.mark.parametrize(("path", "before", "keys", "shown", "value"), FIELD_BURSTS,
                         ids=[f"{path}-{i}" for i, (path, *_rest) in enumerate(FIELD_BURSTS)])
@async_test
async def test_a_burst_after_clearing_a_field_is_typed_in_order(tmp_path, workspace, cpu_hog, path, before, keys,
                                                                  shown, value):
    async with demo_app(tmp_path, start_pane="compose", compose_file=str(workspace / "tau.yaml")) as run:
        app, pilot = run.app, run.pilot
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        form_field = next(f for f in screen.query(FormField) if f.path == path)
        field = form_field.query_one(Input)
        await settle_until_done(pilot, lambda: (field.value or None) == before, f"{path} shows {before!r}")
        field.focus()
        await settle(pilot)
        held_before = app.key_gate.held
        # Clear it with more backspaces than it has characters, then type: all in one burst.
        type_burst(app, ["end", *["backspace"] * (len(before or "") + 3), *keys])
        await settle_until(pilot, lambda: field.value == shown and app.key_gate.in_flight is None)
        assert field.value == shown
        assert app.key_gate.held > held_before  # the keys really came faster than the app answered them
        if value is not None:
            await settle_until_done(pilot, lambda: screen.document.get(path) == value, f"the document's {path}")
        else:
            assert path in screen.entry_errors  # said under the field, not written


@async_test
async def test_commands_typed_across_help_and_three_pane_switches_reach_each_pane(tmp_path, cpu_hog):
    async with demo_app(tmp_path, start_pane="queue") as run:
        app, pilot = run.app, run.pilot
        switched: list[str] = []
        switch = app.action_switch_pane
        app.action_switch_pane = lambda mode: (switched.append(mode), switch(mode))[1]
        pushed: list[str] = []
        push = app.push_screen
        app.push_screen = lambda screen, *a, **k: (pushed.append(type(screen).__name__), push(screen, *a, **k))[1]
        notes = record_notifications(app)
        typed = ["question_mark", "escape", *":queue", "enter", *":nodes", "enter", *":compose", "enter"]
        type_burst(app, typed)
        await settle_until(pilot, lambda: isinstance(app.screen, ComposeScreen) and app.key_gate.in_flight is None)
        assert switched == ["queue", "nodes", "compose"]  # :queue on the queue pane is a switch to itself
        assert isinstance(app.screen, ComposeScreen)
        assert pushed == ["HelpDialog"]  # no Describe, no YAML: "nodes" was never read as pane keys
        assert not any("unknown command" in note for note in notes), notes
        assert app.key_gate.held >= len(typed) - 2


@async_test
async def test_a_command_typed_right_after_a_pane_switch_by_digit_lands_in_the_new_panes_line(tmp_path, cpu_hog):
    async with demo_app(tmp_path, start_pane="queue") as run:
        app, pilot = run.app, run.pilot
        type_burst(app, ["6", "slash", *"h100", "enter"])
        await settle_until(pilot, lambda: isinstance(app.screen, NodesScreen) and app.screen.row_filter.text == "h100")
        assert isinstance(app.screen, NodesScreen)
        assert app.screen.row_filter.text == "h100"


@async_test
async def test_sort_letters_sort_the_workloads_wherever_the_focus_is_on_the_queue_pane(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as run:
        app, pilot = run.app, run.pilot
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        workloads = screen.query_one("#workloads-table", KeyedTable)
        queues = screen.query_one("#queues-table", KeyedTable)
        queues.focus()
        await settle(pilot)
        letter, column = next((letter, column) for letter, column in workloads.sort_letters().items()
                              if column != workloads.sort_column)
        await pilot.press(letter)
        await settle(pilot)
        assert app.focused is queues  # the focus stays where it was
        assert workloads.sort_column == column


@async_test
async def test_slash_in_compose_says_there_is_nothing_to_filter(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file=str(workspace / "tau.yaml")) as run:
        app, pilot = run.app, run.pilot
        notes = record_notifications(app)
        app.screen.set_focus(None)
        await pilot.press("slash", *"gpu")
        await settle(pilot)
        assert any("Compose has no rows to filter" in note for note in notes), notes
        assert app.screen.row_filter.text == ""
        assert "filter" not in str(app.screen.query_one("#header").render())


@pytest.mark.parametrize(("typed", "said"), [
    (":quue", "unknown command :quue; did you mean :queue?"),
    (":mk foo", "unknown command :mk foo; :mk takes setup, drain, rotate"),
    (":mk setpu", "unknown command :mk setpu; did you mean :mk setup?"),
])
@async_test
async def test_an_unknown_command_is_an_error_naming_the_nearest_known_one(tmp_path, typed, said):
    async with demo_app(tmp_path, start_pane="queue") as run:
        app, pilot = run.app, run.pilot
        notes = record_notifications(app)
        await pilot.press(*typed, "enter")
        await settle(pilot)
        assert any(note.startswith(said) for note in notes), notes
        assert isinstance(app.screen, QueueScreen)  # nothing switched,
        assert app.screen.row_filter.text == ""  # and nothing became a filter


@async_test
async def test_keys_typed_as_a_dialog_opens_land_in_the_dialog(tmp_path, workspace, cpu_hog):
    (workspace / "other.yaml").write_text((workspace / "tau.yaml").read_text().replace("snap-train", "other-run"))
    async with demo_app(tmp_path, start_pane="compose", compose_file=str(workspace / "tau.yaml")) as run:
        app, pilot = run.app, run.pilot
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        await settle_until_done(pilot, lambda: screen.document.get("run.name") == "snap-train", "tau.yaml open")
        screen.set_focus(None)
        await settle(pilot)
        # ctrl+o opens a dialog with the path filled in; ctrl+u clears it; the new name and enter follow at once.
        type_burst(app, ["ctrl+o", "ctrl+u", *"other.yaml", "enter"])
        await settle_until(pilot, lambda: screen.document.get("run.name") == "other-run")
        assert screen.document.get("run.name") == "other-run"
        assert app.screen is screen  # the dialog took every key and closed


def test_the_panes_named_as_filtering_are_the_ones_whose_slash_filters():
    from tau_tui.app_components.pane_modes import FILTERING_PANES, PANE_SCREENS, screen_class

    assert {mode for mode in PANE_SCREENS if screen_class(mode).FILTERS_ROWS} == set(FILTERING_PANES)
