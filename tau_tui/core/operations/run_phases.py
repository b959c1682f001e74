"""Each phase of a run read from its objects (taugrid.md §8.1): Kueue admission, MultiKueue
placement, scheduling, DRA, containers, Ray; and whether the run failed or succeeded.

Fail closed: missing data leaves a phase ``pending``, never ``done``. Pure functions; the engine
(:mod:`tau_tui.core.operations.runstatus`) puts them together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tau_tui.core.cluster.view_types import PodView, RayJobView, WorkloadView
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.run_status_types import Phase, PhaseStatus, RunDiagnostic

IMAGE_PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
START_FAILURES = ("CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError")
MULTIKUEUE_MANAGED_BY = "kueue.x-k8s.io/multikueue"
#: KubeRay can report jobStatus=SUCCEEDED for a job whose submission failed; the
#: Python SDK's ``classify`` treats ``status.failed > 0`` or this message as a failure.
RAY_SUBMISSION_FAILED = "Job submission has failed"


def is_multikueue(objs: RunObjects) -> bool:
    owner = objs.job or objs.ray_job
    if owner is not None and owner.managed_by == MULTIKUEUE_MANAGED_BY:
        return True
    return any(w.cluster_name or w.nominated_cluster_names for w in objs.workloads)


def workload_phase(objs: RunObjects, multikueue: bool) -> tuple[Phase, list[RunDiagnostic]]:
    wls = list(objs.workloads)
    name = "Kueue admission"
    if not wls:
        owner = objs.job or objs.ray_job
        if owner is not None and not getattr(owner, "suspended", False) and owner.managed_by is None and not owner.labels.get(
            "kueue.x-k8s.io/queue-name"
        ):
            return Phase(name, "skipped", "not queued through Kueue (no queue-name label)"), []
        return Phase(name, "pending", "waiting for Kueue to create a Workload"), []
    total = len(wls)
    # one pass over the Workloads (a first read works this out for 20,000 runs)
    admitted = finished = 0
    rejected: tuple[WorkloadView, Any] | None = None
    evicted_any = inactive_any = False
    reason = ""
    for w in wls:
        word = w.status_word
        if word == "finished":
            finished += 1
            admitted += 1
        elif word == "admitted":
            admitted += 1
        if rejected is None:
            rejected = next(((w, c) for c in w.admission_checks if c.state == "Rejected"), None)
        quota = evicted = None
        for cond in w.conditions:  # the first of each type, as WorkloadView.condition finds it
            if cond.type == "QuotaReserved":
                quota = quota or cond
            elif cond.type == "Evicted":
                evicted = evicted or cond
        if quota is not None and not quota.is_true:
            reason = quota.reason + (f": {quota.message}" if quota.message else "")
        if evicted is not None and evicted.is_true:  # after QuotaReserved's: an eviction says why it waits again
            reason = f"evicted ({evicted.reason}): {evicted.message}".strip()
            evicted_any = True
        inactive_any = inactive_any or not w.active
    queue = wls[0].queue_name or "?"
    if finished == total:
        return Phase(name, "done", "finished; quota released"), []
    diags: list[RunDiagnostic] = []
    detail = f"{admitted}/{total} admitted queue={queue}" + (f" reason={reason}" if reason and admitted < total else "")
    if rejected is not None and not multikueue:
        # A generic AdmissionCheck Rejected does not fail the watch (§8.1), but it is worth a warning.
        wl, check = rejected
        diags.append(RunDiagnostic("ADMISSION_REJECTED", "warning", f"AdmissionCheck {check.name} rejected {wl.name}: {check.message}"))
        return Phase(name, "warning", detail, f"AdmissionCheck {check.name} rejected: {check.message}"), diags
    if admitted == total:
        admitted_at = min((c.last_transition_time for w in wls if (c := w.condition("Admitted")) and c.last_transition_time), default=None)
        return Phase(name, "done", detail, started_at=admitted_at), diags
    if evicted_any:
        return Phase(name, "warning", detail, "the workload was evicted and requeued; it waits for quota again"), diags
    if inactive_any:
        diags.append(RunDiagnostic("KUEUE_PENDING", "warning", "the Workload is deactivated (spec.active=false)", "resume it or resubmit"))
        return Phase(name, "warning", detail + " (deactivated)"), diags
    diags.append(
        RunDiagnostic(
            "KUEUE_PENDING",
            "info",
            f"waiting in queue {queue}" + (f": {reason}" if reason else ""),
            "check the queue pane for its position and what it waits for",
        )
    )
    return Phase(name, "active", detail), diags


def multikueue_phase(objs: RunObjects, multikueue: bool) -> tuple[Phase, bool, str | None]:
    """Returns the phase, whether the run failed by rejection, and the worker."""
    name = "MultiKueue placement"
    if not multikueue:
        return _SINGLE_CLUSTER, False, None
    checks = [c for w in objs.workloads for c in w.admission_checks]
    worker = next((w.cluster_name for w in objs.workloads if w.cluster_name), None)
    rejected = [c for c in checks if c.state == "Rejected"]
    if rejected:
        return Phase(name, "warning", f"AdmissionCheck {rejected[0].name} Rejected: {rejected[0].message}"), True, worker
    retry = [c for c in checks if c.state == "Retry"]
    if retry:
        # Retry: the placement was reset (worker lost or evicted there); Kueue requeues it on the manager.
        return Phase(name, "warning", f"AdmissionCheck {retry[0].name} Retry: {retry[0].message}".rstrip(": "),
                     "the workload is requeued and placed again"), False, None
    if worker:
        return Phase(name, "done", f"placed on worker {worker}"), False, worker
    nominated = sorted({c for w in objs.workloads for c in w.nominated_cluster_names})
    if nominated:
        return Phase(name, "active", "nominated: " + ", ".join(nominated)), False, None
    return Phase(name, "pending", "waiting for a worker"), False, None


# Phases that read the same for every run in that situation: made once (a queued batch Job without
# pods shares 9 of its 12; 20,000 runs at `--demo large` made 180,000 of them on a first read).
_SCHEDULING_NO_PODS = {True: Phase("Pod scheduling", "pending", "no pods yet"),
                       False: Phase("Pod scheduling", "pending", "no pods")}
_DRA_NO_CLAIMS = Phase("DRA allocation", "skipped", "no resource claims")
_SINGLE_CLUSTER = Phase("MultiKueue placement", "skipped", "single-cluster run")
_CONTAINERS_NO_PODS = (Phase("Image pull", "pending"), Phase("Init containers", "pending"),
                       Phase("Container start", "pending"), Phase("Ready", "pending"))
_RAY_OF_A_BATCH_JOB = (Phase("RayCluster", "skipped", "batch Job"), Phase("RayJob", "skipped", "batch Job"),
                       Phase("Compute release", "skipped", "batch Job"))


def pods_of(objs: RunObjects) -> list[PodView]:
    return [p for p in objs.pods if p.deletion_timestamp is None or not p.terminal]


def scheduling_phase(pods: list[PodView], expected: bool) -> Phase:
    name = "Pod scheduling"
    if not pods:
        return _SCHEDULING_NO_PODS[expected]
    unscheduled = [p for p in pods if not p.node_name]
    if not unscheduled:
        return Phase(name, "done", f"{len(pods)}/{len(pods)} pods on nodes")
    for pod in unscheduled:
        cond = pod.condition("PodScheduled")
        if cond is not None and cond.status == "False" and cond.reason == "Unschedulable":
            return Phase(name, "warning", f"{len(pods) - len(unscheduled)}/{len(pods)} scheduled", f"{pod.name}: {cond.message or cond.reason}")
    return Phase(name, "active", f"{len(pods) - len(unscheduled)}/{len(pods)} pods on nodes")


def dra_phase(pods: list[PodView]) -> Phase:
    claims = [p for p in pods if (p.raw.get("spec") or {}).get("resourceClaims")]
    if not claims:
        return _DRA_NO_CLAIMS
    allocated = [p for p in claims if (p.raw.get("status") or {}).get("resourceClaimStatuses")]
    status: PhaseStatus = "done" if len(allocated) == len(claims) else "active"
    return Phase("DRA allocation", status, f"{len(allocated)}/{len(claims)} pods have allocated claims")


def container_phases(pods: list[PodView]) -> tuple[Phase, Phase, Phase, Phase]:
    if not pods:
        return _CONTAINERS_NO_PODS
    app = [(p, c) for p in pods for c in p.container_statuses if not c.init]
    init = [(p, c) for p in pods for c in p.container_statuses if c.init]
    has_init = any(p.init_containers for p in pods)
    expected_app = sum(len(p.containers) for p in pods)
    # Image pull
    pull_fail = [(p, c) for p, c in app + init if c.state == "waiting" and c.reason in IMAGE_PULL_FAILURES]
    started = [(p, c) for p, c in app + init if c.state in ("running", "terminated")]
    if pull_fail:
        p, c = pull_fail[0]
        image = Phase("Image pull", "warning", f"{p.name}/{c.name}: {c.reason}", "check the image name and the registry pull secret")
    elif started:
        image = Phase("Image pull", "done", "images pulled")
    elif app or init:
        image = Phase("Image pull", "active", "pulling images")
    else:
        image = Phase("Image pull", "pending")
    # Init containers
    if not has_init:
        init_phase = Phase("Init containers", "skipped", "none")
    else:
        done_init = [(p, c) for p, c in init if c.state == "terminated" and c.reason in ("Completed", "")]
        failing = [(p, c) for p, c in init if (c.state == "waiting" and c.reason in START_FAILURES) or (c.state == "terminated" and c.reason == "Error")]
        running_app = [(p, c) for p, c in app if c.state in ("running", "terminated")]
        sidecars = [(p, c) for p, c in init if c.state == "running"]
        total_init = sum(len(p.init_containers) for p in pods)
        if failing:
            p, c = failing[0]
            init_phase = Phase("Init containers", "warning", f"{p.name}/{c.name}: {c.reason}")
        elif running_app or len(done_init) + len(sidecars) >= total_init:
            init_phase = Phase("Init containers", "done", f"{total_init} init container(s) done")
        else:
            init_phase = Phase("Init containers", "active", f"{len(done_init)}/{total_init} done")
    # Container start
    crash = [(p, c) for p, c in app if c.state == "waiting" and c.reason in START_FAILURES]
    running = [(p, c) for p, c in app if c.state in ("running", "terminated")]
    if crash:
        p, c = crash[0]
        start = Phase("Container start", "warning", f"{p.name}/{c.name}: {c.reason} (restarts {c.restart_count})", "read the previous container's logs")
    elif expected_app and len(running) >= expected_app:
        start = Phase("Container start", "done", f"{len(running)}/{expected_app} started")
    elif running:
        start = Phase("Container start", "active", f"{len(running)}/{expected_app} started")
    else:
        start = Phase("Container start", "pending")
    # Ready
    ready = [(p, c) for p, c in app if c.ready or (c.state == "terminated" and c.reason == "Completed")]
    if expected_app and len(ready) >= expected_app:
        ready_phase = Phase("Ready", "done", f"{len(ready)}/{expected_app} ready")
    elif ready:
        ready_phase = Phase("Ready", "active", f"{len(ready)}/{expected_app} ready")
    else:
        ready_phase = Phase("Ready", "pending", f"0/{expected_app} ready")
    return image, init_phase, start, ready_phase


def ray_phases(objs: RunObjects, pods: list[PodView]) -> tuple[Phase, Phase, Phase]:
    rj = objs.ray_job
    if rj is None:
        return _RAY_OF_A_BATCH_JOB
    deploy = rj.job_deployment_status or ""
    if rj.ray_cluster_name and deploy not in ("", "Initializing", "New"):
        cluster = Phase("RayCluster", "done", f"RayCluster {rj.ray_cluster_name}")
    elif rj.ray_cluster_name:
        cluster = Phase("RayCluster", "active", f"RayCluster {rj.ray_cluster_name} {deploy or 'initializing'}")
    else:
        cluster = Phase("RayCluster", "pending", "no RayCluster yet")
    job_status = (rj.job_status or "").upper()
    if _ray_submission_failed(rj):
        job = Phase("RayJob", "warning", f"{job_status or deploy} but {_ray_failure_note(rj)}")
    elif job_status == "SUCCEEDED":
        job = Phase("RayJob", "done", "SUCCEEDED")
    elif job_status in ("FAILED", "STOPPED") or deploy == "Failed":
        job = Phase("RayJob", "warning", job_status or deploy)
    elif job_status in ("RUNNING", "PENDING"):
        job = Phase("RayJob", "active", job_status)
    else:
        job = Phase("RayJob", "pending", job_status or deploy or "waiting")
    finished = job_status in ("SUCCEEDED", "FAILED", "STOPPED") or deploy in ("Complete", "Failed")
    if not finished:
        release = Phase("Compute release", "pending", "while the job runs")
    else:
        holding = [p for p in pods if not p.terminal and p.node_name]
        if holding:
            release = Phase(
                "Compute release",
                "warning",
                f"resources NOT reusable: {len(holding)} Ray pod(s) still hold nodes",
                "set shutdownAfterJobFinishes or delete the RayJob",
            )
        else:
            release = Phase("Compute release", "done", "Ray pods released")
    return cluster, job, release


def _ray_submission_failed(rj: RayJobView) -> bool:
    """The KubeRay quirk: ``status.failed > 0`` or "Job submission has failed" overrides SUCCEEDED."""
    status = rj.raw.get("status") or {}
    failed = status.get("failed")
    return (isinstance(failed, int) and failed > 0) or RAY_SUBMISSION_FAILED in str(status.get("message") or "")


def _ray_failure_note(rj: RayJobView) -> str:
    status = rj.raw.get("status") or {}
    message = str(status.get("message") or "")
    reason = message.split("Reason:", 1)[1].strip() if "Reason:" in message else message
    failed = status.get("failed")
    note = f"status.failed={failed}" if isinstance(failed, int) and failed > 0 else RAY_SUBMISSION_FAILED.lower()
    return note + (f" ({reason})" if reason else "")


def run_failure(objs: RunObjects) -> str | None:
    if objs.job is not None:
        cond = objs.job.condition("Failed")
        if cond is not None and cond.is_true:
            return f"Job failed: {cond.reason}: {cond.message}".rstrip(": ")
    if objs.ray_job is not None:
        rj = objs.ray_job
        if _ray_submission_failed(rj):
            return f"RayJob failed: {rj.job_status or rj.job_deployment_status or 'no status'} but {_ray_failure_note(rj)}"
        if (rj.job_status or "").upper() == "FAILED" or rj.job_deployment_status == "Failed":
            return f"RayJob failed ({rj.job_status or rj.job_deployment_status})"
    return None


def run_succeeded(objs: RunObjects) -> bool:
    if objs.job is not None:
        cond = objs.job.condition("Complete")
        return cond is not None and cond.is_true
    if objs.ray_job is not None:
        return (objs.ray_job.job_status or "").upper() == "SUCCEEDED" and not _ray_submission_failed(objs.ray_job)
    return False


def exit_reason(pod: PodView) -> str:
    """Why a failed pod's containers ended (Error, OOMKilled ...): the app containers' reason, not an
    init container's "Completed"."""
    ended = [c.reason for c in pod.container_statuses if c.state == "terminated" and c.reason]
    app = [c.reason for c in pod.container_statuses if not c.init and c.state == "terminated" and c.reason]
    return next(iter(app or [r for r in ended if r != "Completed"]), "")


def oom_killed(pods: Sequence[PodView]) -> list[tuple[PodView, str]]:
    """Containers that ended OOMKilled, now or in their previous run (``lastState``)."""
    found = []
    for pod in pods:
        status = pod.raw.get("status") or {}
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            for key in ("state", "lastState"):
                terminated = (cs.get(key) or {}).get("terminated") or {}
                if terminated.get("reason") == "OOMKilled":
                    found.append((pod, str(cs.get("name", ""))))
                    break
    return found
