"""Run status phase engine (taugrid.md §8.1-§8.3): from the cluster objects of one
run to its phases in order, its lifecycle state, diagnostics and next actions.

Pure functions over the typed views of :mod:`tau_tui.core.cluster.view_types`; no I/O and
no Textual.  The runs pane renders what :func:`compute_run_status` returns and
never decides a phase itself.  Fail closed: missing data leaves a phase
``pending`` (or the run ``not_found``), never ``done``.
"""

from __future__ import annotations

from typing import Literal

from tau_tui.core.cluster.view_types import PodView
from tau_tui.core.operations.gpufaults import gpu_hits
from tau_tui.core.operations.recovery_manifests import RESUMED_AS_ANNOTATION, RETRIED_AS_ANNOTATION
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.run_phases import (
    container_phases,
    dra_phase,
    exit_reason,
    is_multikueue,
    multikueue_phase,
    oom_killed,
    pods_of,
    ray_phases,
    run_failure,
    run_succeeded,
    scheduling_phase,
    workload_phase,
)
from tau_tui.core.operations.run_status_types import (
    PHASE_ORDER,
    LifecycleState,
    Phase,
    RunAction,
    RunDiagnostic,
    RunStatus,
)


def _left_on_worker(worker: str, pods: list[PodView], owners: list[str]) -> str:
    """What a cancelled run still has on its MultiKueue worker, for the Compute release phase."""
    scheduled = [p for p in pods if p.node_name]
    parts = []
    if scheduled:
        nodes = sorted({p.node_name or "" for p in scheduled})
        parts.append(f"{len(scheduled)} pod(s) still hold GPUs on worker {worker} ({', '.join(nodes)})")
    if len(scheduled) < len(pods):
        parts.append(f"{len(pods) - len(scheduled)} pod(s) on worker {worker} not scheduled yet (they may still take GPUs)")
    if owners:
        parts.append(f"{', '.join(owners)} still on worker {worker} (it may start pods again)")
    return "; ".join(parts) + "; waiting for them to go"


