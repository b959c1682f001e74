"""The MultiKueue wizard and drain checklist in the app: pilot tests (apply,
refusal, --readonly, resume after a restart), snapshots of every step kind at
80x24 and 160x48, and a scan of every file the app wrote for the credential."""

from __future__ import annotations

import json
from pathlib import Path

import keyring
import pytest

from tau_tui.app import TauApp
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tau_tui.startup.multikueue_env import MultiKueueEnvironment
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tests.app.helpers import async_test, demo_app, make_app, of_type, settle, settle_until, wait_until
from tests.multikueue_lab import YES, Lab, MemoryKeyring, lab_job, retire_demo_multikueue

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def wizard_app(tmp_path: Path, lab: Lab, *, readonly: bool = False, plan=None) -> TauApp:
    app = make_app(tmp_path, lab.backend, readonly=readonly, start_pane="multikueue")
    app._multikueue_env = MultiKueueEnvironment(lab.connector, plan or lab.plan, lab.world.advance)
    return app


def step_marks(app) -> list[str]:
    table = app.screen.query_one("#wizard-steps")
    return [str(table.get_row_at(i)[0]).split()[0] for i in range(table.row_count)]


async def open_flow(pilot, app, command: str) -> None:
    await app.command_mode.run_command_text(command)
    await settle_until(pilot, lambda: isinstance(app.screen, MultiKueueWizardScreen) and app.screen.last_statuses)


@async_test
async def test_wizard_applies_a_step_after_preview_and_resumes_after_restart(tmp_path, lab):
    app = wizard_app(tmp_path, lab)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk setup")
        assert step_marks(app) == ["▶", "○", "○", "○", "○"]
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="preview")
        preview = str(app.screen.query_one("#confirm-preview").render())
        assert "kind: Secret" in preview and "kubeconfig: <redacted>" in preview and "server dry-run" in preview
        assert all(token not in preview for token in lab.tokens())
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="apply")
        assert of_type(messages, TauApp.MutationApplied)[-1].ok
        await settle_until(pilot, lambda: step_marks(app)[:2] == ["✓", "▶"])
        assert step_marks(app) == ["✓", "▶", "○", "○", "○"]
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is not None
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    # The audit log writes the preview and the intent before the call and the outcome after it.
    assert [(e["verb"], e["target"], e["ok"]) for e in audit if e["phase"] == "outcome"] == [
        ("multikueue setup", "step credential", True)]
    assert [e["phase"] for e in audit].index("intent") < [e["phase"] for e in audit].index("outcome")

    restarted = wizard_app(tmp_path, lab)  # a new app on the same cluster: the state comes from the cluster
    async with restarted.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await open_flow(pilot, restarted, ":mk setup")
        assert step_marks(restarted) == ["✓", "▶", "○", "○", "○"]
    [record] = json.loads(next(lab.records.glob("*setup*.json")).read_text()),
    assert record["outcome"] == "in-progress" and record.get("resumed")


@async_test
async def test_wizard_shows_the_default_queue_refusal_and_offers_no_yes(tmp_path, lab):
    plan = lab.plan.__class__(**{**lab.plan.__dict__, "local_queue": "jobqueue"})
    lab.exercise("setup", plan).run(YES, timeout=30)
    app = wizard_app(tmp_path, lab, plan=plan)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk setup")
        assert step_marks(app) == ["✓", "✓", "✓", "✗", "○"]
        detail = str(app.screen.query_one("#wizard-detail").render())
        assert "is the default queue" in detail
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="refusal")
        assert not of_type(messages, TauApp.MutationPreviewed)[-1].allowed
        assert not app.screen.query("#confirm-yes")
        await pilot.press("n")
    assert "mk-lab" not in json.dumps(lab.world.store.read(lab.world.store.types[("kueue.x-k8s.io", "clusterqueues")], "jobqueue"))


@async_test
async def test_readonly_shows_the_wizard_but_refuses_to_apply(tmp_path, lab):
    app = wizard_app(tmp_path, lab, readonly=True)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk setup")
        await pilot.press("a")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None


