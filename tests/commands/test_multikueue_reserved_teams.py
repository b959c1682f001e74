"""#44 item 1, on the simulated fleet through the CLI: nothing a tenant can write stands for "no
tenant".  Setup step 4 publishes the profile to team `tau-multikueue-not-yet-authorized` and a drain's
step 1 to `tau-multikueue-drained`; a tenant who writes that team (`policy.team`, `--team` or
`TAU_TEAM`) is refused by `tau-tui submit`, no Job is created, and the dedicated LocalQueues are held
(Kueue admits nothing through them) until step 5 verifies and from drain step 1 on.

Before: the claim selected the profile; `submit` exited 0 and created the Job in the dedicated queue."""

from __future__ import annotations

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_DECLINED, EXIT_INVALID, EXIT_NOT_VERIFIED, EXIT_OK
from tau_tui.core.cluster.kinds import ResourceKind
from tests.multikueue_lab import LAB_PLAN, make_lab, retire_demo_multikueue, route_cli_to, tau_project

R = ResourceKind
PROFILE = "azure.research.multicluster.lab"
NOT_YET = "tau-multikueue-not-yet-authorized"
DRAINED = "tau-multikueue-drained"
#: The lab plan's lane: a caller that names it passes every other applicability check, so only the team decides.
LANE = ("--lane", "multicluster")
#: Every team name the MultiKueue steps use for "no tenant".
RESERVED_TEAMS = (NOT_YET, DRAINED)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    lab = make_lab(tmp_path)
    retire_demo_multikueue(lab)
    route_cli_to(lab, tmp_path, monkeypatch)
    lab.plan_path = str(tmp_path / "plan.yaml")
    (tmp_path / "plan.yaml").write_text(LAB_PLAN)
    return lab


def stop_policy(lab) -> str:
    lq = lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")
    return str((lq.get("spec") or {}).get("stopPolicy") or "None")


def jobs(lab, name: str) -> list[dict]:
    return [j for j in lab.world.store.items(R.JOB.type) if j["metadata"]["name"] == name]


def claim_every_way(lab, tmp_path, monkeypatch, capsys, team: str) -> None:
    """A tenant claims ``team`` in its tau.yaml, with --team, and with TAU_TEAM: each submit is refused."""
    name = f"claims-{team}"[:40]
    in_file = tau_project(tmp_path, PROFILE, team=team, name=name)
    assert cli.main(["submit", str(in_file), *LANE]) == EXIT_INVALID
    assert f"workload profile '{PROFILE}' cannot be used" in capsys.readouterr().err
    plain = tau_project(tmp_path, PROFILE, name=f"{name}-2")
    assert cli.main(["submit", str(plain), "--team", team, *LANE]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "reserved" in err and f"'{PROFILE}' cannot be used" in err, err
    monkeypatch.setenv("TAU_TEAM", team)
    try:
        assert cli.main(["submit", str(plain), *LANE]) == EXIT_INVALID
    finally:
        monkeypatch.delenv("TAU_TEAM")
    capsys.readouterr()
    assert not jobs(lab, name) and not jobs(lab, f"{name}-2")


def test_setup_stopped_at_the_matrix_refuses_a_tenant_claiming_the_not_yet_authorized_team(lab, tmp_path, monkeypatch, capsys):
    too_big = tmp_path / "too-big.yaml"
    too_big.write_text(LAB_PLAN + "gpusPerWorker: 64\n")
    assert cli.main(["multikueue", "setup", "--plan", str(too_big), "--yes", "--timeout", "10"]) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "✓ 4. Dedicated non-global queue and multiKueue profile" in out and "▶ 5." in out
    assert stop_policy(lab) == "Hold"  # Kueue admits nothing through the dedicated queue yet
    for team in RESERVED_TEAMS:
        claim_every_way(lab, tmp_path, monkeypatch, capsys, team)
    # step 4's evidence names the reserved teams it tried
    assert cli.main(["multikueue", "status", "--plan", str(too_big)]) == EXIT_NOT_VERIFIED
    capsys.readouterr()
    record = sorted(lab.records.glob("*setup*.json"))[-1].read_text()
    assert "claiming tau-multikueue-drained, tau-multikueue-not-yet-authorized" in record

    # The matrix verifies: tenants authorised, the queue open.
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    assert stop_policy(lab) == "None"
    capsys.readouterr()
    assert cli.main(["submit", str(tau_project(tmp_path, PROFILE, name="tenant-run")), "--lane", "multicluster"]) == EXIT_OK
    assert jobs(lab, "tenant-run")


def test_after_drain_step_1_a_tenant_claiming_the_drained_team_is_refused(lab, tmp_path, monkeypatch, capsys):
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    # the owner, at a terminal, applies drain step 1 and stops before step 2 (the ClusterQueue still runs)
    with monkeypatch.context() as terminal:
        replies = iter(["y", "n"])
        terminal.setattr("sys.stdin.isatty", lambda: True)
        terminal.setattr("builtins.input", lambda prompt="": next(replies))
        assert cli.main(["multikueue", "drain", "--plan", lab.plan_path, "--timeout", "30"]) == EXIT_DECLINED
    out = capsys.readouterr().out
    assert "✓ 1. Remove tenant authorization, stop new submissions" in out
    assert stop_policy(lab) in ("Hold", "HoldAndDrain")
    cq = lab.world.store.read(R.CLUSTER_QUEUE.type, "mk-lab-cq")
    assert (cq.get("spec") or {}).get("stopPolicy", "None") == "None"  # the profile is still Ready: only the team stops it
    lab.world.advance(2)  # TauGrid publishes the drained profile (a stale status would refuse every profile anyway)
    for team in (DRAINED, NOT_YET):
        claim_every_way(lab, tmp_path, monkeypatch, capsys, team)
    record = sorted(lab.records.glob("*drain*.json"))[-1].read_text()
    assert "claiming" in record and DRAINED in record
