"""#44 item 7, on the simulated fleet through `tau-tui multikueue`.

* Drain step 3 may skip reading a worker only when the credential it reads with is the one the drain
  revoked (no adminContext; its MultiKueueCluster removed by step 4): a 401 on the owner's own
  adminContext is "cannot check directly", never blamed on the drained credential.
  Before: `status --flow drain` showed ✓ and exited 0 while the adminContext answered 401.
* Drain step 4 removes the profiles, *then* (seed: "then") the queue and AdmissionCheck wiring: it waits
  for TauCluster's status to stop publishing the profiles, and its verification does not accept a status
  that is not current.  Before: one apply removed both and a stale status verified."""

from __future__ import annotations

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_NOT_VERIFIED, EXIT_OK
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.simulated_fleet import SimFleetConnector
from tests.multikueue_lab import LAB_PLAN, cli_lab, revoke_by_hand

R = ResourceKind
OWNER = "system:serviceaccount:kube-system:platform-owner"


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return cli_lab(tmp_path, monkeypatch, retire=True)


def test_a_401_on_the_admin_context_after_a_drain_is_no_proof_that_the_worker_is_clean(lab, tmp_path, capsys):
    # The owner's own access to lab-worker-1 is a kubeconfig context with a token of its own.
    owner = lab.fleet.mint("lab-worker-1", OWNER, context="owner-1")["users"][0]["user"]["token"]
    lab.fleet.workers["lab-worker-1"].store.grant(OWNER, ("*",), ("*",))
    plan = tmp_path / "owner.yaml"
    plan.write_text(LAB_PLAN.replace("adminContext: lab-worker-1}", "adminContext: owner-1}"))
    assert isinstance(lab.connector, SimFleetConnector)
    assert cli.main(["multikueue", "setup", "--plan", str(plan), "--yes", "--timeout", "30"]) == EXIT_OK
    assert cli.main(["multikueue", "drain", "--plan", str(plan), "--yes", "--timeout", "30"]) == EXIT_OK
    capsys.readouterr()
    revoke_by_hand(lab, "lab-worker-1", owner)  # the owner's token expires: the worker cannot be read now
    code = cli.main(["multikueue", "status", "--plan", str(plan), "--flow", "drain"])
    out = capsys.readouterr().out
    assert code == EXIT_NOT_VERIFIED, out
    assert "3. Every manager Workload terminal; workers clean, checked directly" in out
    assert "cannot check directly: lab-worker-1" in out and "rejects the drained credential" not in out


def test_step_4_removes_the_wiring_only_after_the_status_stops_publishing_the_profile(lab, capsys, monkeypatch):
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    capsys.readouterr()
    publish = lab.world.tau.update_status
    monkeypatch.setattr(lab.world.tau, "update_status", lambda: None)  # TauGrid's controller is stalled
    assert cli.main(["multikueue", "drain", "--plan", lab.plan_path, "--yes", "--timeout", "20"]) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "✓ 3." in out and "4. Remove the profiles, then the AdmissionCheck and queue wiring" in out
    assert "✓ 4." not in out
    # the profile is gone from the spec; the wiring stays while the status may still publish the profile
    assert lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp") is not None
    assert lab.world.store.read(R.ADMISSION_CHECK.type, "mk-lab") is not None
    monkeypatch.setattr(lab.world.tau, "update_status", publish)
    assert cli.main(["multikueue", "drain", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    assert lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp") is None
    assert lab.world.store.read(R.ADMISSION_CHECK.type, "mk-lab") is None
