"""The MultiKueue step engine on the simulated fleet: every setup and drain step,
rotation, the refusals, resume after restart, and the exercise records."""

from __future__ import annotations

import json

import keyring
import pytest
from keyring.backends import fail

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.credentials import (
    CredentialError,
    credential_from_document,
    insecure_reasons,
    standalone,
)
from tau_tui.core.operations.multikueue_steps.engine import Outcome, Refused, StepState
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.records import list_records
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.operations.multikueue_steps.simulated_fleet import WORKER_IDENTITY
from tau_tui.core.runconfig.profiles import Caller, SelectionError, profile_set_from_taucluster, select
from tests.multikueue_lab import YES, Lab, dispatch, make_lab, retire_demo_multikueue

R = ResourceKind


def set_up(lab: Lab) -> None:
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED


def states(exercise) -> list[str]:
    return [s.state.value for s in exercise.survey()]


def test_setup_runs_every_step_in_order_and_records_it(lab):
    exercise = lab.exercise("setup")
    assert states(exercise) == ["ready", "locked", "locked", "locked", "locked"]
    assert exercise.run(YES, timeout=30) is Outcome.VERIFIED
    assert states(exercise) == ["verified"] * 5
    mk = lab.backend.tau_cluster().condition("MultiKueueReady")
    assert mk.status == "True" and mk.observed_generation == lab.backend.tau_cluster().generation
    for worker in ("lab-worker-1", "lab-worker-2"):
        secret = lab.world.store.read(SECRET, f"{worker}-kubeconfig", "kueue-system")
        assert set(secret["data"]) == {"kubeconfig"}
        assert lab.world.store.read(R.MULTIKUEUE_CLUSTER.type, worker)["status"]["conditions"][0]["status"] == "True"
    [record] = list_records(lab.records)
    assert (record.flow, record.outcome, record.steps, record.identity) == ("setup", "verified", 5, "kubernetes-admin")
    data = json.loads(record.path.read_text())
    assert [s["result"] for s in data["steps"]] == ["verified"] * 5  # the matrix step authorises the tenants
    assert any("SubjectAccessReview: no tenant" in e for e in data["steps"][0]["evidence"])
    assert record.path.with_suffix(".md").read_text().startswith("# MultiKueue setup exercise")


def test_a_locked_step_cannot_be_applied(lab):
    exercise = lab.exercise("setup")
    admission_check = exercise.flow.steps[2]
    with pytest.raises(Refused, match="locked"):
        exercise.apply(admission_check)
    assert lab.world.store.read(R.ADMISSION_CHECK.type, "mk-lab") is None


def test_previews_redact_the_credential_and_dry_run_creates_nothing(lab):
    exercise = lab.exercise("setup")
    preview = exercise.preview(exercise.flow.steps[0])
    assert preview.allowed and "<redacted>" in preview.text()
    assert all(token not in preview.text() for token in lab.tokens())
    assert "(server dry-run)" in preview.text()
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None


@pytest.mark.parametrize("mutate, reason", [
    (lambda c: c.update({"insecure-skip-tls-verify": True}), "insecure-skip-tls-verify"),
    (lambda c: c.update(server=c["server"].replace("https://", "http://")), "plain http"),
    (lambda c: c.pop("certificate-authority-data"), "no certificate-authority-data"),
])
def test_insecure_kubeconfigs_are_refused_with_the_reason(lab, mutate, reason):
    doc = lab.fleet.mint("lab-worker-1", context="bad")
    mutate(doc["clusters"][0]["cluster"])
    assert any(reason in r for r in insecure_reasons(doc))
    plan = lab.plan.__class__(**{**lab.plan.__dict__, "workers": (lab.plan.workers[0].__class__("lab-worker-1", context="bad"),)})
    exercise = lab.exercise("setup", plan)
    status = exercise.survey()[0]
    assert status.state is StepState.REFUSED and reason in status.check.reason
    assert exercise.run(YES, timeout=5) is Outcome.REFUSED
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None


