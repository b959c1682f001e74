"""The Compose form's fields: what they show, which keys edit them, and the quota warning."""

from __future__ import annotations

from textual.widgets import Button

from tau_tui.app import TauApp
from tau_tui.screens import messages as screen_messages
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.form_field import FormField
from tests.app.helpers import async_test, demo_app, of_type, settle, wait_until

JOB_TAU_YAML = """\
name: huge-mem
image: python:3.12-slim
entrypoint: train.py
compute:
  gpus: 8
  memory_request: 999Pi
policy:
  namespace: taugrid-default
  profile: azure.research.training.xl
"""


def _preview(app) -> str:
    return str(app.screen.query_one("#confirm-preview").render())


@async_test
async def test_compose_warns_when_no_flavor_can_hold_the_request_and_submit_says_so(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(JOB_TAU_YAML)
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (world, backend, app, pilot):
        screen = app.screen
        await wait_until(pilot, lambda: any(m.result.rendered for m in of_type(messages, screen_messages.Validated)),
                         what="rendered validation")
        await settle(pilot)
        result = screen.validation
        assert result.ok  # a warning, not an error: the user may still submit
        warnings = [d for d in result.diagnostics if d.severity == "warning" and d.path == "compute.memory_request"]
        assert warnings, result.diagnostics
        text = warnings[0].message
        assert "memory 999Pi" in text and "ClusterQueue jobqueue" in text and "4000Gi" in text, text
        field = screen.query_one("#field-compute-memory-request", FormField)
        assert "exceeds every flavor's nominal quota" in str(field.query_one(".field-error").render())

        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="submit confirmation")
        preview = _preview(app)
        assert "1 pod(s): nvidia.com/gpu 8" in preview and "memory 999Pi" in preview
        assert "queue taugrid-default/jobqueue" in preview
        assert "⚠ memory 999Pi requested exceeds every flavor's nominal quota" in preview
        assert [str(b.label) for b in app.screen.query(Button)] == ["Submit (y)", "Back (n)"]


@async_test
async def test_compose_has_a_gpus_field_for_a_job(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(JOB_TAU_YAML.replace("  memory_request: 999Pi\n", "").replace("  gpus: 8\n", ""))
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (_, _, app, pilot):
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="validation")
        gpus = screen.query_one("#field-compute-gpus", FormField)
        gpus.input.value = "8"
        await wait_until(pilot, lambda: screen.document.get("compute.gpus") == 8, what="gpus written")
        assert "gpus: 8" in screen.document.text()


@async_test
async def test_placeholders_are_never_shown_as_values(tmp_path, workspace):
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (_, _, app, pilot):
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="validation")
        image = screen.query_one("#field-runtime-image", FormField)
        assert image.input.value == "python:3.12-slim"
        image.input.value = ""  # cleared: the example must not read as the value
        await settle(pilot)
        assert image.input.placeholder == "e.g. python:3.12-slim"
        style = image.input.get_component_rich_style("input--placeholder")
        assert style.italic
        await pilot.press("ctrl+n")  # the cleared image is a change: the form asks first
        await settle(pilot)
        await pilot.press("d")  # discard it: a new form, whose namespace is empty and says so
        await settle(pilot)
        namespace = screen.query_one("#field-policy-namespace", FormField)
        assert namespace.input.value == ""
        assert namespace.input.placeholder.startswith("e.g. ")
        engine = screen.query_one("#field-run-engine", FormField)
        assert engine.input.placeholder == "one of job | rayjob"
        rendered = "".join(seg.text for seg in namespace.input.render_line(0))
        assert "e.g. taugrid-default" in rendered


@async_test
async def test_pane_keys_never_edit_compose_fields_and_the_form_says_how_to_leave(tmp_path, workspace):
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (world, backend, app, pilot):
        screen = app.screen
        await wait_until(pilot, lambda: screen.validation.ok, what="valid file")
        hint = str(screen.query_one("#compose-keys-hint").render())
        assert "esc" in hint and "alt+1-7" in hint
        name = screen.query_one("#field-run-name", FormField).input
        # the form is filled from the file after it validates; on a busy machine that can come later
        await wait_until(pilot, lambda: name.value == "snap-train", what="the form filled from tau.yaml")
        name.focus()
        await pilot.press("end", "3")  # a digit in a field is text
        assert name.value == "snap-train3" and app.current_mode == "compose"
        await pilot.press("backspace", "alt+4")  # alt+digit leaves from inside the field, typing nothing
        await settle(pilot)
        assert app.current_mode == "runs"
        await pilot.press("alt+1")
        await settle(pilot)
        assert app.current_mode == "compose" and name.value == "snap-train"
        name.focus()
        await pilot.press("escape")  # esc leaves the field; then a digit switches
        assert screen.focused is None and app.current_mode == "compose"
        await pilot.press("6")
        await settle(pilot)
        assert app.current_mode == "nodes" and name.value == "snap-train"

        # after a submit, the next digit switches panes instead of landing in the field it came from
        await pilot.press("1")
        await settle(pilot)
        name.focus()
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="submit confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="submit")
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        assert app.current_mode == "runs"
        assert name.value == "snap-train"


@async_test
async def test_80x24_compose_shows_whole_values_and_a_compact_footer(tmp_path, workspace):
    from textual.widgets import Footer

    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", size=(80, 24), message_hook=messages.append, settled=False) as (_, _, app, pilot):
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="validation")
        await settle(pilot)
        assert screen.has_class("-narrow")
        image = screen.query_one("#field-runtime-image", FormField).input
        assert image.value == "python:3.12-slim"
        assert image.region.width >= 50, image.region  # the whole width, not half of it
        side = screen.query_one("#compose-side")
        assert side.region.y > screen.query_one("#compose-form").region.y  # the preview sits below the form
        footer = screen.query_one(Footer)
        assert footer.compact and not footer.show_command_palette
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert not screen.has_class("-narrow") and not footer.compact
