"""Setup in the seed's order: the profile is published to no tenant
at step 4 and authorised only by step 5, after the dependency matrix verifies; step 4 refuses the
default queue also when the dedicated setup already exists; the tenant check asks
SubjectAccessReview with the groups a tenant really has; a cluster-wide write binding on a worker
identity is refused.  All on the simulated fleet, through the engine and through the CLI."""

from __future__ import annotations

import json
from itertools import product

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_INVALID, EXIT_NOT_VERIFIED, EXIT_OK, EXIT_REFUSED
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tau_tui.core.operations.multikueue_steps.plan import plan_from_mapping
from tau_tui.core.operations.multikueue_steps.simulated_fleet import WORKER_IDENTITY
from tau_tui.core.runconfig.profiles import Caller, SelectionError, profile_set_from_taucluster, select
from tests.multikueue_lab import YES, Lab, make_lab, route_cli_to

R = ResourceKind
PROFILE = "azure.research.multicluster.lab"
PLAN = {
    "workers": [{"name": "lab-worker-1", "context": "lab-worker-1", "adminContext": "lab-worker-1"},
                {"name": "lab-worker-2", "context": "lab-worker-2", "adminContext": "lab-worker-2"}],
    "namespaces": ["team-nlp"], "teams": ["nlp"], "lanes": ["training"],
    "admissionCheck": "mk-lab", "config": "mk-lab-workers", "clusterQueue": "mk-lab-cq", "localQueue": "mk-lab-queue",
    "profile": PROFILE, "flavor": "mk-lab-gpu",
}
#: Every tenant caller a plan's profile could be asked for: its namespaces × its teams (and none, and
#: another team) × its lanes (and none).
CALLERS = [Caller(ns, team, lane) for ns, team, lane in product(["team-nlp"], ["nlp", None, "vision"], ["training", None])]
AUTHORISED = [Caller("team-nlp", "nlp", "training")]


def plan(**changes):
    return plan_from_mapping({**PLAN, **changes}, "plan.yaml")


def refused_to_everyone(lab: Lab) -> None:
    profiles = profile_set_from_taucluster(lab.backend.tau_cluster().raw)
    for caller in CALLERS:
        with pytest.raises(SelectionError):
            select(profiles, PROFILE, caller)


def selectable_by_the_tenants(lab: Lab) -> None:
    profiles = profile_set_from_taucluster(lab.backend.tau_cluster().raw)
    for caller in AUTHORISED:
        assert select(profiles, PROFILE, caller).name == PROFILE


def states(exercise) -> list[str]:
    return [s.state.value for s in exercise.survey()]


# -- tenants are authorised only after the matrix verifies --------------------------------

def test_setup_stopped_at_the_matrix_leaves_every_tenant_refused_then_authorises_when_it_verifies(lab):
    too_big = lab.exercise("setup", plan(gpusPerWorker=64))
    assert too_big.run(YES, timeout=10) is Outcome.NOT_VERIFIED
    assert states(too_big) == ["verified"] * 4 + ["ready"]
    refused_to_everyone(lab)
    matrix = too_big.survey()[4].check.reason
    assert "GPU capacity" in matrix and "tenants are not authorised" in matrix
    declared = next(p for p in lab.backend.tau_cluster().raw["spec"]["workloadProfiles"] if p["name"] == PROFILE)
    assert declared["applicability"]["teams"] == ["tau-multikueue-not-yet-authorized"]

    fits = lab.exercise("setup", plan())
    assert "differs from the plan: gpusPerWorker 64 (the plan's: 8)" in fits.survey()[3].check.reason
    assert fits.run(YES, timeout=30) is Outcome.VERIFIED
    selectable_by_the_tenants(lab)
    declared = next(p for p in lab.backend.tau_cluster().raw["spec"]["workloadProfiles"] if p["name"] == PROFILE)
    assert (declared["gpusPerWorker"], declared["applicability"]) == (
        8, {"namespaces": ["team-nlp"], "teams": ["nlp"], "lanes": ["training"]})
    records = sorted(lab.records.glob("*setup*.json"))
    steps = json.loads(records[-1].read_text())["steps"]
    assert steps[-1]["step"] == "matrix" and steps[-1]["result"] == "verified"
    assert any("patch TauCluster cluster" in line for line in steps[-1]["applied"])
    assert any("tenants authorised" in e and "team-nlp/nlp/training" in e for e in steps[-1]["evidence"])


def test_step_4_alone_publishes_the_profile_to_no_tenant(lab):
    exercise = lab.exercise("setup", plan())
    for step in exercise.flow.steps[:4]:
        assert exercise.run_step(step, YES, timeout=30) is Outcome.VERIFIED, step.key
    refused_to_everyone(lab)
    evidence = " ".join(exercise.survey()[3].check.evidence)
    assert "select() refuses it to every tenant" in evidence


