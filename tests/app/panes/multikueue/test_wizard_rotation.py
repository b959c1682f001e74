"""Credential rotation in the app's wizard, to the end: when the last step
verifies, the wizard closes the exercise as the CLI does: the keyring entries are gone (the
flow's on_complete) and the record says "verified"; the wizard shows the rotation complete, read live
from the manager's ledger and the record, not frozen (#44 item 5)."""

from __future__ import annotations

import json

from tau_tui.app import TauApp
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.credentials import credential_from_document
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tau_tui.startup.multikueue_env import MultiKueueEnvironment
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tests.app.helpers import async_test, make_app, of_type, settle, settle_until, wait_until
from tests.multikueue_lab import YES


def step_marks(app) -> list[str]:
    table = app.screen.query_one("#wizard-steps")
    return [str(table.get_row_at(i)[0]).split()[0] for i in range(table.row_count)]


@async_test
async def test_the_wizard_finishes_the_rotation_forgets_the_keyring_and_closes_the_record(tmp_path, lab, memory_keyring):
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    app = make_app(tmp_path, lab.backend, start_pane="multikueue")
    app._multikueue_env = MultiKueueEnvironment(lab.connector, lab.plan, lab.world.advance)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await app.command_mode.run_command_text(":mk rotate lab-worker-1 lab-worker-1-new")
        await settle_until(pilot, lambda: isinstance(app.screen, MultiKueueWizardScreen) and app.screen.last_statuses)
        screen = app.screen
        assert step_marks(app) == ["▶", "○", "○"]
        for done in range(1, 4):
            await pilot.press("a")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what=f"preview of step {done}")
            await pilot.press("y")
            await wait_until(pilot, lambda done=done: len(of_type(messages, TauApp.MutationApplied)) == done, what=f"step {done}")
            assert of_type(messages, TauApp.MutationApplied)[-1].ok, of_type(messages, TauApp.MutationApplied)[-1].text
            await settle_until(pilot, lambda done=done: step_marks(app)[:done] == ["✓"] * done)
        # the keyring entries are gone, yet the wizard shows the rotation as it completed, not started over
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is screen and step_marks(app) == ["✓", "✓", "✓"]
        # ...and read live, not frozen (#44 item 5): a credential written over the Secret by hand is not the rotation's
        other = lab.fleet.mint("lab-worker-1", context="by-hand")
        lab.world.store.update(SECRET, "lab-worker-1-kubeconfig", "kueue-system", lambda s: s["data"].__setitem__(
            "kubeconfig", credential_from_document("lab-worker-1", other, "by hand").secret_data()))
        await pilot.press("r")
        await settle_until(pilot, lambda: step_marks(app) != ["✓", "✓", "✓"])
        assert step_marks(app)[0] != "✓"
    # the rotation's slots are gone (the audit log's signing key and head stay, service tau-tui)
    assert [slot for slot in memory_keyring.entries if slot[0] == "tau-tui-multikueue"] == []
    [record] = [json.loads(p.read_text()) for p in lab.records.glob("*rotate*.json")]
    assert record["outcome"] == "verified" and record["finished"]
    assert [e["http_status"] for e in record["revocations"]] == [401]


@async_test
async def test_the_wizard_shows_revocation_without_admin_context_as_a_warning_not_done(tmp_path, lab):
    from tests.multikueue_lab import retire_demo_multikueue

    retire_demo_multikueue(lab)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    plan = lab.plan.__class__(**{**lab.plan.__dict__, "workers": tuple(
        w.__class__(**{**w.__dict__, "admin_context": None}) for w in lab.plan.workers)})
    drain = lab.exercise("drain", plan)
    for step in drain.flow.steps[:4]:
        assert drain.run_step(step, YES, timeout=30) is Outcome.VERIFIED, step.key
    app = make_app(tmp_path, lab.backend, start_pane="multikueue")
    app._multikueue_env = MultiKueueEnvironment(lab.connector, plan, lab.world.advance)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await app.command_mode.run_command_text(":mk drain")
        await settle_until(pilot, lambda: isinstance(app.screen, MultiKueueWizardScreen) and app.screen.last_statuses)
        assert step_marks(app) == ["✓", "✓", "✓", "✓", "▶"]
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="preview of step 5")
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="step 5")
        assert not of_type(messages, TauApp.MutationApplied)[-1].ok
        await settle_until(pilot, lambda: step_marks(app)[-1] == "⚠")
        assert step_marks(app) == ["✓", "✓", "✓", "✓", "⚠"]
        detail = str(app.screen.query_one("#wizard-detail").render())
        assert "revocation unproven" in detail and "⚠ to do: revoke sha256:" in detail and "identity system" in detail
    record = json.loads(sorted(lab.records.glob("*drain*.json"))[-1].read_text())
    assert record["outcome"] == "not-verified"
    assert [e["http_status"] for e in record["revocations"]] == [None, None]