def compute_run_status(objs: RunObjects) -> RunStatus:
    owner = objs.job or objs.ray_job
    if owner is not None and (owner.raw.get("metadata") or {}).get("deletionTimestamp"):
        # deleted, held by a finalizer (KubeRay stops the Ray job first): gone as far as the run goes
        owner = None
    holding = [p for p in objs.pods if p.node_name and not p.terminal]
    if owner is None and holding:
        nodes = sorted({p.node_name or "" for p in holding})
        release = Phase("Compute release", "active",
                        f"{len(holding)} pod(s) still hold GPUs on {', '.join(nodes)}; waiting for them to terminate")
        phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was deleted")
                       for name in PHASE_ORDER)
        return RunStatus(objs.namespace, objs.name, "unknown", "releasing", "releasing compute", phases,
                         actions=_list_action(objs) + _resume_cancelled(objs))
    if owner is None and objs.worker is not None:
        # Every pod not finished holds GPUs or may still take them (a Pending one is scheduled any moment), and an
        # unfinished Job or RayJob left on the worker may start new ones: released only when neither is left.
        on_worker = None if objs.worker_pods is None else [p for p in objs.worker_pods if not p.terminal]
        owners = list(objs.worker_owners)
        if on_worker is None or on_worker or owners:
            if on_worker is None:
                release = Phase("Compute release", "warning",
                                f"cancelled on the manager; its pods ran on MultiKueue worker {objs.worker}, which "
                                "cannot be read from here, so the release is not confirmed",
                                f"map {objs.worker} to a kubeconfig context in config.yaml (worker_contexts)")
            else:
                release = Phase("Compute release", "active", _left_on_worker(objs.worker, on_worker, owners))
            phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was deleted")
                           for name in PHASE_ORDER)
            display = "releasing compute (unconfirmed)" if on_worker is None else "releasing compute"
            return RunStatus(objs.namespace, objs.name, "unknown", "releasing", display, phases,
                             actions=(RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),),
                             cluster=objs.worker, multikueue=True)
    if owner is None and objs.cancelled:
        release = Phase("Compute release", "done", "every pod is gone; its GPUs are free")
        phases = tuple(release if name == "Compute release" else Phase(name, "skipped", "the run was cancelled")
                       for name in PHASE_ORDER)
        return RunStatus(objs.namespace, objs.name, "unknown", "cancelled", "cancelled", phases,
                         actions=_list_action(objs) + _resume_cancelled(objs))
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
    multikueue = is_multikueue(objs)
    #: The run's successor, when it was retried or resumed already (then neither is offered again).
    linked = owner.annotations.get(RESUMED_AS_ANNOTATION) or owner.annotations.get(RETRIED_AS_ANNOTATION) or ""
    diagnostics: list[RunDiagnostic] = []
    submitted = Phase("Submitted", "done", f"{kind} {objs.namespace}/{objs.name}", started_at=owner.creation_timestamp)
    admission, admission_diags = workload_phase(objs, multikueue)
    diagnostics += admission_diags
    placement, rejected, worker = multikueue_phase(objs, multikueue)
    pods = pods_of(objs)
    admitted = admission.status in ("done", "skipped")
    remote = multikueue and objs.manager_view
    if remote:
        # On the manager, the pods run on the worker: the later phases are not visible here.
        note = f"runs on worker {worker}" if worker else "runs on a worker cluster"
        later = [Phase(n, "skipped", note) for n in ("Pod scheduling", "DRA allocation", "Image pull", "Init containers", "Container start", "Ready")]
        scheduling, dra, image, init, start, ready = later
    else:
        scheduling = scheduling_phase(pods, admitted)
        dra = dra_phase(pods)
        image, init, start, ready = container_phases(pods)
    ray_cluster, ray_job, release = ray_phases(objs, pods)
    phases = (submitted, admission, placement, ray_cluster, scheduling, dra, image, init, start, ready, ray_job, release)

    failure = run_failure(objs)
    succeeded = run_succeeded(objs)
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
    for pod, container in oom_killed(pods):
        diagnostics.append(RunDiagnostic(
            "OOM_KILLED", "error", f"{pod.name}/{container} was OOMKilled (out of memory)",
            "raise resources.memory or lower the batch size; resume needs --force after an OOM",
            (("kubectl", "logs", pod.name, "-c", container, "-n", ns, "--previous"),)))
    hits = gpu_hits(pods, objs.gpu_faults)
    for hit in hits:
        fault = hit.fault
        pod = next(p for p in pods if p.name == hit.pod)
        why = exit_reason(pod)
        what = f"pod {pod.name} failed{f' ({why})' if why else ''}" if hit.failed else f"pod {pod.name} runs"
        # Named even when the run already failed: it says why, and resume should avoid the node.
        diagnostics.append(RunDiagnostic(
            "GPU_FAULT", "error" if fault.verdict == "unhealthy" else "warning",
            f"{what} on node {fault.node}, whose GPU is {fault.verdict}: {fault.describe()}",
            f"{_resume_hint(state, linked)}; cordon or drain the node in Nodes (6)",
            (("kubectl", "describe", "node", fault.node),)))
    hit_pods = {h.pod for h in hits}
    for pod in pods:
        if pod.phase != "Failed" or failure is not None or pod.name in hit_pods:
            continue
        why = exit_reason(pod)
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
        pod_lost = bool(hits) or any(d.code == "POD_FAILED" for d in diagnostics)
        actions.append(RunAction("cancel", "cancel the run (confirmed, audited)" + (
            "; resume it afterwards from its last checkpoint" if pod_lost and not linked else ""), "ctrl+d",
                                 ("kubectl", "delete", resource, name, "-n", ns)))
    if state == "failed":
        actions.append(RunAction("diagnostics", "describe the failing objects and events", "d", describe))
        if not linked:
            actions.append(RunAction("retry", "retry as resilience.* allows (retry_on, max_retries, backoff)", "r",
                                     ("tau-tui", "runs", "retry", name, "-n", ns)))
    if state == "succeeded":
        actions.append(RunAction("results", "show where the run wrote its results", "y",
                                 ("kubectl", "get", resource, name, "-n", ns, "-o", "yaml")))
    if state in ("failed", "succeeded") and not linked:
        actions.append(RunAction("resume", "resubmit from the last checkpoint (TAU_RESUME_FROM), away from faulty GPUs", "R",
                                 ("tau-tui", "runs", "resume", name, "-n", ns)))
    if linked:
        diagnostics.append(RunDiagnostic("RECOVERED", "info", f"already retried or resumed as {linked}",
                                         f"follow {linked} (select it in this list)"))
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


def _list_action(objs: RunObjects) -> tuple[RunAction, ...]:
    return (RunAction("list", "list runs in this namespace", ":runs", ("tau-tui", "runs", "-n", objs.namespace)),)


def _resume_cancelled(objs: RunObjects) -> tuple[RunAction, ...]:
    """A run cancelled from the app (which keeps its object): resume it from its last checkpoint."""
    if not objs.cancelled:
        return ()
    return (RunAction("resume", "resubmit the cancelled run from its last checkpoint, away from faulty GPUs", "R"),)


def _resume_hint(state: LifecycleState, linked: str) -> str:
    """What to do about a run a GPU fault hit, with the keys that work in its state."""
    if linked:
        return f"it was retried or resumed as {linked}: follow that run"
    if state in ("queued", "starting", "running"):
        return "cancel it (ctrl+d), then resume it from its last checkpoint on a healthy node (R)"
    return "resume from the last checkpoint on a healthy node (R)"


def _logs_command(objs: RunObjects) -> tuple[str, ...]:
    if objs.ray_job is not None and objs.ray_job.ray_cluster_name:
        selector = f"ray.io/cluster={objs.ray_job.ray_cluster_name}"
    else:
        selector = f"job-name={objs.name}"
    return ("kubectl", "logs", "-n", objs.namespace, "-l", selector, "--all-containers", "--prefix")
