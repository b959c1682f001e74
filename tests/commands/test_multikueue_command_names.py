"""The CLI's names and exit codes follow the seed's words.

`rollback` (which meant "set up again", the opposite of the seed's "Drain and rollback") is gone and
changes nothing; `status` exits from the flow in force (0 verified, 3 refused, 4 not verified);
`--demo` runs on the simulated demo cluster with the built-in lab plan; and the example plan in
docs/multikueue.md loads and names only lanes `tau-tui validate` accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tau_tui import cli
from tau_tui.commands import multikueue_command
from tau_tui.commands.parser import DESCRIPTION, EXIT_INVALID, EXIT_NOT_VERIFIED, EXIT_OK, EXIT_REFUSED, build_parser
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps import FLOW_NAMES, flow_for
from tau_tui.core.operations.multikueue_steps.plan import load_plan
from tau_tui.core.operations.multikueue_steps.records import list_records
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tests.app.helpers import async_test, make_app, record_notifications, settle
from tests.multikueue_lab import LAB_PLAN, lab_job, make_lab

DOCS = Path(__file__).resolve().parents[2] / "docs" / "multikueue.md"
GONE = ("tau-tui: `rollback` is gone: the seed's 'Drain and rollback' is `tau-tui multikueue drain`; "
        "to re-enable after a drain run `tau-tui multikueue setup`")
#: The lab plan without lanes.
PLAN = LAB_PLAN.replace("lanes: [multicluster]\n", "")


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


@pytest.fixture
def lab(xdg, monkeypatch):
    lab = make_lab(xdg)
    lab.connected = 0

    def environment(args):
        lab.connected += 1
        return lab.backend, lab.connector, lab.world.advance

    monkeypatch.setattr(multikueue_command, "multikueue_environment", environment)
    (xdg / "plan.yaml").write_text(PLAN)
    lab.plan_path = str(xdg / "plan.yaml")
    return lab


def run(*argv: str) -> int:
    return cli.main(["multikueue", *argv])


def held(lab) -> bool:
    """The dedicated LocalQueue is held (what the drain's step 1 does)."""
    lq = lab.world.store.read(ResourceKind.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")
    return ((lq or {}).get("spec") or {}).get("stopPolicy") == "Hold"


def hold(lab) -> None:
    def patch(lq: dict) -> None:
        lq["spec"]["stopPolicy"] = "Hold"
    lab.world.store.update(ResourceKind.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp", patch)


def expected_status_code(out: str) -> int:
    """The exit code the marks printed by `status` call for: 3 when a step is refused, else 4."""
    return EXIT_REFUSED if "\n  ✗ " in out else EXIT_NOT_VERIFIED


# -- rollback is gone --------------------------------------------------------------------------


def test_rollback_after_a_partial_drain_exits_2_with_one_line_and_changes_nothing(lab, capsys):
    """Before: `rollback --yes` after a partial drain set the dedicated queue up again (the profile
    went back to the tenants), the opposite of the seed's "Drain and rollback"."""
    assert run("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    hold(lab)  # a drain stopped after its step 1 holds the dedicated queue
    connected, records = lab.connected, len(list_records())
    capsys.readouterr()

    assert run("rollback", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [GONE] and captured.out == ""
    assert held(lab) and lab.connected == connected  # the cluster was not even asked
    assert len(list_records()) == records


def test_rollback_is_no_flow_and_the_help_names_setup_and_drain_by_the_seed(capsys):
    assert "rollback" not in FLOW_NAMES
    with pytest.raises(ValueError, match="is gone"):
        flow_for("rollback")
    assert "multikueue setup|drain|rotate|status|records" in DESCRIPTION
    assert "seed's \"Drain and rollback\" 1-5" in DESCRIPTION and "after a drain it re-enables" in DESCRIPTION
    mk = build_parser()._subparsers._group_actions[0].choices["multikueue"]  # type: ignore[union-attr]
    help_text = mk.format_help()
    assert "rollback" not in help_text.replace("Drain and rollback", "")
    assert "status: the flow in force, exit 0 verified, 3 refused, 4 not verified" in " ".join(help_text.split())
    assert run("rolback") == EXIT_INVALID
    assert capsys.readouterr().err.splitlines() == [
        "tau-tui: multikueue: unknown action 'rolback'; one of setup, drain, rotate, status, records"]


@async_test
async def test_the_apps_mk_rollback_says_what_replaced_it_and_opens_nothing(tmp_path):
    lab = make_lab(tmp_path)
    app = make_app(tmp_path, lab.backend, start_pane="multikueue")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        messages = record_notifications(app)
        await app.command_mode.run_command_text(":mk rollback")
        await settle(pilot)
        assert not isinstance(app.screen, MultiKueueWizardScreen)
        assert ("`rollback` is gone: the seed's 'Drain and rollback' is `:mk drain`; "
                "to re-enable after a drain run `:mk setup`") in messages, messages


# -- status: the exit code of the flow in force -----------------------------------------------


def test_status_exits_4_when_the_setup_in_force_is_not_verified(lab, capsys):
    """Before: `status` exited 0 whatever the state."""
    assert run("status", "--plan", lab.plan_path) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "MultiKueue setup wizard (the flow in force: no setup or drain record for this cluster" in out
    assert "MultiKueue setup wizard: not verified (exit 4)" in out


def test_status_exits_3_when_a_step_of_the_flow_in_force_is_refused(lab, capsys, xdg):
    bad = xdg / "bad.yaml"
    bad.write_text(PLAN.replace("localQueue: mk-lab-queue", "localQueue: jobqueue"))
    assert run("setup", "--plan", str(bad), "--yes", "--timeout", "30") == EXIT_REFUSED
    capsys.readouterr()
    assert run("status", "--plan", str(bad)) == EXIT_REFUSED
    out = capsys.readouterr().out
    assert "✗ " in out and "is the default queue" in out


def test_status_follows_the_latest_record_and_flow_picks_the_other(lab, capsys):
    assert run("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    assert run("status", "--plan", lab.plan_path) == EXIT_OK
    assert "MultiKueue setup wizard: verified (exit 0)" in capsys.readouterr().out
    code = run("status", "--plan", lab.plan_path, "--flow", "drain")
    out = capsys.readouterr().out
    assert out.startswith("MultiKueue drain and rollback checklist (the flow in force: --flow;")
    assert code == expected_status_code(out), out
    # A drain that did not verify (a pending owner, or a guard): the drain is in force now.
    lab.backend.submit([lab_job()])
    lab.world.advance(15)
    assert run("drain", "--plan", lab.plan_path, "--yes", "--timeout", "20") in (EXIT_REFUSED, EXIT_NOT_VERIFIED)
    capsys.readouterr()
    code = run("status", "--plan", lab.plan_path)
    out = capsys.readouterr().out
    assert out.startswith("MultiKueue drain and rollback checklist (the flow in force: the latest record ")
    assert code == expected_status_code(out), out
    assert run("setup", "--plan", lab.plan_path, "--flow", "setup") == EXIT_INVALID
    assert "--flow is for status only" in capsys.readouterr().err


# -- --demo ------------------------------------------------------------------------------------


def test_demo_runs_on_the_built_in_lab_plan_in_this_process_only(xdg, capsys):
    """Before: `--demo` was an unknown option (exit 2), though the connection error suggests it."""
    assert run("setup", "--demo", "--yes", "--timeout", "30") == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(multikueue_command.DEMO_NOTE + "\n")
    assert "live only in this process" in out
    assert "✓ 5. " in out and "MultiKueue setup wizard: verified; record none (demo)" in out
    assert list_records() == []  # no record of a simulated cluster among the owner's evidence
    # A new process is a new demo: nothing was kept.
    assert run("status", "--demo") == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "(the flow in force: a fresh demo has no records;" in out and "▶ 1. Worker credentials" in out
    assert run("rotate", "--demo", "--yes") == EXIT_REFUSED
    assert "name the new credential: a kubeconfig file or a kubeconfig context" in capsys.readouterr().out
    assert run("setup") == EXIT_INVALID
    assert "or --demo for the simulated demo cluster" in capsys.readouterr().err


def test_every_flow_is_finished_headless_on_the_demo(xdg, capsys):
    """Issue 43: the demo's drain was refused at step 1 (its plan did not list the demo's own workers)
    and it could not rotate; its built-in plans now match its workers, its keyring lives in memory."""
    assert run("drain", "--demo", "--cancel-pending", "--yes", "--timeout", "60") == EXIT_OK
    out = capsys.readouterr().out
    assert "✓ 1. Remove tenant authorization" in out and "✓ 5. Revoke and delete the worker credentials" in out
    assert "MultiKueue drain and rollback checklist: verified; record none (demo)" in out
    assert run("rotate", "--demo", "--worker", "westus3-worker", "--new-context", "westus3-worker-new", "--yes") == EXIT_OK
    out = capsys.readouterr().out
    assert "(old) in demo keyring, in memory: nothing is stored" in out, out
    # "verified" names the credential it verified and the one the worker rejected (#44 item 3)
    assert re.search(r"MultiKueue credential rotation: verified \(worker westus3-worker uses sha256:[0-9a-f]{16}; "
                     r"sha256:[0-9a-f]{16} rejected by the worker \(401\)\); record none \(demo\)", out), out
    assert list_records() == []


# -- docs: the example plan --------------------------------------------------------------------


def docs_example_plan() -> str:
    text = DOCS.read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("workers:")]
    assert len(blocks) == 1, "docs/multikueue.md has one example plan (a yaml block starting with workers:)"
    return blocks[0]


def test_the_docs_example_plan_loads_and_names_only_lanes_validate_accepts(tmp_path, capsys):
    """Before: the example named `lanes: [multicluster]`, a lane `tau-tui validate` rejects, so no
    tau.yaml could ever select the profile it sets up by its lane."""
    plan_file = tmp_path / "multikueue-plan.yaml"
    plan_file.write_text(docs_example_plan())
    plan = load_plan(plan_file)
    assert plan.local_queue != "jobqueue" and plan.namespaces and plan.lanes
    assert cli.main(["init", str(tmp_path / "project")]) == EXIT_OK
    example = (tmp_path / "project" / "tau.yaml").read_text()
    assert "  lane: training\n" in example

    def validate_with_lane(lane: str) -> tuple[int, str]:
        config = tmp_path / "project" / f"tau-{lane}.yaml"
        config.write_text(example.replace("  lane: training\n", f"  lane: {lane}\n"))
        capsys.readouterr()
        return cli.main(["validate", str(config)]), capsys.readouterr().err

    for lane in plan.lanes:
        code, err = validate_with_lane(lane)
        assert code == EXIT_OK, f"docs example plan lane {lane!r} is refused by tau-tui validate: {err}"
    # The check itself can fail: validate refuses a lane it does not know.
    assert validate_with_lane("multicluster")[0] == EXIT_INVALID
