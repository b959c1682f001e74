"""Credential rotation and revocation on the simulated fleet:
rotation proves Kueue reconnected with the new credential (a stale Active=True is not
proof), and revocation is verified only by the worker's 401, kept in the exercise record
so a restart still knows what was revoked; without adminContext it is ⚠, never ✓."""

from __future__ import annotations

import base64
import json

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.core.operations.multikueue_steps.records import list_records
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.operations.multikueue_steps.simulated_fleet import WORKER_IDENTITY
from tests.multikueue_lab import (
    LAB_PLAN,
    YES,
    Lab,
    drive_cli_with,
    retire_demo_multikueue,
    revoke_by_hand,
    token_of,
    without_admin,
)

R = ResourceKind
NS = "kueue-system"


def set_up(lab: Lab) -> None:
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED


def set_up_to_drain(lab: Lab) -> None:
    """Setup, with only the lab plan's MultiKueue wiring left for the drain to discover."""
    retire_demo_multikueue(lab)
    set_up(lab)


def rotation(lab: Lab, *, plan=None, **inputs):
    return lab.exercise("rotate", plan, vault=CredentialVault(lab.backend.current_context),
                        inputs={"worker": "lab-worker-1", **inputs})


def active(lab: Lab, worker: str = "lab-worker-1") -> dict:
    mkc = lab.world.store.read(R.MULTIKUEUE_CLUSTER.type, worker)
    return next(c for c in mkc["status"]["conditions"] if c["type"] == "Active")


def record_of(lab: Lab, flow: str) -> dict:
    [path] = [r.path for r in list_records(lab.records) if r.flow == flow][-1:]
    return json.loads(path.read_text())


# -- a stale Active=True is not proof ------------------------------------------

def test_a_new_credential_kueue_cannot_use_is_not_verified_and_the_old_one_is_kept(lab, memory_keyring):
    set_up(lab)
    old_token = token_of(lab, "lab-worker-1-kubeconfig")
    new = lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    rotate = rotation(lab, new_context="lab-worker-1-new")
    assert rotate.run_step(rotate.flow.steps[0], YES, timeout=5) is Outcome.VERIFIED
    # The new credential dies before Kueue gets it (expired, revoked by the identity system).
    revoke_by_hand(lab, "lab-worker-1", new["users"][0]["user"]["token"])
    assert active(lab)["status"] == "True"  # the old connection's Active=True, from before the patch
    assert rotate.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    statuses = rotate.survey()
    assert [s.state.value for s in statuses] == ["verified", "ready", "locked"]
    assert "is not Active with the new credential" in statuses[1].check.reason
    # Step 3 never ran: the old credential still works, and the keyring still holds both.
    assert old_token in lab.fleet.workers["lab-worker-1"].store.tokens
    assert len(memory_keyring.entries) == 2


def test_an_active_true_from_before_the_patch_is_not_a_reconnect(lab, memory_keyring, monkeypatch):
    set_up(lab)
    lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    before = dict(active(lab))
    # Kueue's MultiKueue controller is not running: nothing will ever reconnect.
    monkeypatch.setattr(lab.world.multikueue, "update_clusters", lambda: None)
    rotate = rotation(lab, new_context="lab-worker-1-new")
    assert rotate.run(YES, timeout=10) is Outcome.NOT_VERIFIED
    assert active(lab) == before
    step = rotate.survey()[1]
    assert step.state.value == "ready" and "no reconnect seen" in step.check.reason
    assert "revoke-old" not in [s["step"] for s in record_of(lab, "rotate")["steps"]]


def test_rotation_proves_the_reconnect_and_keeps_its_time_on_the_secret(lab, memory_keyring):
    set_up(lab)
    transitions_before = active(lab)["lastTransitionTime"]
    lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    rotate = rotation(lab, new_context="lab-worker-1-new")
    assert rotate.run_step(rotate.flow.steps[0], YES, timeout=5) is Outcome.VERIFIED
    assert rotate.run_step(rotate.flow.steps[1], YES, timeout=20) is Outcome.VERIFIED
    annotations = lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", NS)["metadata"]["annotations"]
    dropped = annotations["tau.azure.com/rotation-disconnected-at"]
    assert dropped > transitions_before and annotations["tau.azure.com/credential-written-at"]
    assert active(lab)["status"] == "True" and active(lab)["lastTransitionTime"] >= dropped
    events = [e for e in lab.world.store.items(R.EVENT.type) if e.get("reason") == "BadKubeConfig"]
    assert events, "Kueue reported the withheld kubeconfig"
    # A restart: the proof comes from the Secret's annotation and the condition, not from memory.
    resumed = rotation(lab)
    step = resumed.survey()[1]
    assert step.state.value == "verified"
    assert any(f"dropped the old connection at {dropped}" in e for e in step.check.evidence)


# -- revocation is proven by a 401, recorded, and never ✓ without it ---------------

