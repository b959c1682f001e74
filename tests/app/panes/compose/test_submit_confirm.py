"""Issue 43: a refused ctrl+g leaves focus where it was (defect 5), and a submit whose server dry-run
FAILED is not offered as a plain "Submit (y)": going on takes a second confirmation, on another key,
that names the failure (defect 6; the flow serves every mutation)."""

from __future__ import annotations

from textual.widgets import Button

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import MutationResult
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tests.app.helpers import async_test, demo_app, of_type, settle, settle_until_done
from tests.app.panes.compose.compose_keys import field_input, form_ready, type_into

WEBHOOK = 'admission webhook "vrayjob.kb.io" denied the request: spec.rayClusterSpec: worker group is required'


def _result(screen) -> str:
    return str(screen.query_one("#compose-result").render())


@async_test
async def test_a_refused_submit_leaves_focus_in_the_field_and_typing_goes_on(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False) as (_, _, app, pilot):
        screen = await form_ready(pilot)
        await type_into(pilot, screen, "compute.gpus_per_worker", "99")  # more than a node has: invalid
        await settle_until_done(pilot, lambda: screen.validation.text == screen.document.text()
                                and not screen.validation.ok, "the invalid form validated")
        gpus = field_input(screen, "compute.gpus_per_worker")
        assert app.focused is gpus
        await pilot.press("ctrl+g")
        await settle_until_done(pilot, lambda: "cannot submit" in _result(screen), "the refusal")
        assert app.focused is gpus
        await pilot.press("backspace", "backspace", "8", "ctrl+u", "4", "tab")  # typing, ctrl+u and tab all act
        assert gpus.value == "4" and app.focused is not gpus


@async_test
async def test_a_failed_server_dry_run_needs_a_second_confirmation_that_names_it(tmp_path, workspace):
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", settled=False,
                        message_hook=messages.append) as (_, backend, app, pilot):
        submit = backend.submit

        def dry_run_fails(manifests, dry_run=False):
            if dry_run:
                return [MutationResult(False, "create", "RayJob", "snap-train", "taugrid-default", WEBHOOK, True)]
            return submit(manifests, dry_run=dry_run)

        backend.submit = dry_run_fails
        screen = await form_ready(pilot)
        await settle_until_done(pilot, lambda: screen.validation.ok, "a valid form")
        await pilot.press("ctrl+g")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the confirmation")
        first = app.screen
        assert "⚠ server dry-run FAILED" in str(first.query_one("#confirm-preview").render())
        labels = [str(b.label) for b in first.query(Button)]
        assert "Submit (y)" not in labels and labels[0] == "Submit despite the failure… (y)"
        await pilot.press("y")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog) and app.screen is not first,
                                "the second confirmation")
        second = app.screen
        body = str(second.query_one("#confirm-preview").render())
        assert "although its preview failed" in second.title_text and WEBHOOK in body
        assert [str(b.label) for b in second.query(Button)][0] == "Submit anyway (a)"
        await pilot.press("y")  # a doubled y answers nothing here
        await settle(pilot)
        assert app.screen is second and not of_type(messages, TauApp.MutationApplied)
        await pilot.press("n")  # back: nothing is submitted
        await settle(pilot)
        assert not of_type(messages, TauApp.MutationApplied)
        assert backend.get(ResourceKind.RAY_JOB, "snap-train", "taugrid-default") is None

        await pilot.press("ctrl+g")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the confirmation again")
        await pilot.press("y")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog) and "although" in app.screen.title_text,
                                "the second confirmation again")
        await pilot.press("a")
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationApplied), "the submit")
        assert of_type(messages, TauApp.MutationApplied)[-1].ok