def test_token_files_exec_plugins_and_basic_auth_are_refused():
    doc = {"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
           "clusters": [{"name": "c", "cluster": {"server": "https://w:6443", "certificate-authority-data": "Q0E="}}],
           "users": [{"name": "u", "user": {"tokenFile": "/t", "exec": {"command": "az"}, "username": "a", "password": "b"}}]}
    reasons = " ".join(insecure_reasons(standalone(doc, None, "test")))
    assert "tokenFile" in reasons and "exec" in reasons and "basic auth" in reasons
    with pytest.raises(CredentialError, match="refused"):
        credential_from_document("w", standalone(doc, None, "test"), "test")


def test_a_credential_without_the_verbs_is_refused_and_named(lab):
    lab.fleet.mint("lab-worker-1", identity="system:serviceaccount:kueue-system:weak", context="weak")
    plan = lab.plan.__class__(**{**lab.plan.__dict__, "workers": (lab.plan.workers[0].__class__("lab-worker-1", context="weak"),)})
    status = lab.exercise("setup", plan).survey()[0]
    assert status.state is StepState.REFUSED
    assert "lacks verbs Kueue needs" in status.check.reason and "create jobs.batch in team-nlp" in status.check.reason


def test_more_than_kueue_needs_and_a_cluster_wide_write_binding_are_refused(lab):
    lab.fleet.workers["lab-worker-1"].store.grant(WORKER_IDENTITY, ("get", "list"), ("secrets",), "team-nlp")
    status = lab.exercise("setup").survey()[0]
    assert status.state is StepState.REFUSED and "more than Kueue needs" in status.check.reason and "secrets" in status.check.reason
    lab.fleet.workers["lab-worker-1"].store.identities[WORKER_IDENTITY].rules.pop()
    lab.fleet.workers["lab-worker-1"].store.grant(WORKER_IDENTITY, ("create",), ("jobs.batch", "workloads.kueue.x-k8s.io"))
    status = lab.exercise("setup", record=False).survey()[0]
    assert status.state is StepState.REFUSED and "cluster-wide write binding" in status.check.reason
    assert "create jobs.batch in kube-system" in status.check.reason


def test_a_tenant_that_can_read_the_secret_fails_verification(lab):
    set_up(lab)
    lab.world.store.grant("system:serviceaccount:team-nlp:default", ("get",), ("secrets",), "kueue-system")
    status = lab.exercise("setup", record=False).survey()[0]
    assert status.state is StepState.READY
    assert "tenant system:serviceaccount:team-nlp:default can get secrets in kueue-system" in status.check.reason


def test_losing_the_verbs_turns_the_worker_inactive_with_the_reason(lab):
    set_up(lab)
    for worker in lab.fleet.workers.values():
        worker.store.identities[WORKER_IDENTITY].rules.clear()
    lab.world.advance(2)
    mkc = lab.backend.get(R.MULTIKUEUE_CLUSTER, "lab-worker-1")
    active = mkc.condition("Active")
    assert active.status == "False" and "forbidden" in active.message
    statuses = lab.exercise("setup", record=False).survey()
    assert statuses[0].state is StepState.REFUSED and "lacks verbs Kueue needs" in statuses[0].check.reason
    check = lab.exercise("setup", record=False).flow.steps[2].verify(lab.exercise("setup", record=False).ctx)
    assert not check.ok and "forbidden" in check.reason


@pytest.mark.parametrize("plan_change, expected", [
    ({"local_queue": "jobqueue"}, "is the default queue"),
    ({"cluster_queue": "jobqueue"}, "backs the default queue"),
    ({"namespaces": ()}, "non-global"),
])
def test_the_default_queue_guard_refuses(lab, plan_change, expected):
    plan = lab.plan.__class__(**{**lab.plan.__dict__, **plan_change})
    exercise = lab.exercise("setup", plan)
    exercise.run(YES, timeout=30)
    status = exercise.survey()[3]
    assert status.state is StepState.REFUSED and expected in status.check.reason
    assert "mk-lab" not in str(lab.world.store.read(R.CLUSTER_QUEUE.type, "jobqueue"))


