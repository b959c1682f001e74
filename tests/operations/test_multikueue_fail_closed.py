"""On the simulated fleet: a manager that cannot be asked is an error (exit 1), never a refusal
(exit 3) or a verification; a worker kubeconfig placed in the Secret by hand is held to the rules
setup's own step 1 applies (Kueue would refuse it), so step 1 does not verify over it."""

from __future__ import annotations

import base64

import yaml

from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tests.multikueue_lab import YES, make_lab


def test_an_unreachable_manager_is_an_error_not_a_refusal(tmp_path):
    lab = make_lab(tmp_path)
    lab.world.api_outage()
    exercise = lab.exercise("setup")
    first = exercise.survey()[0]
    assert first.state is StepState.ERROR, first
    assert exercise.run(YES, timeout=5) is Outcome.FAILED
    preview = exercise.preview(exercise.flow.steps[0])
    assert preview.error and not preview.refusal and not preview.allowed


def test_step_one_does_not_verify_over_an_insecure_kubeconfig_written_by_hand(tmp_path):
    lab = make_lab(tmp_path)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED

    def make_insecure(secret: dict) -> None:
        doc = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
        cluster = doc["clusters"][0]["cluster"]
        cluster.pop("certificate-authority-data", None)
        cluster["insecure-skip-tls-verify"] = True
        secret["data"]["kubeconfig"] = base64.b64encode(yaml.safe_dump(doc).encode()).decode()
    lab.world.store.update(SECRET, "lab-worker-1-kubeconfig", "kueue-system", make_insecure)
    exercise = lab.exercise("setup")
    assert exercise.survey()[0].state is not StepState.VERIFIED
    check = exercise.flow.steps[0].verify(exercise.ctx)
    assert not check.ok
    assert "lab-worker-1-kubeconfig: the stored kubeconfig would be refused" in check.reason
    assert "insecure-skip-tls-verify" in check.reason
