"""Run status phase engine (taugrid.md §8.1-§8.3): from the cluster objects of one
run to its phases in order, its lifecycle state, diagnostics and next actions.

Pure functions over the typed views of :mod:`tau_tui.core.cluster.view_types`; no I/O and
no Textual.  The runs pane renders what :func:`compute_run_status` returns and
never decides a phase itself.  Fail closed: missing data leaves a phase
``pending`` (or the run ``not_found``), never ``done``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.cluster.view_types import EventView, JobView, PodView, RayJobView, WorkloadView
from tau_tui.core.operations.gpufaults import GpuHit, NodeGpuFault, gpu_hits

PhaseStatus = Literal["pending", "active", "done", "warning", "skipped"]
#: taugrid.md §8.2's states, plus ``releasing``: the Job or RayJob is deleted (cancelled) and its
#: pods still hold their nodes' GPUs until their grace period ends; and ``cancelled``: the caller
#: cancelled it and every pod is gone.
LifecycleState = Literal["not_found", "queued", "starting", "running", "succeeded", "failed", "releasing", "cancelled"]

PHASE_ORDER = (
    "Submitted",
    "Kueue admission",
    "MultiKueue placement",
    "RayCluster",
    "Pod scheduling",
    "DRA allocation",
    "Image pull",
    "Init containers",
    "Container start",
    "Ready",
    "RayJob",
    "Compute release",
)

#: Symbol and word for every phase status: status is never shown by colour alone.
STATUS_SYMBOLS: dict[str, str] = {"pending": "○", "active": "◐", "done": "✓", "warning": "⚠", "skipped": "–"}

IMAGE_PULL_FAILURES = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
START_FAILURES = ("CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError")
MULTIKUEUE_MANAGED_BY = "kueue.x-k8s.io/multikueue"
#: KubeRay can report jobStatus=SUCCEEDED for a job whose submission failed; the
#: Python SDK's ``classify`` treats ``status.failed > 0`` or this message as a failure.
RAY_SUBMISSION_FAILED = "Job submission has failed"


@dataclass(frozen=True)
class Phase:
    name: str
    status: PhaseStatus
    detail: str = ""
    hint: str = ""
    started_at: datetime | None = None

    @property
    def symbol(self) -> str:
        return STATUS_SYMBOLS[self.status]


@dataclass(frozen=True)
class RunDiagnostic:
    #: RUN_NOT_FOUND, RUN_FAILED, ADMISSION_REJECTED, KUEUE_PENDING, MULTIKUEUE_RETRY,
    #: STARTUP_<PHASE>, STARTUP_FAILED, OOM_KILLED, GPU_FAULT
    code: str
    severity: Literal["info", "warning", "error"]
    message: str
    suggestion: str = ""
    #: Commands that help, each an argv (shown, never run by the engine).
    commands: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class RunAction:
    name: str  # list, watch, logs, diagnostics, results, cancel, retry, resume
    description: str
    key: str = ""
    #: The headless equivalent as an argv ("tau-tui status …", "kubectl logs …").
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunObjects:
    """Everything the engine reads about one run (already fetched from the cache)."""

    namespace: str
    name: str
    job: JobView | None = None
    ray_job: RayJobView | None = None
    workloads: Sequence[WorkloadView] = ()
    pods: Sequence[PodView] = ()
    events: Sequence[EventView] = ()
    #: True on a MultiKueue manager (the run's pods live on a worker cluster).
    manager_view: bool = False
    #: node name → its GPU fault now (unhealthy or degraded: node, GPUs, reason, since), from the
    #: agent's verdict or other writers' node conditions; a pod of this run hit by one gives GPU_FAULT.
    gpu_faults: Mapping[str, NodeGpuFault] = field(default_factory=dict)
    #: The caller cancelled (deleted) this run: once its Job or RayJob and every pod are gone it
    #: reads "cancelled", not "not found" (the cluster keeps no trace of a deleted run).
    cancelled: bool = False
    #: The MultiKueue worker a cancelled run was placed on: its pods held GPUs there, not here.
    worker: str | None = None
    #: That worker's pods of the run, read on the worker; None when they could not be read (no
    #: context mapped to the worker, or it is unreachable): then the release is never confirmed.
    worker_pods: Sequence[PodView] | None = None


@dataclass(frozen=True)
class RunStatus:
    namespace: str
    name: str
    kind: Literal["Job", "RayJob", "unknown"]
    state: LifecycleState
    display_state: str
    phases: tuple[Phase, ...]
    diagnostics: tuple[RunDiagnostic, ...] = ()
    actions: tuple[RunAction, ...] = ()
    startup_complete: bool = False
    startup_failed: bool = False
    queue: str | None = None
    cluster: str | None = None
    multikueue: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: The pods of this run a GPU fault hit (node, GPUs, reason): the run is marked with them.
    gpu_hits: tuple[GpuHit, ...] = ()

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _is_multikueue(objs: RunObjects) -> bool:
    owner = objs.job or objs.ray_job
    if owner is not None and owner.managed_by == MULTIKUEUE_MANAGED_BY:
        return True
    return any(w.cluster_name or w.nominated_cluster_names for w in objs.workloads)


def _workload_phase(objs: RunObjects, multikueue: bool) -> tuple[Phase, list[RunDiagnostic]]:
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


def _multikueue_phase(objs: RunObjects, multikueue: bool) -> tuple[Phase, bool, str | None]:
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


def _pods_of(objs: RunObjects) -> list[PodView]:
    return [p for p in objs.pods if p.deletion_timestamp is None or not p.terminal]


def _scheduling_phase(pods: list[PodView], expected: bool) -> Phase:
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


def _dra_phase(pods: list[PodView]) -> Phase:
    claims = [p for p in pods if (p.raw.get("spec") or {}).get("resourceClaims")]
    if not claims:
        return _DRA_NO_CLAIMS
    allocated = [p for p in claims if (p.raw.get("status") or {}).get("resourceClaimStatuses")]
    status: PhaseStatus = "done" if len(allocated) == len(claims) else "active"
    return Phase("DRA allocation", status, f"{len(allocated)}/{len(claims)} pods have allocated claims")


def _container_phases(pods: list[PodView]) -> tuple[Phase, Phase, Phase, Phase]:
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


def _ray_phases(objs: RunObjects, pods: list[PodView]) -> tuple[Phase, Phase, Phase]:
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


def _failed(objs: RunObjects) -> str | None:
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


def _succeeded(objs: RunObjects) -> bool:
    if objs.job is not None:
        cond = objs.job.condition("Complete")
        return cond is not None and cond.is_true
    if objs.ray_job is not None:
        return (objs.ray_job.job_status or "").upper() == "SUCCEEDED" and not _ray_submission_failed(objs.ray_job)
    return False


def _exit_reason(pod: PodView) -> str:
    """Why a failed pod's containers ended (Error, OOMKilled ...): the app containers' reason, not an
    init container's "Completed"."""
    ended = [c.reason for c in pod.container_statuses if c.state == "terminated" and c.reason]
    app = [c.reason for c in pod.container_statuses if not c.init and c.state == "terminated" and c.reason]
    return next(iter(app or [r for r in ended if r != "Completed"]), "")


