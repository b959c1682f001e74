"""The run status phase engine (taugrid.md §8.1-8.3): every lifecycle state, every phase in
each of its statuses, and the diagnostics with their codes."""

from __future__ import annotations

from typing import Any

import pytest

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.convert import job_view, pod_view, ray_job_view, workload_view
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.run_objects import RunObjects, objects_for_run
from tau_tui.core.operations.run_status_types import PHASE_ORDER, RunStatus
from tau_tui.core.operations.runstatus import compute_run_status
from tests import builders as b

NS, NAME, UID = "team-nlp", "train", "uid-1"
QUEUE = {"kueue.x-k8s.io/queue-name": "jobqueue", "tau.azure.com/managed-by": "tau"}
T0 = "2026-11-30T10:00:00Z"


def job(conditions: tuple[tuple[str, str], ...] = (), *, labels: dict[str, str] | None = None, suspend: bool = False,
        managed_by: str | None = None, containers: int = 1) -> Any:
    return job_view(b.job(NAME, NS, uid=UID, created=T0, labels=QUEUE if labels is None else labels, suspend=suspend,
                          spec={"managedBy": managed_by} if managed_by else None,
                          conditions=[b.condition(t, "True", r, f"{t} because {r}") for t, r in conditions]))


def ray_job(job_status: str | None = None, deploy: str | None = None, cluster: str | None = "train-rc",
            **extra: Any) -> Any:
    status: dict[str, Any] = {"jobStatus": job_status, "jobDeploymentStatus": deploy, "rayClusterName": cluster, **extra}
    return ray_job_view({"metadata": {"name": NAME, "namespace": NS, "uid": UID, "creationTimestamp": T0, "labels": QUEUE},
                         "spec": {}, "status": {k: v for k, v in status.items() if v is not None}})


def workload(*conditions: tuple[str, str, str], checks: tuple[tuple[str, str, str], ...] = (), cluster: str | None = None,
             nominated: tuple[str, ...] = (), active: bool = True) -> Any:
    return workload_view(b.workload(
        f"job-{NAME}", NS, uid="wl-1", labels={"kueue.x-k8s.io/job-uid": UID}, queue="jobqueue", active=active,
        conditions=[b.condition(t, s, r, f"{r} message", transition=T0) for t, s, r in conditions],
        checks=[{"name": n, "state": st, "message": m} for n, st, m in checks], cluster=cluster, nominated=nominated))