def test_setup_after_a_partial_drain_republishes_unauthorised_and_step_5_authorises(lab):
    from tests.multikueue_lab import retire_demo_multikueue

    retire_demo_multikueue(lab)  # a drain discovers every MultiKueue queue: leave only the plan's
    assert lab.exercise("setup", plan()).run(YES, timeout=30) is Outcome.VERIFIED
    drain = lab.exercise("drain", plan())
    assert drain.run_step(drain.flow.steps[0], YES, timeout=10) is Outcome.VERIFIED
    refused_to_everyone(lab)
    again = lab.exercise("setup", plan())
    assert states(again) == ["verified", "verified", "verified", "ready", "locked"]
    assert "removed by a drain" in again.survey()[3].check.reason
    assert again.run_step(again.flow.steps[3], YES, timeout=30) is Outcome.VERIFIED
    refused_to_everyone(lab)  # step 4 gives nothing back to tenants
    # the LocalQueue stays held until step 5 verifies (#44 item 1); the ClusterQueue is resumed
    assert lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")["spec"]["stopPolicy"] == "Hold"
    assert lab.world.store.read(R.CLUSTER_QUEUE.type, "mk-lab-cq")["spec"].get("stopPolicy", "None") == "None"
    assert again.run(YES, timeout=30) is Outcome.VERIFIED
    selectable_by_the_tenants(lab)
    assert lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")["spec"]["stopPolicy"] == "None"


def test_setup_after_a_full_drain_authorises_only_at_step_5(lab):
    from tests.multikueue_lab import retire_demo_multikueue

    retire_demo_multikueue(lab)
    assert lab.exercise("setup", plan()).run(YES, timeout=30) is Outcome.VERIFIED
    assert lab.exercise("drain", plan(), inputs={"cancel": "all-pending"}).run(YES, timeout=30) is Outcome.VERIFIED
    for worker in lab.fleet.workers:
        lab.fleet.mint(worker, context=worker)  # the drain revoked the old credentials
    again = lab.exercise("setup", plan())
    for step in again.flow.steps[:4]:
        assert again.run_step(step, YES, timeout=30) is Outcome.VERIFIED, step.key
    refused_to_everyone(lab)
    assert again.run(YES, timeout=30) is Outcome.VERIFIED
    selectable_by_the_tenants(lab)


# -- the default queue is refused at step 4 also when the setup exists -------------------

def test_a_plan_naming_the_default_queue_is_refused_at_step_4_over_an_existing_setup(lab):
    assert lab.exercise("setup", plan()).run(YES, timeout=30) is Outcome.VERIFIED
    default = lab.exercise("setup", plan(localQueue="jobqueue"))
    status = default.survey()[3]
    assert status.state is StepState.REFUSED and "jobqueue is the default queue" in status.check.reason
    assert default.run(YES, timeout=10) is Outcome.REFUSED
    assert "mk-lab" not in json.dumps(lab.world.store.read(R.CLUSTER_QUEUE.type, "jobqueue"))


def test_an_existing_profile_or_local_queue_leading_to_the_default_queue_is_refused_at_step_4(lab):
    assert lab.exercise("setup", plan()).run(YES, timeout=30) is Outcome.VERIFIED

    def point_profile_at_jobqueue(tc):
        for p in tc["spec"]["workloadProfiles"]:
            if p["name"] == PROFILE:
                p["defaultLocalQueue"] = "jobqueue"
    lab.world.store.update(R.TAU_CLUSTER.type, "cluster", None, point_profile_at_jobqueue)
    lab.world.advance(2)
    status = lab.exercise("setup", plan(), record=False).survey()[3]
    assert status.state is StepState.REFUSED and "defaultLocalQueue jobqueue, the default queue" in status.check.reason

    lab2 = make_lab(lab.records.parent / "second")
    lab2.world.store.put(R.LOCAL_QUEUE.type, {"metadata": {"name": "mk-lab-queue", "namespace": "team-nlp"},
                                              "spec": {"clusterQueue": "jobqueue"}})
    exercise = lab2.exercise("setup", plan())
    assert exercise.run(YES, timeout=30) is Outcome.REFUSED
    status = exercise.survey()[3]
    assert status.state is StepState.REFUSED and "feeds ClusterQueue jobqueue, which backs the default queue" in status.check.reason


# -- the tenant check with groups; a cluster-wide write binding is refused ---------------

@pytest.mark.parametrize("group", ["system:serviceaccounts:team-nlp", "system:serviceaccounts", "system:authenticated"])
def test_a_grant_to_a_tenant_group_is_seen_by_the_tenant_check(lab, group):
    assert lab.exercise("setup", plan()).run(YES, timeout=30) is Outcome.VERIFIED
    lab.world.store.grant(group, ("get",), ("secrets",), "kueue-system")
    status = lab.exercise("setup", plan(), record=False).survey()[0]
    assert status.state is StepState.READY
    assert "tenant system:serviceaccount:team-nlp:default can get secrets in kueue-system" in status.check.reason
    assert group in status.check.reason