def _oom_killed(pods: Sequence[PodView]) -> list[tuple[PodView, str]]:
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


# --------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------


def compute_run_status(objs: RunObjects) -> RunStatus:
    owner = objs.job or objs.ray_job
    holding = [p for p in objs.pods if p.node_name and not p.terminal]
    if owner is None and holding:
        nodes = sorted({p.node_name or "" for p in holding})
        release = Phase("Compute release", "active",
                        f"{len(holding)} pod(s) still hold GPUs on {', '.join(nodes)}; waiting for them to terminate")
        phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was deleted")
                       for name in PHASE_ORDER)
        return RunStatus(objs.namespace, objs.name, "unknown", "releasing", "releasing compute", phases,
                         actions=(RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),))
    if owner is None and objs.worker is not None:
        on_worker = None if objs.worker_pods is None else [p for p in objs.worker_pods if p.node_name and not p.terminal]
        if on_worker is None or on_worker:
            if on_worker is None:
                release = Phase("Compute release", "warning",
                                f"cancelled on the manager; its pods ran on MultiKueue worker {objs.worker}, which "
                                "cannot be read from here, so the release is not confirmed",
                                f"map {objs.worker} to a kubeconfig context in config.yaml (worker_contexts)")
            else:
                nodes = sorted({p.node_name or "" for p in on_worker})
                release = Phase("Compute release", "active",
                                f"{len(on_worker)} pod(s) still hold GPUs on worker {objs.worker} ({', '.join(nodes)}); "
                                "waiting for them to terminate")
            phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was deleted")
                           for name in PHASE_ORDER)
            display = "releasing compute" if on_worker else "releasing compute (unconfirmed)"
            return RunStatus(objs.namespace, objs.name, "unknown", "releasing", display, phases,
                             actions=(RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),),
                             cluster=objs.worker, multikueue=True)
    if owner is None and objs.cancelled:
        release = Phase("Compute release", "done", "every pod is gone; its GPUs are free")
        phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was cancelled")
                       for name in PHASE_ORDER)
        return RunStatus(objs.namespace, objs.name, "unknown", "cancelled", "cancelled", phases,
                         actions=(RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),))
    if owner is None:
        return RunStatus(
            objs.namespace,
            objs.name,
            "unknown",
            "not_found",
            "not found",
            tuple(Phase(name, "pending") for name in PHASE_ORDER),
            (RunDiagnostic("RUN_NOT_FOUND", "error", f"no Job or RayJob {objs.namespace}/{objs.name}", "check the name and namespace"),),
            (RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),),
        )
    kind: Literal["Job", "RayJob"] = "Job" if objs.job is not None else "RayJob"
    multikueue = _is_multikueue(objs)
    diagnostics: list[RunDiagnostic] = []
    submitted = Phase("Submitted", "done", f"{kind} {objs.namespace}/{objs.name}", started_at=owner.creation_timestamp)
    admission, admission_diags = _workload_phase(objs, multikueue)
    diagnostics += admission_diags
    placement, rejected, worker = _multikueue_phase(objs, multikueue)
    pods = _pods_of(objs)
    admitted = admission.status in ("done", "skipped")
    remote = multikueue and objs.manager_view
    if remote:
        # On the manager, the pods run on the worker: the later phases are not visible here.
        note = f"runs on worker {worker}" if worker else "runs on a worker cluster"
        later = [Phase(n, "skipped", note) for n in ("Pod scheduling", "DRA allocation", "Image pull", "Init containers", "Container start", "Ready")]
        scheduling, dra, image, init, start, ready = later
    else:
        scheduling = _scheduling_phase(pods, admitted)
        dra = _dra_phase(pods)
        image, init, start, ready = _container_phases(pods)
    ray_cluster, ray_job, release = _ray_phases(objs, pods)
    phases = (submitted, admission, placement, ray_cluster, scheduling, dra, image, init, start, ready, ray_job, release)

    failure = _failed(objs)
    succeeded = _succeeded(objs)
    warned = [p for p in phases if p.status == "warning"]
    startup_failed = rejected or failure is not None or any(
        p.name in ("Image pull", "Container start", "Init containers") for p in warned
    )
    remote_running = remote and (worker is not None or all(c.state == "Ready" for w in objs.workloads for c in w.admission_checks))
    startup_complete = ready.status == "done" or succeeded or bool(remote_running and not rejected)

    retrying = multikueue and placement.status == "warning" and not rejected
    if failure is not None or rejected:
        state: LifecycleState = "failed"
    elif succeeded:
        state = "succeeded"
    elif admission.status == "active" or admission.status == "pending" or (admission.status == "warning" and not admitted) or retrying:
        state = "queued"
    elif startup_complete:
        state = "running"
    else:
        state = "starting"

    ns, name = objs.namespace, objs.name
    resource = "job" if kind == "Job" else "rayjob"
    describe = ("kubectl", "describe", resource, name, "-n", ns)
    logs = _logs_command(objs)
    if failure is not None:
        diagnostics.append(RunDiagnostic("RUN_FAILED", "error", failure, "read the logs of the failed pod (previous container)",
                                         (logs + ("--previous",), describe)))
    if rejected:
        diagnostics.append(RunDiagnostic("ADMISSION_REJECTED", "error", placement.detail, "check the MultiKueue pane for worker health",
                                         (("kubectl", "get", "multikueueclusters"),)))
    if retrying:
        diagnostics.append(RunDiagnostic("MULTIKUEUE_RETRY", "warning", placement.detail,
                                         "the worker was lost or evicted the run; check the MultiKueue pane for worker health",
                                         (("kubectl", "get", "multikueueclusters"),)))
    for phase in warned:
        if phase.name not in ("Kueue admission", "MultiKueue placement"):
            code = "STARTUP_" + phase.name.upper().replace(" ", "_")
            diagnostics.append(RunDiagnostic(code, "warning", f"{phase.name}: {phase.detail}", phase.hint, (describe,)))
    for pod, container in _oom_killed(pods):
        diagnostics.append(RunDiagnostic(
            "OOM_KILLED", "error", f"{pod.name}/{container} was OOMKilled (out of memory)",
            "raise resources.memory or lower the batch size; resume needs --force after an OOM",
            (("kubectl", "logs", pod.name, "-c", container, "-n", ns, "--previous"),)))
    hits = gpu_hits(pods, objs.gpu_faults)
    for hit in hits:
        fault = hit.fault
        pod = next(p for p in pods if p.name == hit.pod)
        why = _exit_reason(pod)
        what = f"pod {pod.name} failed{f' ({why})' if why else ''}" if hit.failed else f"pod {pod.name} runs"
        # Named even when the run already failed: it says why, and resume should avoid the node.
        diagnostics.append(RunDiagnostic(
            "GPU_FAULT", "error" if fault.verdict == "unhealthy" else "warning",
            f"{what} on node {fault.node}, whose GPU is {fault.verdict}: {fault.describe()}",
            "resume from the last checkpoint on a healthy node (R); cordon or drain the node in Nodes (6)",
            (("kubectl", "describe", "node", fault.node),)))
    hit_pods = {h.pod for h in hits}
    for pod in pods:
        if pod.phase != "Failed" or failure is not None or pod.name in hit_pods:
            continue
        why = _exit_reason(pod)
        where = f" on node {pod.node_name}" if pod.node_name else ""
        diagnostics.append(RunDiagnostic(
            "POD_FAILED", "warning", f"pod {pod.name} failed{f' ({why})' if why else ''}{where}",
            "read its log (p: previous container); the Job starts a new pod if retries remain"))
    if startup_failed and failure is None and not rejected:
        diagnostics.append(RunDiagnostic("STARTUP_FAILED", "error", "startup is failing; see the phases above", "", (describe,)))

    actions = [RunAction("logs", "follow the run's logs (all pods merged)", "l", logs + ("-f",))]
    if state in ("queued", "starting", "running"):
        actions.append(RunAction("watch", "watch the queue position and phases", ":queue",
                                 ("tau-tui", "status", name, "-n", ns, "--watch")))
        actions.append(RunAction("cancel", "cancel the run (confirmed, audited)", "ctrl+d",
                                 ("kubectl", "delete", resource, name, "-n", ns)))
    if state == "failed":
        actions.append(RunAction("diagnostics", "describe the failing objects and events", "d", describe))
        actions.append(RunAction("retry", "retry as resilience.* allows (retry_on, max_retries, backoff)", "r",
                                 ("tau-tui", "runs", "retry", name, "-n", ns)))
    if state == "succeeded":
        actions.append(RunAction("results", "show where the run wrote its results", "y",
                                 ("kubectl", "get", resource, name, "-n", ns, "-o", "yaml")))
    if state in ("failed", "succeeded"):
        actions.append(RunAction("resume", "resubmit from the last checkpoint (TAU_RESUME_FROM), away from faulty GPUs", "R",
                                 ("tau-tui", "runs", "resume", name, "-n", ns)))
    display = {"not_found": "not found", "queued": "queued", "starting": "starting", "running": "running",
               "succeeded": "succeeded", "failed": "failed"}[state]
    failed_on_bad_gpu = any(h.failed for h in hits)
    if state in ("starting", "running") and (failed_on_bad_gpu or any(d.code == "POD_FAILED" for d in diagnostics)):
        display += ", pod failed"  # never a plain "starting" over a failed pod
    if hits:
        display += ", GPU fault"  # the run is marked, whatever its state
    queue = objs.workloads[0].queue_name if objs.workloads else owner.labels.get("kueue.x-k8s.io/queue-name")
    return RunStatus(
        objs.namespace,
        objs.name,
        kind,
        state,
        display,
        phases,
        tuple(diagnostics),
        tuple(actions),
        startup_complete,
        startup_failed,
        queue,
        worker,
        multikueue,
        gpu_hits=tuple(hits),
    )


