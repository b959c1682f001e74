"""On the simulated fleet: proofs that must not outlive what they prove.

* a 401 kept from an earlier drain proves nothing about the credentials a later setup stored;
* a setup run again while the matrix no longer verifies withdraws the tenants' authorisation
  (setup not verified ⇒ no tenant can select the profile);
* a drain without adminContext verifies once the owner revoked the credentials by hand, although
  the workers can then no longer be read with them (they were checked before step 4 removed them)."""

from __future__ import annotations

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.runconfig.profiles import Caller, SelectionError, profile_set_from_taucluster, select
from tests.multikueue_lab import YES, Lab, make_lab, retire_demo_multikueue, revoke_by_hand, token_of, without_admin

R = ResourceKind


@pytest.fixture
def lab(tmp_path) -> Lab:
    lab = make_lab(tmp_path)
    retire_demo_multikueue(lab)
    return lab


def tenant_can_select(lab: Lab) -> bool:
    profiles = profile_set_from_taucluster(lab.backend.tau_cluster().raw)
    try:
        select(profiles, lab.plan.profile, Caller("team-nlp", "nlp", "multicluster"))
    except SelectionError:
        return False
    return True


def test_an_earlier_drains_401_is_no_proof_for_credentials_a_later_setup_stored(lab):
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    assert lab.exercise("drain", inputs={"cancel": "all-pending"}).run(YES, timeout=30) is Outcome.VERIFIED
    for worker in lab.fleet.workers:
        lab.fleet.mint(worker, context=worker)  # the drain revoked the old credentials
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    live = token_of(lab, "lab-worker-1-kubeconfig")
    lab.world.store.remove(SECRET, "lab-worker-1-kubeconfig", "kueue-system")  # deleted by hand, never revoked
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert drain.run(YES, timeout=30) is not Outcome.VERIFIED
    assert live in lab.fleet.workers["lab-worker-1"].store.tokens  # it still authenticates: nothing may say ✓
    revoke = drain.survey()[4]
    assert revoke.state is not StepState.VERIFIED, revoke


def test_setup_run_again_while_the_matrix_fails_withdraws_the_tenants_authorisation(lab):
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    assert tenant_can_select(lab)
    lab.fleet.workers["lab-worker-1"].store.remove(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.NOT_VERIFIED
    assert not tenant_can_select(lab)


def test_a_drain_without_admin_context_verifies_once_the_owner_revoked_by_hand(lab, memory_keyring):
    plan = without_admin(lab.plan)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED  # the matrix is read with adminContext
    tokens = {w: token_of(lab, f"{w}-kubeconfig") for w in lab.fleet.workers}
    vault = CredentialVault(lab.backend.current_context)  # as the CLI's drain keeps the revoked credential to ask with
    first = lab.exercise("drain", plan, inputs={"cancel": "all-pending"}, vault=vault)
    assert first.run(YES, timeout=30) is Outcome.NOT_VERIFIED
    for worker, token in tokens.items():
        revoke_by_hand(lab, worker, token)
    again = lab.exercise("drain", plan, vault=vault)
    states = [s.state for s in again.survey()]
    assert states[2] is StepState.VERIFIED, again.survey()[2].check
    assert again.run(YES, timeout=30) is Outcome.VERIFIED
    evidence = " ".join(again.survey()[2].check.evidence)
    assert "rejects the drained credential sha256:" in evidence and "(401)" in evidence
