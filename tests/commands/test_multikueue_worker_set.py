"""#44 item 2, on the simulated fleet through the CLI: "every eligible worker" is every cluster the
live MultiKueueConfig names, not the plan's list.  A MultiKueueCluster added to the config after setup
is refused by name (step 2 ✗, `status` exit 3); the dependency matrix has a row for it (unknown: the
plan gives no credential to read it); step 3 proves the AdmissionCheck's controllerName and that it
names the plan's MultiKueueConfig.

Before: `multikueue status --flow setup` showed five ✓ and exited 0 with a rogue worker in the config,
and with the dedicated AdmissionCheck pointed at another config."""

from __future__ import annotations

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_OK, EXIT_REFUSED
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tests.multikueue_lab import cli_lab

R = ResourceKind
ROGUE = "rogue-worker"


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return cli_lab(tmp_path, monkeypatch)


def status(lab, capsys) -> tuple[int, str]:
    code = cli.main(["multikueue", "status", "--plan", lab.plan_path, "--flow", "setup"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def add_rogue_worker(lab) -> None:
    """A MultiKueueCluster the plan does not list, added to the dedicated config by hand."""
    lab.world.store.put(R.MULTIKUEUE_CLUSTER.type, {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": ROGUE},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{ROGUE}-kubeconfig"}}},
        "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active", "message": "Connected",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    lab.world.store.update(R.MULTIKUEUE_CONFIG.type, "mk-lab-workers", None,
                           lambda c: c["spec"].__setitem__("clusters", [*c["spec"]["clusters"], ROGUE]))
    lab.world.advance(2)


def test_a_worker_the_plan_does_not_list_in_the_config_is_refused_by_name(lab, capsys):
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    assert status(lab, capsys)[0] == EXIT_OK
    add_rogue_worker(lab)
    code, out = status(lab, capsys)
    assert code == EXIT_REFUSED, out
    assert "✗ 2. MultiKueueCluster and MultiKueueConfig, explicit" in out
    assert ROGUE in out and "the plan does not list" in out
    assert out.count("✓ ") == 1  # step 1 only; 3-5 locked behind the refusal
    # the matrix reads every cluster the config names: the rogue one cannot be read with the plan
    exercise = lab.exercise("setup", record=False)
    rows = {row.worker: row for row in dependency_matrix(exercise.ctx)}
    assert set(rows) == {"lab-worker-1", "lab-worker-2", ROGUE}
    assert not rows[ROGUE].ok and "not in the plan" in str(rows[ROGUE].cells[0][1])
    assert not exercise.flow.steps[4].verify(exercise.ctx).ok


def test_step_3_checks_the_admission_check_names_the_plans_config(lab, capsys):
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    capsys.readouterr()
    lab.world.store.put(R.MULTIKUEUE_CONFIG.type, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                                                   "metadata": {"name": "elsewhere"}, "spec": {"clusters": ["lab-worker-1"]}})
    lab.world.store.update(R.ADMISSION_CHECK.type, "mk-lab", None,
                           lambda ac: ac["spec"]["parameters"].__setitem__("name", "elsewhere"))
    lab.world.advance(2)
    code, out = status(lab, capsys)
    assert code == EXIT_REFUSED, out
    assert "✗ 3. Dedicated AdmissionCheck" in out and "MultiKueueConfig elsewhere, not the plan's mk-lab-workers" in out