def test_the_guard_follows_workspace_defaults_and_global_profiles(lab):
    lab.world.store.update(R.TAU_CLUSTER.type, "cluster", None,
                           lambda o: o["spec"].__setitem__("workspaceDefaults", {"defaultQueue": "mk-lab-queue"}))
    lab.exercise("setup").run(YES, timeout=30)
    assert "is the default queue" in lab.exercise("setup", record=False).survey()[3].check.reason
    lab.world.store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o["spec"].pop("workspaceDefaults"))
    lab.world.store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o["spec"]["workloadProfiles"].append(
        {"name": "global.mk", "defaultLocalQueue": "mk-lab-queue", "gpusPerWorker": 1, "workerCount": 1,
         "priorities": {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"}}))
    reason = lab.exercise("setup", record=False).survey()[3].check.reason
    assert "global profile global.mk uses queue mk-lab-queue" in reason


def test_a_version_mismatch_is_flagged_out_of_contract(lab):
    set_up(lab)
    worker = lab.fleet.workers["lab-worker-2"]
    worker.settings.kubernetes_version = "v1.30.7"
    worker.store.update(R.NODE.type, "x", None, lambda o: None)
    from tau_tui.core.operations.multikueue_steps.access import CRD
    worker.store.update(CRD, "workloads.kueue.x-k8s.io", None,
                        lambda o: o["metadata"]["labels"].__setitem__("app.kubernetes.io/version", "v0.16.3"))
    exercise = lab.exercise("setup", record=False)
    rows = {row.worker: dict(row.cells) for row in dependency_matrix(exercise.ctx)}
    assert rows["lab-worker-1"]["Kubernetes"].status == "ok"
    assert rows["lab-worker-2"]["Kubernetes"].mark == "✗" and "out of contract" in rows["lab-worker-2"]["Kubernetes"].text
    assert rows["lab-worker-2"]["Kueue"].mark == "✗" and "v0.16.3 vs manager v0.17.0" in rows["lab-worker-2"]["Kueue"].text
    assert exercise.survey()[4].state is StepState.READY


def test_matrix_cells_the_credential_cannot_read_name_the_permission(tmp_path):
    lab = make_lab(tmp_path, admin=False)
    set_up_outcome = lab.exercise("setup").run(YES, timeout=30)
    assert set_up_outcome is Outcome.NOT_VERIFIED
    rows = {row.worker: dict(row.cells) for row in dependency_matrix(lab.exercise("setup", record=False).ctx)}
    gpu = rows["lab-worker-1"]["GPU capacity"]
    assert gpu.status == "unknown" and "nodes" in gpu.text and "list" in gpu.text


def test_the_profile_boundary_refuses_a_global_profile_on_jobqueue_with_multikueue_not_ready(lab):
    def add_global_mk(o):
        o["spec"]["workloadProfiles"].append(
            {"name": "global.multikueue", "defaultLocalQueue": "jobqueue", "executionTarget": "multiKueue", "gpusPerWorker": 8,
             "workerCount": 1, "priorities": {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"}})
    lab.world.store.update(R.TAU_CLUSTER.type, "cluster", None, add_global_mk)
    for name in ("westus3-worker", "eastus2-worker"):
        lab.world.set_multikueue_cluster_active(name, False)
    lab.world.advance(2)
    profiles = profile_set_from_taucluster(lab.backend.tau_cluster().raw)
    with pytest.raises(SelectionError) as err:
        select(profiles, "global.multikueue", Caller("taugrid-default", None, None))
    text = str(err.value)
    assert "MultiKueueReady=False" in text and "non-global" in text and "not the default queue jobqueue" in text


def test_the_dedicated_profile_is_selectable_only_while_multikueue_is_currently_ready(lab):
    set_up(lab)
    caller = Caller("team-nlp", None, "multicluster")
    raw = lab.backend.tau_cluster().raw
    assert select(profile_set_from_taucluster(raw), "azure.research.multicluster.lab", caller).name == "azure.research.multicluster.lab"
    stale = json.loads(json.dumps(raw))
    for c in stale["status"]["conditions"]:
        if c["type"] == "MultiKueueReady":
            c["observedGeneration"] = raw["metadata"]["generation"] - 1
    with pytest.raises(SelectionError, match="MultiKueueReady is not current"):
        select(profile_set_from_taucluster(stale), "azure.research.multicluster.lab", caller)


def worker_jobs(lab: Lab) -> dict[str, list[str]]:
    return {n: sorted(o["metadata"]["name"] for o in w.store.items(R.JOB.type)) for n, w in lab.fleet.workers.items()}


def test_drain_is_enforced_in_order_and_leaves_the_workers_clean(lab):
    retire_demo_multikueue(lab)  # the demo's own wiring has workers the plan does not list: a drain refuses it
    set_up(lab)
    workload = dispatch(lab)
    assert worker_jobs(lab)["lab-worker-1"] == ["mk-train"]
    drain = lab.exercise("drain")
    revoke = drain.flow.steps[4]
    with pytest.raises(Refused, match="locked"):
        drain.apply(revoke)
    why = revoke.refusal(drain.ctx)
    assert why and f"Workload team-nlp/{workload} running on lab-worker-1" in why and "Job team-nlp/mk-train" in why
    assert drain.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    assert "pending owners you may cancel: team-nlp/Job/mk-train" in drain.survey()[1].check.reason
    drain.ctx.inputs["cancel"] = ["team-nlp/Job/mk-train"]
    assert drain.run(YES, timeout=30) is Outcome.VERIFIED
    assert worker_jobs(lab) == {"lab-worker-1": [], "lab-worker-2": []}
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None
    assert lab.world.store.read(R.CLUSTER_QUEUE.type, "jobqueue") is not None
    steps = json.loads(sorted(lab.records.glob("*drain*.json"))[0].read_text())["steps"]
    revoked = [e for s in steps if s["step"] == "revoke" for e in s["evidence"]]
    assert any("rejected by worker lab-worker-1 (401 Unauthorized)" in e for e in revoked)


def test_drain_then_setup_again_then_drain_again(lab):
    retire_demo_multikueue(lab)
    set_up(lab)
    dispatch(lab)
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert drain.run(YES, timeout=30) is Outcome.VERIFIED
    reenable = lab.exercise("setup")
    assert reenable.survey()[0].state is StepState.REFUSED  # the drained credentials were revoked
    for worker in lab.fleet.workers:
        lab.fleet.mint(worker, context=worker)
    reenable = lab.exercise("setup")
    assert reenable.run(YES, timeout=30) is Outcome.VERIFIED
    dispatch(lab, "mk-train-2")
    second = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert second.run(YES, timeout=30) is Outcome.VERIFIED
    assert worker_jobs(lab) == {"lab-worker-1": [], "lab-worker-2": []}
    flows = sorted(r.flow for r in list_records(lab.records))
    assert flows == ["drain", "drain", "setup", "setup"]


def test_setup_after_a_partial_drain_resumes_from_the_first_step_that_no_longer_verifies(lab):
    retire_demo_multikueue(lab)
    set_up(lab)
    drain = lab.exercise("drain")
    drain.run_step(drain.flow.steps[0], YES, timeout=10)
    reenable = lab.exercise("setup")
    assert states(reenable) == ["verified", "verified", "verified", "ready", "locked"]
    assert reenable.run(YES, timeout=30) is Outcome.VERIFIED
    lq = lab.world.store.read(R.LOCAL_QUEUE.type, "mk-lab-queue", "team-nlp")
    assert lq["spec"]["stopPolicy"] == "None"


def test_rotation_replaces_the_secret_and_revokes_the_old_credential(lab, memory_keyring):
    set_up(lab)
    old = lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system")["data"]["kubeconfig"]
    lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
    vault = CredentialVault(lab.backend.current_context)
    rotation = lab.exercise("rotate", vault=vault, inputs={"worker": "lab-worker-1", "new_context": "lab-worker-1-new"})
    # Only the first step, then a "restart": a new exercise finds the rotation in the keyring.
    assert rotation.run_step(rotation.flow.steps[0], YES, timeout=5) is Outcome.VERIFIED
    assert len(memory_keyring.entries) == 2
    resumed = lab.exercise("rotate", vault=CredentialVault(lab.backend.current_context), inputs={"worker": "lab-worker-1"})
    assert states(resumed) == ["verified", "ready", "locked"]
    assert resumed.run(YES, timeout=30) is Outcome.VERIFIED
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system")["data"]["kubeconfig"] != old
    assert lab.backend.get(R.MULTIKUEUE_CLUSTER, "lab-worker-1").condition("Active").status == "True"
    assert memory_keyring.entries == {}
    [record] = [r for r in list_records(lab.records) if r.flow == "rotate"]
    evidence = " ".join(e for s in json.loads(record.path.read_text())["steps"] for e in s["evidence"])
    assert "(401 Unauthorized)" in evidence and record.outcome == "verified"


def test_rotation_without_a_keyring_asks_again_and_writes_nothing(lab, tmp_path):
    set_up(lab)
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        lab.fleet.mint("lab-worker-1", context="lab-worker-1-new")
        rotation = lab.exercise("rotate", vault=CredentialVault("sim"), inputs={"new_context": "lab-worker-1-new"})
        status = rotation.survey()[0]
        assert status.state is StepState.REFUSED and "no usable OS keyring" in status.check.reason
        assert rotation.run(YES, timeout=5) is Outcome.REFUSED
    finally:
        keyring.set_keyring(previous)
    secret_text = json.dumps(lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system"))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert all(t not in path.read_text(errors="replace") for t in lab.tokens())
    assert secret_text  # the old credential is still the one in use


def test_a_bound_token_is_revoked_by_deleting_the_secret_it_is_bound_to():
    import base64 as b64

    from tau_tui.core.operations.multikueue_steps.revocation import _bound_secret

    claims = {"kubernetes.io": {"namespace": "kueue-system", "secret": {"name": "multikueue-sa-credential-x", "uid": "u"}}}
    payload = b64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    assert _bound_secret(f"h.{payload}.s") == ("kueue-system", "multikueue-sa-credential-x")
    assert _bound_secret("not-a-jwt") is None


def test_worker_outages_turn_clusters_inactive_and_readiness_false_then_back(lab):
    from tau_tui.core.operations.multikueue import evaluate_multikueue_ready

    set_up(lab)

    def live():
        return evaluate_multikueue_ready([c for c in lab.backend.admission_checks() if c.name == "mk-lab"],
                                         lab.backend.multikueue_configs(), lab.backend.multikueue_clusters())

    lab.fleet.workers["lab-worker-1"].api_outage()
    lab.world.advance(2)
    assert lab.backend.get(R.MULTIKUEUE_CLUSTER, "lab-worker-1").condition("Active").reason == "ClientConnectionFailed"
    assert live().ready  # lab-worker-2 still carries it
    lab.fleet.workers["lab-worker-2"].api_outage()
    lab.world.advance(2)
    result = live()
    assert not result.ready and "No usable clusters: lab-worker-1, lab-worker-2" in result.message
    assert "cannot check directly" in lab.exercise("drain", record=False).flow.steps[2].verify(
        lab.exercise("drain", record=False).ctx).reason
    for worker in lab.fleet.workers.values():
        worker.api_restore()
    lab.world.advance(2)
    assert live().ready


def test_the_dedicated_cluster_queue_covers_cpu_and_memory_with_the_plan_quotas(lab):
    """Kueue admits a workload only when its ClusterQueue covers every resource it requests, and every
    TauGrid pod requests cpu and memory ("resource cpu unavailable in ClusterQueue" otherwise)."""
    from tau_tui.core.operations.multikueue_steps.plan import plan_from_mapping

    plan = plan_from_mapping({"workers": [{"name": w.name, "context": w.context} for w in lab.plan.workers],
                              "namespaces": list(lab.plan.namespaces), "clusterQueue": lab.plan.cluster_queue,
                              "cpuQuota": 96, "memoryQuota": "1843Gi", "gpuQuota": 8}, "plan.yaml")
    exercise = lab.exercise("setup", plan=plan, record=False)
    queue_step = exercise.flow.steps[3]
    cq = next(c for c in queue_step.changes(exercise.ctx) if c.rt.kind == "ClusterQueue")
    [group] = cq.body["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]} == {
        "cpu": "96", "memory": "1843Gi", "nvidia.com/gpu": 8}


@pytest.mark.parametrize("value", [[96], True, ""])
def test_a_quota_that_is_not_a_quantity_is_refused_with_the_key(value):
    from tau_tui.core.operations.multikueue_steps.plan import plan_from_mapping
    from tau_tui.core.runconfig.diagnostics import DiagnosticError

    with pytest.raises(DiagnosticError) as err:
        plan_from_mapping({"workers": [{"name": "w", "context": "w"}], "namespaces": ["team-a"], "cpuQuota": value},
                          "plan.yaml")
    assert "cpuQuota" in str(err.value) and "Kubernetes quantity" in str(err.value)
