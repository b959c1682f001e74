"""The drain discovers the MultiKueue footprint live and never trusts the plan's names,
counts the dedicated Workloads directly (9b), checks the workers' pods directly (9d), and its
timeouts are deadlines on the simulated clock, bounded by counts (9e).  All on the simulated fleet."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_NOT_VERIFIED
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.operations.multikueue_steps import drain as drain_steps
from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.engine import Check, Outcome, Step, StepState
from tau_tui.core.runconfig.profiles import DRAINED_TEAM
from tests.multikueue_lab import (
    DEMO_MULTIKUEUE,
    LAB_PLAN,
    YES,
    Lab,
    dispatch,
    drive_cli_with,
    lab_pod,
    retire_demo_multikueue,
)

R = ResourceKind
LAB_PROFILE = "azure.research.multicluster.lab"


def set_up(lab: Lab, *, retire_demo: bool = True) -> None:
    if retire_demo:
        retire_demo_multikueue(lab)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED


def profiles(lab: Lab) -> dict[str, dict]:
    return {p["name"]: p for p in lab.world.store.read(R.TAU_CLUSTER.type, "cluster")["spec"]["workloadProfiles"]}


def read(lab: Lab, rt, name: str, namespace: str | None = None) -> dict | None:
    return lab.world.store.read(rt.type, name, namespace)


# -- 1. discovery, not trust ---------------------------------------------------------------------------

def test_a_plan_naming_a_profile_that_does_not_exist_is_not_verified_and_the_live_one_is_still_handled(lab):
    set_up(lab)
    typo = replace(lab.plan, profile=LAB_PROFILE + "-v2")
    drain = lab.exercise("drain", typo)
    assert drain.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    first = drain.survey()[0]
    assert first.state is not StepState.VERIFIED
    assert "not found: the plan and the cluster disagree" in first.check.reason
    assert f"profile {LAB_PROFILE}-v2" in first.check.reason
    # the live multiKueue profile the plan missed is found and de-authorised all the same
    assert profiles(lab)[LAB_PROFILE]["applicability"]["teams"] == [DRAINED_TEAM]
    assert any(f"not named by the plan (handled too): profile {LAB_PROFILE}" in e for e in first.check.evidence)
    # nothing after step 1 ran: the dedicated ClusterQueue is not drained, nothing is removed
    assert read(lab, R.CLUSTER_QUEUE, "mk-lab-cq")["spec"].get("stopPolicy") in (None, "None")
    record = json.loads(sorted(lab.records.glob("*drain*.json"))[0].read_text())
    assert record["outcome"] == "not-verified"


def test_a_plan_cluster_queue_that_is_not_multikueue_is_a_disagreement_and_never_touched(lab):
    set_up(lab)
    wrong = replace(lab.plan, cluster_queue="vision-cq")
    drain = lab.exercise("drain", wrong)
    assert drain.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    reason = drain.survey()[0].check.reason
    assert "ClusterQueue vision-cq carries no MultiKueue admission check" in reason and "not touched" in reason
    assert read(lab, R.CLUSTER_QUEUE, "vision-cq")["spec"].get("stopPolicy") in (None, "None")


@pytest.fixture
def cli_lab(lab, tmp_path, monkeypatch):
    return drive_cli_with(lab, tmp_path, monkeypatch)


def test_the_cli_drain_with_a_queue_that_does_not_exist_exits_4_naming_it(cli_lab, tmp_path, capsys):
    set_up(cli_lab)
    plan = tmp_path / "typo.yaml"
    plan.write_text(LAB_PLAN.replace("localQueue: mk-lab-queue", "localQueue: mk-lab-queue-v2"))
    assert cli.main(["multikueue", "drain", "--plan", str(plan), "--yes", "--timeout", "20"]) == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "not found: the plan and the cluster disagree" in out and "LocalQueue team-nlp/mk-lab-queue-v2" in out
    # the real dedicated LocalQueue, found by discovery, is held all the same
    assert read(cli_lab, R.LOCAL_QUEUE, "mk-lab-queue", "team-nlp")["spec"]["stopPolicy"] == "Hold"


def add_second_footprint(lab: Lab) -> None:
    """A second dedicated profile/queue/check/config the plan does not name, routed to lab-worker-1."""
    store = lab.world.store
    store.put(R.ADMISSION_CHECK.type, {"metadata": {"name": "mk-second"}, "spec": {
        "controllerName": MULTIKUEUE_CONTROLLER_NAME,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk-second-workers"}}})
    store.put(R.MULTIKUEUE_CONFIG.type, {"metadata": {"name": "mk-second-workers"}, "spec": {"clusters": ["lab-worker-1"]}})
    # the older spec.admissionChecks list counts too
    store.put(R.CLUSTER_QUEUE.type, {"metadata": {"name": "mk-second-cq"}, "spec": {
        "namespaceSelector": {}, "admissionChecks": ["mk-second"],
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "mk-lab-gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}})
    store.put(R.LOCAL_QUEUE.type, {"metadata": {"name": "mk-second", "namespace": "team-nlp"}, "spec": {"clusterQueue": "mk-second-cq"}})
    store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o["spec"]["workloadProfiles"].append(
        {"name": "azure.research.multicluster.second", "applicability": {"namespaces": ["team-nlp"]},
         "gpusPerWorker": 8, "workerCount": 1, "mode": "fixed", "placement": "unconstrained",
         "defaultLocalQueue": "mk-second", "executionTarget": "multiKueue",
         "priorities": {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"}}))
    lab.world.advance(2)


def test_a_drain_on_a_cluster_with_two_multikueue_profiles_removes_both(lab):
    set_up(lab)
    add_second_footprint(lab)
    default_cq = json.dumps(read(lab, R.CLUSTER_QUEUE, "jobqueue")["spec"])
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    first = drain.flow.steps[0]
    assert drain.run_step(first, YES, timeout=20) is Outcome.VERIFIED
    assert {n: p["applicability"].get("teams") for n, p in profiles(lab).items() if "multicluster" in n} == {
        LAB_PROFILE: [DRAINED_TEAM], "azure.research.multicluster.second": [DRAINED_TEAM]}
    assert read(lab, R.LOCAL_QUEUE, "mk-second", "team-nlp")["spec"]["stopPolicy"] == "Hold"
    assert drain.run(YES, timeout=30) is Outcome.VERIFIED
    assert not [n for n, p in profiles(lab).items() if p.get("executionTarget") == "multiKueue"]
    for rt, name, ns in ((R.LOCAL_QUEUE, "mk-second", "team-nlp"), (R.CLUSTER_QUEUE, "mk-second-cq", None),
                         (R.ADMISSION_CHECK, "mk-second", None), (R.MULTIKUEUE_CONFIG, "mk-second-workers", None),
                         (R.CLUSTER_QUEUE, "mk-lab-cq", None), (R.MULTIKUEUE_CLUSTER, "lab-worker-1", None)):
        assert read(lab, rt, name, ns) is None, (rt, name)
    # the default queue is never touched
    assert json.dumps(read(lab, R.CLUSTER_QUEUE, "jobqueue")["spec"]) == default_cq
    assert read(lab, R.LOCAL_QUEUE, "jobqueue", "team-nlp")["spec"].get("stopPolicy") in (None, "None")
    steps = json.loads(sorted(lab.records.glob("*drain*.json"))[0].read_text())["steps"]
    removed = " ".join(e for s in steps if s["step"] == "remove-routing" for e in s["evidence"])
    assert "profile azure.research.multicluster.second" in removed


def test_a_drain_refuses_a_multikueue_profile_whose_workers_the_plan_does_not_list_and_touches_nothing(lab):
    set_up(lab, retire_demo=False)  # the demo's own profile dispatches to westus3-worker and eastus2-worker
    drain = lab.exercise("drain")
    assert drain.run(YES, timeout=20) is Outcome.REFUSED
    status = drain.survey()[0]
    assert status.state is StepState.REFUSED
    reason = status.check.reason
    assert f"the drain will not touch profile {DEMO_MULTIKUEUE['profile']}, ClusterQueue multikueue-cq" in reason
    assert "MultiKueueClusters eastus2-worker, westus3-worker are not among the plan's workers" in reason
    assert f"MultiKueueConfig {DEMO_MULTIKUEUE['config']}" in reason
    # refused before anything changed: both profiles still authorised, no queue held
    assert profiles(lab)[DEMO_MULTIKUEUE["profile"]]["applicability"].get("teams") != [DRAINED_TEAM]
    assert profiles(lab)[LAB_PROFILE]["applicability"].get("teams") != [DRAINED_TEAM]
    assert read(lab, R.LOCAL_QUEUE, "mk-lab-queue", "team-nlp")["spec"].get("stopPolicy") in (None, "None")


def test_a_default_queue_that_routes_to_multikueue_is_refused_by_name_and_never_touched(lab):
    set_up(lab)
    lab.world.store.update(R.CLUSTER_QUEUE.type, "jobqueue", None,
                           lambda o: o["spec"].__setitem__("admissionChecksStrategy", {"admissionChecks": [{"name": "mk-lab"}]}))
    drain = lab.exercise("drain")
    assert drain.run(YES, timeout=20) is Outcome.REFUSED
    reason = drain.survey()[0].check.reason
    assert "ClusterQueue jobqueue backs the default queue" in reason and "never touches the default queue" in reason
    assert read(lab, R.CLUSTER_QUEUE, "jobqueue")["spec"].get("stopPolicy") in (None, "None")
    assert read(lab, R.LOCAL_QUEUE, "jobqueue", "team-nlp")["spec"].get("stopPolicy") in (None, "None")
    assert read(lab, R.ADMISSION_CHECK, "mk-lab") is not None


def test_a_plan_naming_the_default_queue_is_still_refused(lab):
    set_up(lab)
    status = lab.exercise("drain", replace(lab.plan, local_queue="jobqueue"), record=False).survey()[0]
    assert status.state is StepState.REFUSED and "jobqueue is the default queue; a drain never touches it" in status.check.reason


def test_after_a_complete_drain_every_step_still_verifies_but_a_renamed_plan_does_not(lab):
    set_up(lab)
    dispatch(lab)
    assert lab.exercise("drain", inputs={"cancel": "all-pending"}).run(YES, timeout=30) is Outcome.VERIFIED
    after = lab.exercise("drain", record=False).survey()
    assert [s.state for s in after] == [StepState.VERIFIED] * 5
    renamed = lab.exercise("drain", replace(lab.plan, cluster_queue="mk-lab-cq-v2"), record=False).survey()[0]
    assert renamed.state is not StepState.VERIFIED
    assert "not found: the plan and the cluster disagree: ClusterQueue mk-lab-cq-v2" in renamed.check.reason
    # what the drain removed is on the cluster, so the plan's own names read as removed, not as disagreement
    assert any("ClusterQueue mk-lab-cq: removed by a drain (step 4)" in e for e in after[0].check.evidence)


# -- --cancel-pending after HoldAndDrain --------------------------------------------------------

def count_like_kueue(lab: Lab, monkeypatch) -> None:
    """What Kueue reports on a real manager: a workload evicted into a held LocalQueue is
    counted nowhere, so the ClusterQueue and LocalQueue say pending 0 while it waits there."""
    kueue, store = lab.world.kueue, lab.world.store
    original = kueue.queue_status

    def queue_status() -> None:
        original()
        for rt in (R.CLUSTER_QUEUE.type, R.LOCAL_QUEUE.type):
            for queue in store.items(rt):
                if (queue.get("spec") or {}).get("stopPolicy") not in (None, "None"):
                    meta = queue["metadata"]
                    store.update(rt, meta["name"], meta.get("namespace"), lambda o: o["status"].update(pendingWorkloads=0))
    monkeypatch.setattr(kueue, "queue_status", queue_status)


def test_an_evicted_run_in_the_held_queue_keeps_step_2_open_until_cancel_pending_cancels_it(lab, monkeypatch):
    set_up(lab)
    workload = dispatch(lab)
    count_like_kueue(lab, monkeypatch)
    drain = lab.exercise("drain")
    assert drain.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    assert read(lab, R.CLUSTER_QUEUE, "mk-lab-cq")["status"]["pendingWorkloads"] == 0  # what Kueue reports
    wl = read(lab, R.WORKLOAD, workload, "team-nlp")
    assert {c["type"]: c["status"] for c in wl["status"]["conditions"]}["Evicted"] == "True"
    hold = drain.survey()[1]
    assert hold.state is not StepState.VERIFIED
    assert f"Workload team-nlp/{workload} (evicted, requeued, pending)" in hold.check.reason
    assert "pending owners you may cancel: team-nlp/Job/mk-train" in hold.check.reason
    # step 3, asked directly, names the owner to cancel too
    wait = drain.flow.steps[2].verify(drain.ctx)
    assert not wait.ok and "owners to cancel: team-nlp/Job/mk-train" in wait.reason
    # `drain --cancel-pending` now runs step 2 and cancels it
    again = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert again.run(YES, timeout=30) is Outcome.VERIFIED
    assert read(lab, R.JOB, "mk-train", "team-nlp") is None


# -- pods checked directly on the workers -----------------------------------------------------

def worker_pod(name: str, *, terminating: bool) -> dict:
    meta: dict = {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "mk-train", "uid": "u-1", "controller": True}]}
    if terminating:
        meta.update(deletionTimestamp="2026-03-03T08:00:00Z", deletionGracePeriodSeconds=600)
    return lab_pod("lab-worker-1-gpu-0", name=name, labels={"job-name": "mk-train", "batch.kubernetes.io/job-name": "mk-train"},
                   metadata=meta, spec={"terminationGracePeriodSeconds": 600})


def test_step_3_waits_for_a_pod_still_terminating_on_the_worker_after_its_job_is_gone(lab):
    set_up(lab)
    dispatch(lab)
    worker = lab.fleet.workers["lab-worker-1"].store
    worker.put(R.POD.type, worker_pod("mk-train-7x2kq", terminating=True))
    worker.put(R.POD.type, worker_pod("mk-train-orphan", terminating=False))
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert drain.run(YES, timeout=20) is Outcome.NOT_VERIFIED
    assert [o["metadata"]["name"] for o in worker.items(R.JOB.type)] == []  # Kueue deleted the worker's Job
    wait = drain.survey()[2]
    assert wait.state is not StepState.VERIFIED
    reason = wait.check.reason
    assert "Pod team-nlp/mk-train-7x2kq (Running, terminating since 2026-03-03T08:00:00Z, grace period 600 s" in reason
    assert "Pod team-nlp/mk-train-orphan (Running" in reason and "its Job mk-train is gone" in reason
    why = drain.flow.steps[4].refusal(drain.ctx)
    assert why and "mk-train-7x2kq" in why  # and revocation is refused while it is there
    worker.remove(R.POD.type, "mk-train-7x2kq", "team-nlp")
    worker.remove(R.POD.type, "mk-train-orphan", "team-nlp")
    assert lab.exercise("drain").run(YES, timeout=30) is Outcome.VERIFIED


# -- deadlines on the clock, bounded by counts ----------------------------------------------

class SlowStep(Step):
    """A step whose verification takes simulated time (a slow or unreachable API server)."""

    key = title = "slow"

    def __init__(self, lab: Lab, seconds: float):
        self.lab, self.seconds, self.calls = lab, seconds, 0

    def verify(self, ctx) -> Check:
        self.calls += 1
        self.lab.world.advance(self.seconds)
        return Check(False, "not yet")


def test_the_verify_timeout_is_a_deadline_on_the_simulated_clock(lab):
    exercise = lab.exercise("drain", record=False)
    step = SlowStep(lab, 3.0)
    start = lab.world.now()
    check = exercise.wait_verified(step, 20)
    elapsed = (lab.world.now() - start).total_seconds()
    assert not check.ok and "not verified within 20 s" in check.reason
    # polls every 2 s and each verify takes 3 s: at most one poll and one verify past the 20 s
    assert elapsed <= 20 + 2 + 3, elapsed
    assert step.calls <= 20 // (2 + 3) + 1, step.calls


def test_a_clock_that_does_not_move_with_the_waits_still_ends_after_the_timeout_of_waits(lab):
    """The CLI and the app pass the real clock; over a simulated wait it barely moves, and the waits bound it."""
    exercise = open_exercise("drain", lab.backend, lab.connector, lab.plan, wait=lab.world.advance, record=False)
    step = SlowStep(lab, 0.0)
    start = lab.world.now()
    exercise.wait_verified(step, 20)
    assert (lab.world.now() - start).total_seconds() <= 20
    assert step.calls <= 20 // 2 + 1


EVICTION_BUDGET_S = 30.0  # HoldAndDrain's wait for evictions before it cancels (drain.EVICTION_TIMEOUT)
LIST_SECONDS = 5.0


def test_hold_and_drain_waits_for_evictions_on_the_clock_not_by_a_count(lab, monkeypatch):
    set_up(lab)
    dispatch(lab)
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert drain.run_step(drain.flow.steps[0], YES, timeout=20) is Outcome.VERIFIED
    monkeypatch.setattr(lab.world.kueue, "stop_policies", lambda: None)  # Kueue never gets to evict
    original = lab.backend._api_list
    lists = []

    def slow_workload_list(rt, namespace, label_selector=None):
        if rt.kind == "Workload":  # a slow API server: every Workload list takes simulated time
            lists.append(namespace)
            lab.world.advance(LIST_SECONDS)
        return original(rt, namespace, label_selector)

    monkeypatch.setattr(lab.backend, "_api_list", slow_workload_list)
    start = lab.world.now()
    drain.flow.steps[1].apply(drain.ctx, False)
    elapsed = (lab.world.now() - start).total_seconds()
    # the budget, one poll past it, and the Workload lists before the loop, at its end and for the cancel
    assert elapsed <= EVICTION_BUDGET_S + 2 + 3 * LIST_SECONDS, (elapsed, len(lists))
    assert drain_steps.EVICTION_TIMEOUT == EVICTION_BUDGET_S


def test_cancel_pending_previews_the_running_owners_that_holdanddrain_turns_pending(lab):
    """With --cancel-pending a running run is evicted back to pending and then cancelled: the confirmed
    preview must name it (before, only the owners pending at preview time were shown)."""
    set_up(lab)
    dispatch(lab)
    drain = lab.exercise("drain", inputs={"cancel": "all-pending"})
    assert drain.run_step(drain.flow.steps[0], YES, timeout=30) is Outcome.VERIFIED
    preview = drain.preview(drain.flow.steps[1])
    assert "# delete Job team-nlp/mk-train" in preview.text()
    assert drain.run_step(drain.flow.steps[1], YES, timeout=30) is Outcome.VERIFIED
    assert read(lab, R.JOB, "mk-train", "team-nlp") is None