ADMITTED = workload(("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))
PENDING = workload(("QuotaReserved", "False", "Pending"))


def pod(name: str = "train-0", node: str | None = "gpu-1", *, app: tuple[dict[str, Any], ...] = (),
        init: tuple[dict[str, Any], ...] = (), init_names: tuple[str, ...] = (), containers: tuple[str, ...] = ("main",),
        claims: bool = False, claim_status: bool = False, conditions: tuple[dict[str, Any], ...] = (),
        phase: str = "Running") -> Any:
    spec: dict[str, Any] = {"initContainers": [{"name": c} for c in init_names]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu"}]
    status: dict[str, Any] = {"containerStatuses": list(app), "initContainerStatuses": list(init),
                              "conditions": list(conditions)}
    if claim_status:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "train-0-gpu"}]
    return pod_view(b.pod(name, NS, node=node, containers=containers, uid=f"pod-{name}", labels={"job-name": NAME},
                          spec=spec, phase=phase, status=status))


def cs(name: str = "main", state: str = "running", reason: str = "", ready: bool = False, restarts: int = 0,
       last: str | None = None) -> dict[str, Any]:
    detail = {"reason": reason} if reason else {}
    return b.container_status(name, state, ready=ready, restarts=restarts, last=last, **detail)


RUNNING = cs(ready=True)


def status_of(owner: Any = None, workloads: tuple[Any, ...] = (ADMITTED,), pods: tuple[Any, ...] = (), **kw: Any) -> RunStatus:
    j = owner if owner is not None and owner.kind.type.kind == "Job" else None
    r = owner if owner is not None and owner.kind.type.kind == "RayJob" else None
    if owner is None:
        j = job()
    return compute_run_status(RunObjects(NS, NAME, j, r, workloads, pods, (), **kw))


def phase(status: RunStatus, name: str) -> tuple[str, str]:
    p = status.phase(name)
    assert p is not None
    return p.status, p.detail


def codes(status: RunStatus) -> list[str]:
    return [d.code for d in status.diagnostics]


# -- lifecycle states --------------------------------------------------------------------------


def test_not_found_is_every_phase_pending_and_offers_the_list():
    status = compute_run_status(RunObjects(NS, NAME))
    assert (status.state, status.display_state, status.kind) == ("not_found", "not found", "unknown")
    assert [p.name for p in status.phases] == list(PHASE_ORDER)
    assert {p.status for p in status.phases} == {"pending"}
    assert codes(status) == ["RUN_NOT_FOUND"]
    assert [(a.name, a.command) for a in status.actions] == [("list", ("tau-tui", "runs", "-n", NS))]


def test_queued_waits_in_kueue_with_the_reason():
    status = status_of(workloads=(PENDING,))
    assert status.state == "queued"
    assert phase(status, "Kueue admission") == ("active", "0/1 admitted queue=jobqueue reason=Pending: Pending message")
    assert codes(status) == ["KUEUE_PENDING"]
    assert status.diagnostics[0].severity == "info" and "jobqueue" in status.diagnostics[0].message
    assert [a.name for a in status.actions] == ["logs", "watch", "cancel"]
    assert status.actions[1].command == ("tau-tui", "status", NAME, "-n", NS, "--watch")


def test_queued_before_kueue_created_the_workload():
    status = status_of(job(suspend=True), workloads=())
    assert status.state == "queued"
    assert phase(status, "Kueue admission") == ("pending", "waiting for Kueue to create a Workload")


def test_a_job_outside_kueue_skips_admission_and_starts():
    status = status_of(job(labels={"tau.azure.com/managed-by": "tau"}), workloads=())
    assert phase(status, "Kueue admission")[0] == "skipped"
    assert status.state == "starting" and status.queue is None


def test_deactivated_workload_is_a_warning():
    status = status_of(workloads=(workload(("QuotaReserved", "False", "Pending"), active=False),))
    assert status.state == "queued"
    assert phase(status, "Kueue admission")[0] == "warning"
    assert codes(status) == ["KUEUE_PENDING"] and status.diagnostics[0].severity == "warning"


def test_evicted_workload_waits_for_quota_again():
    wl = workload(("QuotaReserved", "False", "Pending"), ("Evicted", "True", "Preempted"))
    status = status_of(workloads=(wl,))
    assert status.state == "queued"
    p = status.phase("Kueue admission")
    assert p is not None and p.status == "warning" and "evicted (Preempted)" in p.detail and "requeued" in p.hint


def test_generic_admission_check_rejected_warns_but_does_not_fail():
    wl = workload(("QuotaReserved", "True", "QuotaReserved"), checks=(("provisioning", "Rejected", "no capacity"),))
    status = status_of(workloads=(wl,))
    assert phase(status, "Kueue admission")[0] == "warning"
    assert codes(status) == ["ADMISSION_REJECTED"] and status.diagnostics[0].severity == "warning"
    assert status.state == "queued" and not status.startup_failed


def test_starting_running_succeeded_and_failed():
    admitted_only = status_of()
    assert admitted_only.state == "starting" and phase(admitted_only, "Kueue admission")[0] == "done"
    assert phase(admitted_only, "Pod scheduling") == ("pending", "no pods yet")
    running = status_of(pods=(pod(app=(RUNNING,)),))
    assert (running.state, running.startup_complete, running.startup_failed) == ("running", True, False)
    assert running.diagnostics == ()
    done = status_of(job((("Complete", "Completed"),)), workloads=(workload(("Finished", "True", "Succeeded")),))
    assert done.state == "succeeded"
    assert phase(done, "Kueue admission") == ("done", "finished; quota released")
    assert [a.name for a in done.actions] == ["logs", "results", "resume"]
    failed = status_of(job((("Failed", "BackoffLimitExceeded"),)))
    assert failed.state == "failed"
    assert codes(failed) == ["RUN_FAILED"]
    assert "BackoffLimitExceeded" in failed.diagnostics[0].message
    assert ("kubectl", "logs", "-n", NS, "-l", f"job-name={NAME}", "--all-containers", "--prefix", "--previous") in failed.diagnostics[0].commands
    assert [a.name for a in failed.actions] == ["logs", "diagnostics", "retry", "resume"]
    assert failed.actions[2].command == ("tau-tui", "runs", "retry", NAME, "-n", NS)


def test_phase_order_is_fixed_in_every_state():
    for status in (status_of(workloads=(PENDING,)), status_of(pods=(pod(app=(RUNNING,)),)),
                   status_of(ray_job("RUNNING", "Running"), pods=(pod(app=(RUNNING,)),))):
        assert tuple(p.name for p in status.phases) == PHASE_ORDER


# -- each phase in each status -----------------------------------------------------------------


def test_pod_scheduling_statuses():
    assert phase(status_of(pods=(pod(node=None),)), "Pod scheduling") == ("active", "0/1 pods on nodes")
    unschedulable = pod(node=None, conditions=({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                 "message": "0/4 nodes have free GPUs"},))
    status = status_of(pods=(unschedulable,))
    p = status.phase("Pod scheduling")
    assert p is not None and p.status == "warning" and "0/4 nodes have free GPUs" in p.hint
    assert "STARTUP_POD_SCHEDULING" in codes(status) and status.state == "starting"
    assert phase(status_of(pods=(pod(),)), "Pod scheduling") == ("done", "1/1 pods on nodes")


def test_dra_allocation_statuses():
    assert phase(status_of(pods=(pod(),)), "DRA allocation")[0] == "skipped"
    assert phase(status_of(pods=(pod(claims=True),)), "DRA allocation") == ("active", "0/1 pods have allocated claims")
    assert phase(status_of(pods=(pod(claims=True, claim_status=True),)), "DRA allocation")[0] == "done"


@pytest.mark.parametrize(("app", "expected"), [
    ((), "pending"),
    ((cs(state="waiting", reason="ContainerCreating"),), "active"),
    ((RUNNING,), "done"),
    ((cs(state="waiting", reason="ImagePullBackOff"),), "warning"),
    ((cs(state="waiting", reason="ErrImagePull"),), "warning"),
])
def test_image_pull_statuses(app, expected):
    assert phase(status_of(pods=(pod(app=app),)), "Image pull")[0] == expected


def test_image_pull_failure_is_a_startup_failure():
    status = status_of(pods=(pod(app=(cs(state="waiting", reason="ImagePullBackOff"),)),))
    assert status.startup_failed and status.state == "starting"
    assert codes(status) == ["STARTUP_IMAGE_PULL", "STARTUP_FAILED"]
    assert "ImagePullBackOff" in status.diagnostics[0].message
    assert "pull secret" in status.diagnostics[0].suggestion


@pytest.mark.parametrize(("init", "app", "expected"), [
    ((), (RUNNING,), "skipped"),
    # a sidecar (restartPolicy: Always) keeps running once the others completed
    ((cs("setup", state="terminated", reason="Completed"), cs("proxy", state="running")), (), "done"),
    ((cs("setup", state="terminated", reason="Completed"), cs("fetch", state="waiting", reason="PodInitializing")), (), "active"),
    ((cs("setup", state="terminated", reason="Completed"), cs("fetch", state="terminated", reason="Completed")), (RUNNING,), "done"),
    ((cs("setup", state="terminated", reason="Error"),), (), "warning"),
    ((cs("setup", state="waiting", reason="CrashLoopBackOff"),), (), "warning"),
])
def test_init_container_statuses(init, app, expected):
    names = tuple(c["name"] for c in init)
    init_views = tuple({**c} for c in init)
    p = pod(app=app, init=init_views, init_names=names)
    assert phase(status_of(pods=(p,)), "Init containers")[0] == expected


def test_init_container_failure_is_a_startup_failure():
    p = pod(init=(cs("setup", state="terminated", reason="Error"),), init_names=("setup",))
    status = status_of(pods=(p,))
    assert status.startup_failed
    assert "STARTUP_INIT_CONTAINERS" in codes(status) and "STARTUP_FAILED" in codes(status)


def test_container_start_and_ready_statuses():
    two = ("main", "sidecar")
    assert phase(status_of(pods=(pod(),)), "Container start") == ("pending", "")
    assert phase(status_of(pods=(pod(containers=two, app=(RUNNING,)),)), "Container start") == ("active", "1/2 started")
    assert phase(status_of(pods=(pod(app=(RUNNING,)),)), "Container start") == ("done", "1/1 started")
    crash = status_of(pods=(pod(app=(cs(state="waiting", reason="CrashLoopBackOff", restarts=3),)),))
    assert phase(crash, "Container start") == ("warning", "train-0/main: CrashLoopBackOff (restarts 3)")
    assert codes(crash) == ["STARTUP_CONTAINER_START", "STARTUP_FAILED"]
    assert phase(status_of(pods=(pod(app=(cs(),)),)), "Ready") == ("pending", "0/1 ready")
    assert phase(status_of(pods=(pod(containers=two, app=(RUNNING, cs("sidecar"))),)), "Ready") == ("active", "1/2 ready")
    assert phase(status_of(pods=(pod(app=(RUNNING,)),)), "Ready") == ("done", "1/1 ready")
    completed = cs(state="terminated", reason="Completed")
    assert phase(status_of(pods=(pod(app=(completed,), phase="Succeeded"),)), "Ready")[0] == "done"


def test_ray_phases_are_skipped_for_a_batch_job():
    status = status_of(pods=(pod(app=(RUNNING,)),))
    for name in ("RayCluster", "RayJob", "Compute release"):
        assert phase(status, name) == ("skipped", "batch Job")


def test_ray_cluster_statuses():
    assert phase(status_of(ray_job(cluster=None)), "RayCluster") == ("pending", "no RayCluster yet")
    assert phase(status_of(ray_job(deploy="Initializing")), "RayCluster") == ("active", "RayCluster train-rc Initializing")
    assert phase(status_of(ray_job("RUNNING", "Running")), "RayCluster") == ("done", "RayCluster train-rc")


def test_ray_job_statuses():
    assert phase(status_of(ray_job(deploy="Initializing")), "RayJob") == ("pending", "Initializing")
    assert phase(status_of(ray_job("PENDING", "Running")), "RayJob") == ("active", "PENDING")
    assert phase(status_of(ray_job("RUNNING", "Running")), "RayJob") == ("active", "RUNNING")
    assert phase(status_of(ray_job("SUCCEEDED", "Complete")), "RayJob") == ("done", "SUCCEEDED")
    assert phase(status_of(ray_job("FAILED", "Failed")), "RayJob") == ("warning", "FAILED")
    assert phase(status_of(ray_job("STOPPED", "Complete")), "RayJob") == ("warning", "STOPPED")


def test_compute_release_statuses():
    head = pod("train-rc-head", app=(RUNNING,))
    assert phase(status_of(ray_job("RUNNING", "Running"), pods=(head,)), "Compute release")[0] == "pending"
    holding = status_of(ray_job("SUCCEEDED", "Complete"), pods=(head,))
    p = holding.phase("Compute release")
    assert p is not None and p.status == "warning" and p.detail.startswith("resources NOT reusable: 1 Ray pod")
    assert "STARTUP_COMPUTE_RELEASE" in codes(holding)
    gone = pod("train-rc-head", app=(cs(state="terminated", reason="Completed"),), phase="Succeeded")
    assert phase(status_of(ray_job("SUCCEEDED", "Complete"), pods=(gone,)), "Compute release") == ("done", "Ray pods released")
    assert status_of(ray_job("SUCCEEDED", "Complete"), pods=(gone,)).state == "succeeded"


@pytest.mark.parametrize("extra", [{"failed": 1}, {"message": "Job submission has failed. Reason: entrypoint not found"}])
def test_kuberay_failed_count_or_message_overrides_succeeded(extra):
    status = status_of(ray_job("SUCCEEDED", "Complete", **extra))
    assert status.state == "failed"
    assert phase(status, "RayJob")[0] == "warning"
    assert codes(status)[0] == "RUN_FAILED"
    message = status.diagnostics[0].message
    assert "SUCCEEDED but" in message
    assert ("status.failed=1" in message) if "failed" in extra else ("entrypoint not found" in message)


def test_kuberay_zero_failed_stays_succeeded():
    assert status_of(ray_job("SUCCEEDED", "Complete", failed=0)).state == "succeeded"


# -- MultiKueue placement ------------------------------------------------------------------------

MK = "kueue.x-k8s.io/multikueue"


def mk_status(wl: Any, *, manager_view: bool = False) -> RunStatus:
    return status_of(job(managed_by=MK), workloads=(wl,), manager_view=manager_view)


def test_single_cluster_run_skips_placement():
    assert phase(status_of(), "MultiKueue placement") == ("skipped", "single-cluster run")
    assert not status_of().multikueue


def test_placement_pending_nominated_and_placed():
    reserved = ("QuotaReserved", "True", "QuotaReserved")
    pending = mk_status(workload(reserved, checks=(("multikueue", "Pending", ""),)))
    assert pending.multikueue and phase(pending, "MultiKueue placement") == ("pending", "waiting for a worker")
    nominated = mk_status(workload(reserved, nominated=("westus3", "eastus2"), checks=(("multikueue", "Pending", ""),)))
    assert phase(nominated, "MultiKueue placement") == ("active", "nominated: eastus2, westus3")
    placed = mk_status(workload(reserved, ("Admitted", "True", "Admitted"), cluster="westus3",
                                checks=(("multikueue", "Ready", ""),)), manager_view=True)
    assert phase(placed, "MultiKueue placement") == ("done", "placed on worker westus3")
    assert placed.cluster == "westus3" and placed.state == "running" and placed.startup_complete
    # On the manager the pods live on the worker: the pod phases are not visible here.
    assert phase(placed, "Pod scheduling") == ("skipped", "runs on worker westus3")


def test_placement_retry_is_queued_with_a_diagnostic():
    wl = workload(("QuotaReserved", "True", "QuotaReserved"),
                  checks=(("multikueue", "Retry", "Reserving remote lost"),))
    status = mk_status(wl, manager_view=True)
    p = status.phase("MultiKueue placement")
    assert p is not None and p.status == "warning" and "Retry: Reserving remote lost" in p.detail
    assert status.state == "queued" and not status.startup_failed and not status.startup_complete
    # Admission waits again (KUEUE_PENDING) and the placement says why.
    assert codes(status) == ["KUEUE_PENDING", "MULTIKUEUE_RETRY"]
    retry = status.diagnostics[1]
    assert retry.severity == "warning" and "Reserving remote lost" in retry.message
    assert retry.commands == (("kubectl", "get", "multikueueclusters"),)


def test_placement_rejected_fails_the_run():
    wl = workload(("QuotaReserved", "True", "QuotaReserved"), checks=(("multikueue", "Rejected", "no worker fits"),))
    status = mk_status(wl, manager_view=True)
    assert status.state == "failed" and status.startup_failed
    assert "ADMISSION_REJECTED" in codes(status)
    rejected = next(d for d in status.diagnostics if d.code == "ADMISSION_REJECTED")
    assert rejected.severity == "error" and "no worker fits" in rejected.message


# -- OOM and GPU faults --------------------------------------------------------------------------


def test_oom_killed_now_or_in_the_previous_container():
    now = status_of(pods=(pod(app=(cs(state="terminated", reason="OOMKilled"),)),))
    assert "OOM_KILLED" in codes(now)
    before = status_of(pods=(pod(app=(cs(state="waiting", reason="CrashLoopBackOff", last="OOMKilled"),)),))
    oom = next(d for d in before.diagnostics if d.code == "OOM_KILLED")
    assert oom.message == "train-0/main was OOMKilled (out of memory)"
    assert oom.commands == (("kubectl", "logs", "train-0", "-c", "main", "-n", NS, "--previous"),)


def xid79(node: str = "gpu-1", since: str | None = None, verdict: str = "unhealthy") -> dict[str, NodeGpuFault]:
    return {node: NodeGpuFault(node, verdict, "XID 79", "GPU fell off the bus", ("gpu0 GPU-1",),
                               parse_time(since), ("tau-agent",))}


def test_gpu_fault_on_the_node_of_a_running_pod():
    status = status_of(pods=(pod(app=(RUNNING,)),), gpu_faults=xid79())
    fault = next(d for d in status.diagnostics if d.code == "GPU_FAULT")
    assert "gpu-1" in fault.message and "XID 79" in fault.message and fault.severity == "error"
    assert "gpu0 GPU-1" in fault.message and "tau-agent" in fault.message
    assert status.display_state == "running, GPU fault"
    assert [(h.pod, h.fault.node, h.failed) for h in status.gpu_hits] == [("train-0", "gpu-1", False)]
    healthy = status_of(pods=(pod(app=(RUNNING,)),), gpu_faults=xid79("gpu-2"))
    assert "GPU_FAULT" not in codes(healthy) and healthy.gpu_hits == ()


def failed_pod(finished: str) -> Any:
    ended = cs(state="terminated", reason="Error")
    ended["state"]["terminated"]["finishedAt"] = finished
    return pod(app=(ended,), phase="Failed")


def test_a_pod_that_failed_on_a_bad_gpu_is_named_even_when_the_run_failed():
    status = status_of(job((("Failed", "BackoffLimitExceeded"),)), pods=(failed_pod("2026-11-30T10:10:00Z"),),
                       gpu_faults=xid79(since="2026-11-30T10:10:00Z"))
    assert status.state == "failed"
    fault = next(d for d in status.diagnostics if d.code == "GPU_FAULT")
    assert fault.message.startswith("pod train-0 failed (Error) on node gpu-1, whose GPU is unhealthy")
    assert "POD_FAILED" not in codes(status) and status.display_state == "failed, GPU fault"


def test_a_pod_that_failed_long_before_the_fault_was_not_hit():
    status = status_of(job((("Failed", "BackoffLimitExceeded"),)), pods=(failed_pod("2026-11-30T08:00:00Z"),),
                       gpu_faults=xid79(since="2026-11-30T10:10:00Z"))
    assert "GPU_FAULT" not in codes(status) and status.gpu_hits == ()


def test_a_degraded_node_marks_only_pods_that_failed_there():
    running = status_of(pods=(pod(app=(RUNNING,)),), gpu_faults=xid79(verdict="degraded"))
    assert "GPU_FAULT" not in codes(running)
    failed = status_of(pods=(failed_pod("2026-11-30T10:10:00Z"),), gpu_faults=xid79(verdict="degraded"))
    fault = next(d for d in failed.diagnostics if d.code == "GPU_FAULT")
    assert fault.severity == "warning" and "pod failed" in failed.display_state


# -- picking a run's objects ---------------------------------------------------------------------


def test_objects_for_run_picks_by_owner_uid_and_job_name():
    other_wl = workload_view({"metadata": {"name": "other", "namespace": NS, "uid": "wl-2",
                                           "labels": {"kueue.x-k8s.io/job-uid": "someone-else"}}, "spec": {}, "status": {}})
    other_pod = pod_view({"metadata": {"name": "x", "namespace": NS, "uid": "p", "labels": {"job-name": "other"}},
                          "spec": {}, "status": {}})
    objs = objects_for_run(NS, NAME, job=job(), ray_job=None, workloads=[ADMITTED, other_wl], pods=[pod(), other_pod], events=[])
    assert [w.name for w in objs.workloads] == [f"job-{NAME}"]
    assert [p.name for p in objs.pods] == ["train-0"]
    assert not objs.manager_view


def test_the_run_index_picks_what_objects_for_run_picks_without_scanning_again():
    """The Runs pane, the recorder and ``tau-tui runs`` take a run's objects from the index (its own
    only, looked up): they are the ones objects_for_run picks from the namespace's lists."""
    from tau_tui.core.cluster.convert import event_view
    from tau_tui.core.operations.run_index import RunIndex

    other_wl = workload_view({"metadata": {"name": "other", "namespace": NS, "uid": "wl-2",
                                           "labels": {"kueue.x-k8s.io/job-uid": "someone-else"}}, "spec": {}, "status": {}})
    other_pod = pod_view({"metadata": {"name": "x", "namespace": NS, "uid": "p", "labels": {"job-name": "other"}},
                          "spec": {}, "status": {}})

    def event(name: str, about: str) -> Any:
        return event_view({"metadata": {"name": name, "namespace": NS, "uid": name}, "reason": "R", "message": name,
                           "involvedObject": {"kind": "Pod", "name": about, "namespace": NS}})

    workloads, pods = [ADMITTED, other_wl], [pod(), other_pod, pod("train-1")]
    events = [event("e1", "train-1"), event("e2", "x"), event("e3", NAME), event("e4", f"job-{NAME}"), event("e5", "train-0")]
    owner = job()
    picked = RunIndex(workloads, pods, events).objects(owner)
    scanned = objects_for_run(NS, NAME, job=owner, ray_job=None, workloads=workloads, pods=pods, events=events)
    assert picked == scanned
    assert [e.name for e in picked.events] == ["e1", "e3", "e4", "e5"]  # in list order, merged from four objects
    assert compute_run_status(picked) == compute_run_status(scanned)


def test_queued_batch_jobs_without_pods_share_the_phases_that_read_the_same():
    """A first read of 20,000 runs made 200,000 phases that are the same for every queued batch Job
    on one cluster without pods: those are made once, and each run's own phases still say its own."""
    first = compute_run_status(RunObjects(NS, NAME, job=job(), workloads=(PENDING,)))
    second = compute_run_status(RunObjects(NS, NAME, job=job(suspend=True), workloads=(PENDING,)))
    assert first.state == second.state == "queued"
    shared = [a for a, b in zip(first.phases, second.phases, strict=True) if a is b]
    assert [p.name for p in shared] == ["MultiKueue placement", "RayCluster", "Pod scheduling", "DRA allocation", "Image pull",
                                        "Init containers", "Container start", "Ready", "RayJob", "Compute release"]
    assert first.phase("Pod scheduling").detail == "no pods"  # not admitted: no pods are expected yet
    assert first.phase("Submitted") is not second.phase("Submitted")
