"""Retry and resume decisions and the manifests they resubmit: every retry_on
reason, the max_retries bound, the backoff sequence, the OOMKilled opt-in, resume's drift warning,
--force after an OOM and the anti-affinity to a node whose GPU fault hit the run (item 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.convert import job_view, pod_view, ray_job_view, workload_view
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.recovery import (
    AVOID_NODES_ANNOTATION,
    ORIGINAL_RUN_ANNOTATION,
    RESUMED_FROM_ANNOTATION,
    RESUMED_FROM_SUBMISSION_ANNOTATION,
    RETRIED_AS_ANNOTATION,
    RETRY_ATTEMPT_ANNOTATION,
    RETRY_OF_ANNOTATION,
    RETRY_REASON_ANNOTATION,
    RetryPolicy,
    classify_failure,
    derived_name,
    resume_plan,
    retry_decision,
    retry_manifests,
    retry_policy,
)
from tau_tui.core.operations.run_objects import RunObjects
from tests import builders as b

NS, NAME, UID, SID = "team-nlp", "train", "uid-1", "0123456789abcdef"
FAILED_AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
T_FAILED = "2026-11-30T10:00:00Z"


def execution(max_retries: int = 3, retry_on: tuple[str, ...] = ("Preempted", "Evicted"),
              initial: str = "30s", most: str = "5m") -> str:
    return json.dumps({"engine": "job", "maxRetries": max_retries, "retryOn": list(retry_on),
                       "backoffInitial": initial, "backoffMax": most})


def job(*, failed: bool = True, annotations: dict[str, str] | None = None, name: str = NAME,
        complete: bool = False, multinode: bool = False) -> Any:
    notes = {"tau.azure.com/workloadspec-execution": execution(), "tau.azure.com/config-hash": "a" * 64}
    notes.update(annotations or {})
    conditions = []
    if failed:
        conditions.append(b.condition("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit",
                                      transition=T_FAILED))
    if complete:
        conditions.append(b.condition("Complete", "True", "CompletionsReached", transition=T_FAILED))
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": "img", "env": [
        {"name": "TAU_RESUME_FROM", "value": "/data/checkpoints/finetunes/train"}, {"name": "USER_VAR", "value": "x"}]}],
        "restartPolicy": "Never"}
    if multinode:
        pod_spec["subdomain"] = f"{name}-headless"
    labels = {"tau.azure.com/managed-by": "tau", "tau.azure.com/submission-id": SID, "kueue.x-k8s.io/queue-name": "q"}
    return job_view(b.job(
        name, NS, uid=UID, metadata={"resourceVersion": "42"}, created=T_FAILED, labels=labels, annotations=notes,
        suspend=False, spec={"backoffLimit": 3, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}},
        pod_metadata={"labels": {**labels, "batch.kubernetes.io/controller-uid": UID, "controller-uid": UID, "job-name": name}},
        pod_spec=pod_spec, conditions=conditions, api=True))


def pod(*, disruption: str | None = None, oom: bool = False, evicted_by_kubelet: bool = False, node: str = "gpu-1",
        phase: str = "Failed", finished: str = T_FAILED) -> Any:
    status: dict[str, Any] = {"conditions": []}
    if disruption:
        status["conditions"].append(b.condition("DisruptionTarget", "True", disruption))
    if evicted_by_kubelet:
        status.update(reason="Evicted", message="The node was low on resource: memory.")
    status["containerStatuses"] = [b.container_status("main", "terminated", reason="OOMKilled" if oom else "Error",
                                                      exitCode=137 if oom else 1, finishedAt=finished)]
    return pod_view(b.pod(f"{NAME}-abcde", NS, node=node, labels={"job-name": NAME}, phase=phase, status=status))


def objs(owner: Any, *pods: Any, workloads: tuple[Any, ...] = (), faults: dict[str, NodeGpuFault] | None = None) -> RunObjects:
    return RunObjects(NS, owner.name, owner, None, workloads, pods, (), gpu_faults=faults or {})


def preempted(**kw: Any) -> RunObjects:
    return objs(job(**kw), pod(disruption="PreemptionByScheduler"))


# -- classification ------------------------------------------------------------------------------


@pytest.mark.parametrize(("the_pod", "reason"), [
    (pod(disruption="PreemptionByScheduler"), "Preempted"),
    (pod(disruption="EvictionByEvictionAPI"), "Evicted"),
    (pod(disruption="DeletionByTaintManager"), "Evicted"),
    (pod(disruption="TerminationByKubelet"), "Evicted"),
    (pod(evicted_by_kubelet=True), "Evicted"),
    (pod(oom=True), "OOMKilled"),
    (pod(), "Failed"),
])
def test_every_failure_is_classified_as_retry_on_names_it(the_pod, reason):
    failure = classify_failure(objs(job(), the_pod))
    assert failure is not None and failure.reason == reason and failure.at == FAILED_AT


def test_kueue_preemption_of_the_workload_reads_preempted():
    wl = workload_view({"metadata": {"name": "job-train", "namespace": NS, "labels": {"kueue.x-k8s.io/job-uid": UID}},
                        "spec": {"queueName": "q"},
                        "status": {"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted",
                                                   "message": "Preempted to accommodate a higher priority Workload"}]}})
    failure = classify_failure(objs(job(), workloads=(wl,)))
    assert failure is not None and failure.reason == "Preempted" and "higher priority" in failure.detail


def test_oom_wins_over_a_later_eviction_and_an_active_run_has_no_failure():
    assert classify_failure(objs(job(), pod(disruption="EvictionByEvictionAPI"), pod(oom=True))).reason == "OOMKilled"
    assert classify_failure(objs(job(failed=False), pod(phase="Running"))) is None


# -- retry ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("disruption", ["PreemptionByScheduler", "EvictionByEvictionAPI"])
def test_preempted_and_evicted_are_retried_by_default(disruption):
    decision = retry_decision(objs(job(), pod(disruption=disruption)), FAILED_AT + timedelta(seconds=30))
    assert decision.verdict == "retry" and decision.attempt == 1 and decision.new_name == "train-retry-1"


def test_oom_is_retried_only_when_retry_on_opts_in():
    plain = retry_decision(objs(job(), pod(oom=True)), FAILED_AT + timedelta(hours=1))
    assert plain.verdict == "refused" and "OOMKilled is retried only when resilience.retry_on lists it" in plain.message
    opted = job(annotations={"tau.azure.com/workloadspec-execution": execution(retry_on=("Preempted", "Evicted", "OOMKilled"))})
    assert retry_decision(objs(opted, pod(oom=True)), FAILED_AT + timedelta(hours=1)).verdict == "retry"


def test_a_plain_failure_and_an_evicted_run_outside_retry_on_are_refused():
    assert retry_decision(objs(job(), pod()), FAILED_AT + timedelta(hours=1)).verdict == "refused"
    only_preempted = job(annotations={"tau.azure.com/workloadspec-execution": execution(retry_on=("Preempted",))})
    decision = retry_decision(objs(only_preempted, pod(disruption="EvictionByEvictionAPI")), FAILED_AT + timedelta(hours=1))
    assert decision.verdict == "refused" and "does not list" in decision.message


def test_max_retries_bounds_the_attempts():
    later = FAILED_AT + timedelta(hours=1)
    for attempt in (0, 1, 2):
        third = retry_decision(preempted(annotations={RETRY_ATTEMPT_ANNOTATION: str(attempt)}), later)
        assert third.verdict == "retry" and third.attempt == attempt + 1
    beyond = retry_decision(preempted(annotations={RETRY_ATTEMPT_ANNOTATION: "3"}), later)
    assert beyond.verdict == "refused" and beyond.message.startswith("retries exhausted: 3 of resilience.max_retries 3")
    off = job(annotations={"tau.azure.com/workloadspec-execution": execution(max_retries=0)})
    assert "max_retries is 0" in retry_decision(objs(off, pod(disruption="PreemptionByScheduler")), later).message


def test_backoff_doubles_from_backoff_initial_up_to_backoff_max():
    policy = RetryPolicy(max_retries=8, backoff_initial_s=30, backoff_max_s=300)
    assert [policy.backoff(n) for n in range(1, 8)] == [30, 60, 120, 240, 300, 300, 300]
    # attempt 3 (two retries done) waits 120 s after the failure
    two_done = preempted(annotations={RETRY_ATTEMPT_ANNOTATION: "2", RETRY_OF_ANNOTATION: "train"})
    early = retry_decision(two_done, FAILED_AT + timedelta(seconds=119))
    assert early.verdict == "wait" and early.not_before == FAILED_AT + timedelta(seconds=120)
    assert "backoff 120s, in 1s" in early.message and early.new_name == "train-retry-3"
    assert retry_decision(two_done, FAILED_AT + timedelta(seconds=120)).verdict == "retry"


def test_the_decision_is_recorded_on_the_object_and_not_taken_twice():
    done = preempted(annotations={RETRIED_AS_ANNOTATION: "train-retry-1"})
    decision = retry_decision(done, FAILED_AT + timedelta(hours=1))
    assert decision.verdict == "refused" and "already retried or resumed as train-retry-1" in decision.message


def test_a_policy_that_cannot_be_read_offers_no_retry():
    broken = job(annotations={"tau.azure.com/workloadspec-execution": "{not json"})
    assert retry_policy(broken).problem
    assert retry_decision(objs(broken, pod(disruption="PreemptionByScheduler")), FAILED_AT + timedelta(hours=1)).verdict == "refused"


def test_retry_manifests_carry_the_attempt_and_drop_what_the_server_set():
    the_objs = objs(job(multinode=True), pod(disruption="PreemptionByScheduler"))
    decision = retry_decision(the_objs, FAILED_AT + timedelta(minutes=1))
    service, new = retry_manifests(the_objs, decision)
    assert service["kind"] == "Service" and service["metadata"]["name"] == "train-retry-1-headless"
    assert service["spec"]["selector"] == {"job-name": "train-retry-1"}
    meta = new["metadata"]
    assert meta["name"] == "train-retry-1" and "uid" not in meta and "resourceVersion" not in meta and "status" not in new
    assert meta["annotations"][RETRY_ATTEMPT_ANNOTATION] == "1" and meta["annotations"][RETRY_REASON_ANNOTATION] == "Preempted"
    assert meta["annotations"][RETRY_OF_ANNOTATION] == "train"
    assert meta["labels"]["tau.azure.com/submission-id"] != SID
    assert new["spec"]["suspend"] is True and "selector" not in new["spec"]
    template = new["spec"]["template"]
    assert "controller-uid" not in template["metadata"]["labels"] and "job-name" not in template["metadata"]["labels"]
    assert template["spec"]["subdomain"] == "train-retry-1-headless"
    env = {e["name"]: e["value"] for e in template["spec"]["containers"][0]["env"]}
    assert env["TAU_RETRY_ATTEMPT"] == "1" and env["TAU_RETRY_REASON"] == "Preempted" and env["TAU_RETRY_MAX"] == "3"
    assert env["USER_VAR"] == "x"
    # the same decision twice gives the same object: the second create is "already submitted"
    assert retry_manifests(the_objs, decision) == [service, new]


def test_long_names_stay_within_the_kind_limit():
    name = derived_name("x" * 60, "retry-12", "Job")
    assert len(name) <= 63 and name.endswith("-retry-12")
    assert len(derived_name("y" * 47, "resume-1", "RayJob")) <= 47


# -- resume --------------------------------------------------------------------------------------


def test_resume_resubmits_from_the_checkpoint_under_a_new_id_linked_to_the_original():
    plan = resume_plan(objs(job(), pod(disruption="PreemptionByScheduler")))
    assert plan.allowed and plan.new_name == "train-resume-1" and plan.warnings == ()
    (new,) = plan.manifests
    notes = new["metadata"]["annotations"]
    assert notes[RESUMED_FROM_ANNOTATION] == "train" and notes[RESUMED_FROM_SUBMISSION_ANNOTATION] == SID
    assert notes[ORIGINAL_RUN_ANNOTATION] == "train"
    assert new["metadata"]["labels"]["tau.azure.com/submission-id"] not in ("", SID)
    env = {e["name"]: e["value"] for e in new["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TAU_RESUME_FROM"] == "/data/checkpoints/finetunes/train"
    assert resume_plan(objs(job(), pod()), checkpoint="/data/ckpt/step-9").checkpoint == "/data/ckpt/step-9"


def test_resume_of_a_retry_starts_its_own_retries_and_a_second_resume_gets_the_next_name():
    retried = job(name="train-retry-2", annotations={RETRY_ATTEMPT_ANNOTATION: "2", RETRY_OF_ANNOTATION: "train"})
    plan = resume_plan(objs(retried, pod()))
    notes = plan.manifests[0]["metadata"]["annotations"]
    assert plan.new_name == "train-resume-1" and RETRY_ATTEMPT_ANNOTATION not in notes and RETRY_OF_ANNOTATION not in notes
    again = job(name="train-resume-1", annotations={ORIGINAL_RUN_ANNOTATION: "train", "tau.azure.com/resume-index": "1"})
    assert resume_plan(objs(again, pod())).new_name == "train-resume-2"


def test_resume_after_oom_needs_force():
    refused = resume_plan(objs(job(), pod(oom=True)))
    assert not refused.allowed and "--force" in refused.message and "OOMKilled" in refused.message
    forced = resume_plan(objs(job(), pod(oom=True)), force=True)
    assert forced.allowed and any("OOMKilled" in w for w in forced.warnings)


def test_resume_warns_on_config_drift():
    same = resume_plan(objs(job(), pod()), config_hash="a" * 64)
    assert same.allowed and same.warnings == ()
    drift = resume_plan(objs(job(), pod()), config_hash="b" * 64)
    assert drift.allowed and drift.warnings[0].startswith("config drift: the config hash changed (aaaaaaaaaaaa… → bbbbbbbbbbbb…)")


def test_resume_refuses_an_active_run_and_a_run_without_checkpoint():
    assert "still active" in resume_plan(objs(job(failed=False), pod(phase="Running"))).message
    bare = job_view({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "namespace": NS, "uid": UID},
                     "spec": {"template": {"spec": {"containers": [{"name": "main"}]}}},
                     "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "x"}]}})
    plan = resume_plan(objs(bare, pod()))
    assert not plan.allowed and "--from PATH" in plan.message


def test_resume_avoids_the_node_whose_gpu_fault_hit_the_run():
    fault = NodeGpuFault("gpu-1", "unhealthy", "Xid79", "GPU has fallen off the bus", ("gpu0 GPU-1",),
                         parse_time(T_FAILED), ("tau-agent",))
    plan = resume_plan(objs(job(), pod(node="gpu-1"), faults={"gpu-1": fault}))
    assert plan.allowed and plan.avoid_nodes == ("gpu-1",) and plan.faults == (fault,)
    assert "avoids gpu-1" in plan.message
    (new,) = plan.manifests
    assert new["metadata"]["annotations"][AVOID_NODES_ANNOTATION] == "gpu-1"
    terms = new["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-1"]}]}]


def test_resume_of_a_rayjob_sets_the_env_in_every_group():
    rj = ray_job_view({"apiVersion": "ray.io/v1", "kind": "RayJob",
                       "metadata": {"name": "rl", "namespace": NS, "uid": "u2", "labels": {"tau.azure.com/submission-id": SID}},
                       "spec": {"rayClusterSpec": {
                           "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "env": [
                               {"name": "TAU_RESUME_FROM", "value": "/data/c"}]}]}}},
                           "workerGroupSpecs": [{"groupName": "rl-w", "template": {"spec": {"containers": [{"name": "ray-worker"}]}}}]}},
                       "status": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed", "endTime": T_FAILED}})
    plan = resume_plan(RunObjects(NS, "rl", None, rj))
    assert plan.allowed and plan.new_name == "rl-resume-1"
    rcs = plan.manifests[0]["spec"]["rayClusterSpec"]
    for group in [rcs["headGroupSpec"], *rcs["workerGroupSpecs"]]:
        env = {e["name"]: e["value"] for e in group["template"]["spec"]["containers"][0]["env"]}
        assert env["TAU_RESUME_FROM"] == "/data/c"


def test_an_object_from_an_api_list_without_kind_and_api_version_resumes():
    listed = dict(job().raw)
    listed.pop("kind"), listed.pop("apiVersion")
    plan = resume_plan(objs(job_view(listed), pod()))
    assert plan.allowed and plan.checkpoint == "/data/checkpoints/finetunes/train"
    (new,) = plan.manifests
    assert (new["apiVersion"], new["kind"]) == ("batch/v1", "Job")


def test_what_kueue_injected_into_the_failed_template_does_not_carry_over():
    started = dict(job().raw)
    template = started["spec"]["template"]
    template["metadata"]["annotations"] = {"kueue.x-k8s.io/workload": "job-train-8fcea",
                                           "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
    template["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main"
    (new,) = resume_plan(objs(job_view(started), pod())).manifests
    meta = new["spec"]["template"]["metadata"]
    assert meta["annotations"] == {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
    assert "kueue.x-k8s.io/podset" not in meta["labels"] and meta["labels"]["kueue.x-k8s.io/queue-name"] == "q"