@async_test
async def test_drain_checklist_refuses_revocation_out_of_order(tmp_path, lab):
    retire_demo_multikueue(lab)  # the demo's own wiring has workers the plan does not list: a drain refuses it
    lab.exercise("setup").run(YES, timeout=30)
    lab.backend.submit([lab_job()])
    lab.world.advance(15)
    app = wizard_app(tmp_path, lab)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk drain")
        assert step_marks(app) == ["▶", "○", "○", "○", "○"]
        screen = app.screen
        revoke = screen.exercise.flow.steps[4]
        why = revoke.refusal(screen.exercise.ctx)
        assert "running on lab-worker-1" in why
        table = screen.query_one("#wizard-steps")
        table.move_cursor(row=4)
        await settle_until(pilot, lambda: "Revoke" in str(screen.query_one("#wizard-detail").render()))
        assert "locked" in str(screen.query_one("#wizard-detail").render())


# -- snapshots of every step kind -------------------------------------------------

def _reach(lab: Lab, flow: str, verified: int, **kwargs) -> None:
    """Apply the first ``verified`` steps of ``flow`` (and all of setup before drain or rotate)."""
    if flow == "drain":
        retire_demo_multikueue(lab)  # the demo's own wiring has workers the plan does not list: a drain refuses it
    if flow != "setup":
        assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    exercise = lab.exercise(flow, **kwargs)
    for step in exercise.flow.steps[:verified]:
        assert exercise.run_step(step, YES, timeout=30) is Outcome.VERIFIED, step.key


STEP_KINDS = [
    pytest.param("setup", 0, id="credential"), pytest.param("setup", 1, id="wiring"),
    pytest.param("setup", 2, id="admission-check"), pytest.param("setup", 3, id="queue"),
    pytest.param("setup", 5, id="matrix"), pytest.param("drain", 0, id="deauthorize"),
    pytest.param("drain", 1, id="drain"), pytest.param("drain", 2, id="wait"),
    pytest.param("drain", 3, id="remove"), pytest.param("drain", 4, id="revoke"),
    pytest.param("rotate", 1, id="rotate"),
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("flow, verified", STEP_KINDS)
def test_wizard_step_snapshot(snap_compare, tmp_path, lab, flow, verified, size):
    inputs, vault, previous = {}, None, keyring.get_keyring()
    if flow == "rotate":
        keyring.set_keyring(MemoryKeyring())
        lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
        inputs, vault = {"worker": "lab-worker-1", "new_context": "lab-worker-1-new"}, CredentialVault("sim-demo")
    try:
        _reach(lab, flow, verified, inputs=inputs, vault=vault)
        app = wizard_app(tmp_path, lab)
        command = ":mk rotate lab-worker-1 lab-worker-1-new" if flow == "rotate" else f":mk {flow}"

        async def run_before(pilot) -> None:
            await settle(pilot)
            await open_flow(pilot, app, command)
            await settle(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
    finally:
        keyring.set_keyring(previous)


def test_no_file_the_app_wrote_holds_the_credential(tmp_path, lab):
    """Records, the audit log, state, spools and every snapshot: none carries a worker token."""
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        _reach(lab, "drain", 5, inputs={"cancel": "all-pending"})
        lab.fleet.mint("lab-worker-1", context="again")
        lab.fleet.mint("lab-worker-2", context="again-2")
    finally:
        keyring.set_keyring(previous)
    tokens = lab.tokens() + [t for w in lab.fleet.contexts.values() for t in [w["users"][0]["user"]["token"]]]
    assert tokens
    snapshots = Path(__file__).parent / "__snapshots__"
    scanned = 0
    for root in (tmp_path, snapshots):
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                scanned += 1
                assert all(t.encode() not in data for t in tokens), path
    assert scanned > 10


@async_test
async def test_logs_of_a_run_on_a_worker_say_where_the_pods_are_and_how_to_map_it(tmp_path):
    async with demo_app(tmp_path, start_pane="runs") as (_, backend, app, pilot):
        await app.open_logs_for_run("team-nlp/mixtral-distill")
        await settle(pilot)
        info = str(app.screen.query_one("#logs-info").render())
        assert "run on MultiKueue worker eastus2-worker" in info and "worker_contexts" in info
        assert "no pods found" not in info