def test_drain_without_admin_context_ends_revoke_in_your_identity_system(lab):
    set_up_to_drain(lab)
    drain = lab.exercise("drain", without_admin(lab.plan), inputs={"cancel": "all-pending"})
    assert drain.run(YES, timeout=30) is Outcome.NOT_VERIFIED
    revoke = drain.survey()[4]
    assert revoke.mark == "⚠" and revoke.state.value == "action"
    assert revoke.check.reason.startswith("revocation unproven") and "still authenticates" in revoke.check.reason
    assert "in your identity system" in revoke.check.action
    record = record_of(lab, "drain")
    assert record["outcome"] == "not-verified"
    assert [(e["worker"], e["http_status"]) for e in record["revocations"]] == [("lab-worker-1", None), ("lab-worker-2", None)]
    assert "identity system" in record["steps"][-1]["action"]


def test_revocation_evidence_is_in_the_record_and_survives_a_restart(lab):
    set_up_to_drain(lab)
    assert lab.exercise("drain", inputs={"cancel": "all-pending"}).run(YES, timeout=30) is Outcome.VERIFIED
    record = record_of(lab, "drain")
    entries = {e["worker"]: e for e in record["revocations"]}
    assert set(entries) == {"lab-worker-1", "lab-worker-2"}
    for entry in entries.values():
        assert entry["http_status"] == 401 and entry["proven_at"] and entry["fingerprint"].startswith("sha256:")
        assert "deleted token Secret" in entry["how"]
    text = "".join(p.read_text() for p in lab.records.rglob("*") if p.is_file())
    assert all(t not in text for t in lab.tokens())
    # A restart: a new exercise still proves step 5 from the record, with the 401.
    again = lab.exercise("drain").survey()[4]
    assert again.state.value == "verified"
    assert all(any(entries[w]["fingerprint"] in e and "HTTP 401" in e for e in again.check.evidence) for w in entries)


def test_a_revocation_that_did_not_take_is_still_unproven_after_a_restart(lab, memory_keyring):
    set_up_to_drain(lab)
    token = token_of(lab, "lab-worker-1-kubeconfig")
    # The worker's token Secret is not where revocation looks (an identity the tool cannot revoke).
    world = lab.fleet.workers["lab-worker-1"]
    for secret in lab.fleet.token_secrets("lab-worker-1", WORKER_IDENTITY):
        if base64.b64decode(secret["data"]["token"]).decode() == token:
            world.store.put(SECRET, dict(secret, type="Opaque"))
    vault = CredentialVault(lab.backend.current_context)
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"}, vault=vault)
    assert drain.run(YES, timeout=10) is Outcome.NOT_VERIFIED
    assert "still authenticates on lab-worker-1" in drain.survey()[4].check.reason
    # Restart: nothing in memory; the record says what was revoked, the keyring still holds it to ask with.
    restarted = lab.exercise("drain", vault=CredentialVault(lab.backend.current_context))
    step = restarted.survey()[4]
    assert step.state.value == "ready" and "still authenticates on lab-worker-1" in step.check.reason
    revoke_by_hand(lab, "lab-worker-1", token)
    assert restarted.run(YES, timeout=10) is Outcome.VERIFIED
    assert memory_keyring.entries == {}  # the proof is in, the credential is forgotten
    [entry] = [e for e in record_of(lab, "drain")["revocations"] if e["worker"] == "lab-worker-1" and e["http_status"]]
    assert entry["http_status"] == 401


def test_rotation_without_admin_context_is_not_verified_until_the_old_credential_is_rejected(lab, memory_keyring):
    set_up(lab)
    old_token = token_of(lab, "lab-worker-1-kubeconfig")
    lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    plan = without_admin(lab.plan)
    rotate = rotation(lab, plan=plan, new_context="lab-worker-1-new")
    assert rotate.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    step = rotate.survey()[2]
    assert step.mark == "⚠" and "revocation unproven" in step.check.reason and "identity system" in step.check.action
    assert len(memory_keyring.entries) == 2 and record_of(lab, "rotate")["outcome"] == "not-verified"
    revoke_by_hand(lab, "lab-worker-1", old_token)
    resumed = rotation(lab, plan=plan)
    assert resumed.run(YES, timeout=20) is Outcome.VERIFIED
    assert memory_keyring.entries == {}
    record = record_of(lab, "rotate")
    assert record["outcome"] == "verified"
    assert [e["http_status"] for e in record["revocations"] if e["worker"] == "lab-worker-1"][-1] == 401


def test_the_cli_drain_without_admin_context_exits_4_and_says_what_to_do(lab, tmp_path, monkeypatch, capsys):
    from tau_tui import cli
    from tau_tui.commands.parser import EXIT_NOT_VERIFIED

    drive_cli_with(lab, tmp_path, monkeypatch)
    lab.records = tmp_path / "data" / "tau-tui" / "multikueue" / "records"
    set_up_to_drain(lab)
    plan = tmp_path / "no-admin.yaml"
    plan.write_text(LAB_PLAN.replace(", adminContext: lab-worker-1", "").replace(", adminContext: lab-worker-2", ""))
    assert cli.main(["multikueue", "drain", "--plan", str(plan), "--yes", "--timeout", "30"]) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "⚠ 5. Revoke and delete the worker credentials" in out and "revocation unproven" in out
    assert "⚠ to do: revoke sha256:" in out and "in your identity system" in out
    assert "drain and rollback" in out.lower() and "not-verified" in out
    assert record_of(lab, "drain")["outcome"] == "not-verified"