def test_the_plans_tenants_are_checked_with_their_groups_too(lab):
    tenants = plan(tenants=["alice@example.com"])
    assert lab.exercise("setup", tenants).run(YES, timeout=30) is Outcome.VERIFIED
    lab.world.store.grant("system:authenticated", ("list",), ("secrets",), "kueue-system")
    reason = lab.exercise("setup", tenants, record=False).survey()[0].check.reason
    assert "tenant alice@example.com can list secrets in kueue-system" in reason
    lab.world.store.identities["system:authenticated"].rules.clear()
    evidence = " ".join(lab.exercise("setup", tenants, record=False).survey()[0].check.evidence)
    assert "alice@example.com (groups system:authenticated)" in evidence
    assert "system:serviceaccount:team-nlp:default (groups system:serviceaccounts, system:serviceaccounts:team-nlp" in evidence


def test_a_cluster_wide_write_binding_on_the_worker_identity_is_refused(lab):
    lab.fleet.workers["lab-worker-2"].store.grant(WORKER_IDENTITY, ("create", "delete"), ("jobs.batch",))
    exercise = lab.exercise("setup", plan())
    status = exercise.survey()[0]
    assert status.state is StepState.REFUSED
    assert "worker lab-worker-2" in status.check.reason and "cluster-wide write binding" in status.check.reason
    assert exercise.run(YES, timeout=10) is Outcome.REFUSED
    assert lab.world.store.read(R.MULTIKUEUE_CLUSTER.type, "lab-worker-2") is None


# -- the acceptance through the CLI: `profiles` and `submit` refuse every tenant ----------------------

TAU_YAML = f"""\
name: mk-train
image: python:3.12-slim
entrypoint: train.py
policy:
  namespace: team-nlp
  profile: {PROFILE}
"""


@pytest.fixture
def cli_lab(tmp_path, monkeypatch):
    """The CLI on the simulated fleet (tests/multikueue_lab.route_cli_to) and a tenant's tau.yaml."""
    lab = make_lab(tmp_path)
    route_cli_to(lab, tmp_path, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    (project / "tau.yaml").write_text(TAU_YAML)
    (project / "train.py").write_text("print('train')\n")
    return lab, project


def write_plan(tmp_path, **changes) -> str:
    import yaml

    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({**PLAN, **changes}))
    return str(path)


def caller_args(caller: Caller) -> list[str]:
    return (["--team", caller.team] if caller.team else []) + (["--lane", caller.lane] if caller.lane else [])


def test_cli_setup_stopped_at_the_matrix_profiles_and_submit_refuse_every_tenant(cli_lab, tmp_path, capsys):
    lab, project = cli_lab
    assert cli.main(["multikueue", "setup", "--plan", write_plan(tmp_path, gpusPerWorker=64), "--yes",
                     "--timeout", "10"]) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "✓ 4. Dedicated non-global queue and multiKueue profile" in out and "▶ 5." in out
    for caller in CALLERS:
        assert cli.main(["profiles", "-n", caller.namespace, *caller_args(caller)]) == EXIT_OK
        assert f"{PROFILE} (MultiKueue, Alpha): ✗ not selectable" in capsys.readouterr().out, caller
        assert cli.main(["submit", str(project / "tau.yaml"), "--dry-run=server", *caller_args(caller)]) == EXIT_INVALID
        assert f"workload profile '{PROFILE}' cannot be used" in capsys.readouterr().err, caller

    assert cli.main(["multikueue", "setup", "--plan", write_plan(tmp_path), "--yes", "--timeout", "30"]) == EXIT_OK
    capsys.readouterr()
    [tenant] = AUTHORISED
    assert cli.main(["profiles", "-n", tenant.namespace, *caller_args(tenant)]) == EXIT_OK
    assert f"{PROFILE} (MultiKueue, Alpha): ✓ selectable" in capsys.readouterr().out
    assert cli.main(["submit", str(project / "tau.yaml"), "--dry-run=server", *caller_args(tenant)]) == EXIT_OK
    assert "submission id" in capsys.readouterr().out


def test_cli_a_plan_naming_the_default_queue_over_an_existing_setup_exits_3(cli_lab, tmp_path, capsys):
    assert cli.main(["multikueue", "setup", "--plan", write_plan(tmp_path), "--yes", "--timeout", "30"]) == EXIT_OK
    capsys.readouterr()
    assert cli.main(["multikueue", "setup", "--plan", write_plan(tmp_path, localQueue="jobqueue"), "--yes",
                     "--timeout", "10"]) == EXIT_REFUSED
    out = capsys.readouterr().out
    assert "✗ 4. Dedicated non-global queue and multiKueue profile" in out and "jobqueue is the default queue" in out