def _logs_command(objs: RunObjects) -> tuple[str, ...]:
    if objs.ray_job is not None and objs.ray_job.ray_cluster_name:
        selector = f"ray.io/cluster={objs.ray_job.ray_cluster_name}"
    else:
        selector = f"job-name={objs.name}"
    return ("kubectl", "logs", "-n", objs.namespace, "-l", selector, "--all-containers", "--prefix")


STATE_SYMBOLS: dict[str, str] = {
    "not_found": "?",
    "queued": "◷",
    "starting": "◐",
    "running": "▶",
    "succeeded": "✓",
    "failed": "✗",
    "releasing": "◑",
    "cancelled": "■",
}


def objects_for_run(
    namespace: str,
    name: str,
    *,
    job: JobView | None,
    ray_job: RayJobView | None,
    workloads: Sequence[WorkloadView],
    pods: Sequence[PodView],
    events: Sequence[EventView],
    gpu_faults: Mapping[str, NodeGpuFault] | None = None,
) -> RunObjects:
    """Pick the objects that belong to one run from namespace-wide lists."""
    owner = job or ray_job
    uid = owner.uid if owner else None
    wls = [w for w in workloads if uid and (w.labels.get("kueue.x-k8s.io/job-uid") == uid or (w.controller_owner or {}).get("uid") == uid)]
    if job is not None:
        run_pods = [p for p in pods if p.labels.get("job-name") == name]
    elif ray_job is not None and ray_job.ray_cluster_name:
        run_pods = [p for p in pods if p.labels.get("ray.io/cluster") == ray_job.ray_cluster_name]
    else:
        run_pods = []
    names = {name} | {w.name for w in wls} | {p.name for p in run_pods}
    run_events = [e for e in events if e.involved_name in names]
    return run_objects(namespace, name, job, ray_job, wls, run_pods, run_events, gpu_faults)


def run_objects(namespace: str, name: str, job: JobView | None, ray_job: RayJobView | None,
                workloads: Sequence[WorkloadView], pods: Sequence[PodView], events: Sequence[EventView],
                gpu_faults: Mapping[str, NodeGpuFault] | None = None) -> RunObjects:
    """A run's objects from lists that hold only its own (:func:`objects_for_run` picks them)."""
    owner = job or ray_job
    manager_view = any(w.admission_checks for w in workloads) and (owner is not None and owner.managed_by == MULTIKUEUE_CONTROLLER_NAME)
    return RunObjects(namespace, name, job, ray_job, tuple(workloads), tuple(pods), tuple(events), manager_view,
                      gpu_faults=dict(gpu_faults or {}))
