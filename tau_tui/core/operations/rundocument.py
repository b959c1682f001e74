"""The run documents the headless commands print: ``tau-tui status`` (the shape of
``tau run status -o json``, taugrid.md §8.3) and ``tau-tui runs`` (``tau run list -o json``,
§8.4), and the live reads behind them.

The status document is built from the same :class:`RunStatus` the Runs pane draws, so the
pane and the command cannot disagree.  Reads go to the API server directly
(:meth:`BaseBackend.fetch`): a one-shot command starts no watch.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.interfaces import is_tau_run
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME, QUEUE_NAME_LABEL, SUBMISSION_ID_LABEL
from tau_tui.core.cluster.view_types import (
    EventView,
    GpuHealthView,
    JobView,
    NodeView,
    ObjectView,
    PodView,
    RayJobView,
    WorkloadView,
)
from tau_tui.core.operations.gpufaults import NodeGpuFault, node_gpu_faults
from tau_tui.core.operations.recovery import RetryDecision
from tau_tui.core.operations.run_index import RunIndex
from tau_tui.core.operations.run_objects import RunObjects, objects_for_run
from tau_tui.core.operations.run_position import QueuePlace
from tau_tui.core.operations.run_status_types import STATE_SYMBOLS, RunStatus
from tau_tui.core.operations.runstatus import compute_run_status

API_VERSION = "tau.azure.com/v1alpha1"
RUN_ID_LABEL = "tau.azure.com/run-id"
DURABLE_ID_LABEL = "tau.azure.com/durable-id"
EXPERIMENT_LABEL = "tau.azure.com/experiment"
RESULT_PATH_ANNOTATION = "tau.azure.com/result-path"


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _only(views: Sequence[ObjectView], view_type: type[Any]) -> list[Any]:
    return [v for v in views if isinstance(v, view_type)]


def read_run(backend: BaseBackend, namespace: str, name: str,
             gpu_faults: Mapping[str, NodeGpuFault] | None = None, *, ray_cluster: str | None = None) -> RunObjects:
    """The objects of one run, read live: the Job or RayJob, its Workloads, pods and events.
    ``ray_cluster``: the Ray cluster of a RayJob known to be gone (cancelled), whose pods carry
    ``ray.io/cluster`` rather than ``job-name``."""
    # KubeRay names a RayJob's submitter Job as the RayJob: that Job is not the run (taugrid.md §5.3).
    jobs: list[JobView] = [j for j in _only(backend.fetch(ResourceKind.JOB, namespace), JobView)
                           if j.name == name and not j.owned_by_rayjob]
    ray_jobs: list[RayJobView] = [r for r in _only(backend.fetch(ResourceKind.RAY_JOB, namespace), RayJobView) if r.name == name]
    job = jobs[0] if jobs else None
    ray_job = ray_jobs[0] if ray_jobs and job is None else None
    if job is None and ray_job is None:
        # Cancelled (or never there): a Job's pods may still be terminating and holding GPUs.
        leftover_selector = f"ray.io/cluster={ray_cluster}" if ray_cluster else f"job-name={name}"
        leftover: list[PodView] = _only(backend.fetch(ResourceKind.POD, namespace, leftover_selector), PodView)
        return RunObjects(namespace, name, pods=tuple(leftover), gpu_faults=dict(gpu_faults or {}))
    workloads: list[WorkloadView] = _only(backend.fetch(ResourceKind.WORKLOAD, namespace), WorkloadView)
    if job is not None:
        selector: str | None = f"job-name={name}"
    elif ray_job is not None and ray_job.ray_cluster_name:
        selector = f"ray.io/cluster={ray_job.ray_cluster_name}"
    else:
        selector = None
    pods: list[PodView] = _only(backend.fetch(ResourceKind.POD, namespace, selector), PodView) if selector else []
    events: list[EventView] = _only(backend.fetch(ResourceKind.EVENT, namespace), EventView)
    return objects_for_run(namespace, name, job=job, ray_job=ray_job, workloads=workloads, pods=pods, events=events,
                           gpu_faults=gpu_faults)


def read_worker_pods(worker_backend: BaseBackend | None, namespace: str, name: str) -> list[PodView] | None:
    """The pods of Job ``name`` on a MultiKueue worker (where a run placed there holds its GPUs);
    None when the worker cannot be read (no backend for it, or the read failed): unknown, never none."""
    from tau_tui.core.cluster.errors import ClusterError

    if worker_backend is None:
        return None
    try:
        return _only(worker_backend.fetch(ResourceKind.POD, namespace, f"job-name={name}"), PodView)
    except ClusterError:
        return None


def read_gpu_faults(backend: BaseBackend, now: datetime) -> dict[str, NodeGpuFault]:
    """Nodes whose GPUs are unhealthy or degraded now, from the agent's report and the conditions of
    other writers (TauGrid NPD, GKE, AKS); nodes the caller may not read are left out."""
    from tau_tui.core.cluster.convert import node_view
    from tau_tui.core.cluster.errors import ClusterError

    try:
        nodes: list[NodeView] = _only(backend.fetch(ResourceKind.NODE), NodeView)
    except ClusterError:
        return {}  # a researcher's account often may not list nodes: no GPU_FAULT, never a failure
    try:
        reports = {h.node_name: h for h in _only(backend.fetch(ResourceKind.GPU_HEALTH), GpuHealthView)}
    except ClusterError:
        reports = {}
    # A live read knows no GPU allocation (no pod scan): allocated stays unknown, the verdict does not need it.
    with_reports = [node_view(n.raw, None, reports.get(n.name)) for n in nodes]
    return node_gpu_faults(with_reports, now)


def read_run_owners(backend: BaseBackend, namespace: str | None, *, queue: str | None = None,
                    include_external: bool = False) -> list[JobView | RayJobView]:
    """Every Tau-managed Job and RayJob, without KubeRay's submitter Jobs (``tau run list``);
    ``queue``: only those of that LocalQueue; ``include_external``: Jobs and RayJobs that tau did not
    submit too (still never a submitter Job)."""
    jobs: list[JobView] = _only(backend.fetch(ResourceKind.JOB, namespace), JobView)
    ray_jobs: list[RayJobView] = _only(backend.fetch(ResourceKind.RAY_JOB, namespace), RayJobView)

    def listed(owner: JobView | RayJobView) -> bool:
        if queue is not None and owner.labels.get(QUEUE_NAME_LABEL) != queue:
            return False
        return is_tau_run(owner) or (include_external and not (isinstance(owner, JobView) and owner.owned_by_rayjob))

    owners: list[JobView | RayJobView] = [j for j in jobs if listed(j)]
    owners += [r for r in ray_jobs if listed(r)]
    return sorted(owners, key=lambda o: (o.namespace or "", o.name))


def _argv(argv: Sequence[str]) -> dict[str, Any]:
    return {"argv": list(argv), "env": {}, "shell": shlex.join(argv)}


def _condition(c: Any) -> dict[str, Any]:
    return {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message,
            "lastTransitionTime": _time(c.last_transition_time)}


def status_document(status: RunStatus, objs: RunObjects, retry: RetryDecision | None = None,
                    place: QueuePlace | None = None) -> dict[str, Any]:
    """The §8.3 ``RunStatus`` document of one run; ``retry`` (a failed run's retry decision) adds ``retry``,
    ``place`` (a pending run's place in its queue) ``status.queuePosition``."""
    owner = objs.job or objs.ray_job
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "RunStatus",
        "metadata": {
            "name": objs.name,
            "namespace": objs.namespace,
            "labels": dict(owner.labels) if owner else {},
            "annotations": dict(owner.annotations) if owner else {},
        },
        "status": {
            "found": owner is not None,
            "workloadKind": status.kind if owner is not None else None,
            "state": status.state,
            "displayState": status.display_state,
            "startupComplete": status.startup_complete,
            "startupFailed": status.startup_failed,
            "queue": status.queue,
            "cluster": status.cluster,
            "multiKueue": status.multikueue,
            "queuePosition": place.document() if place is not None else None,
        },
        "phases": [
            {"name": p.name, "status": p.status, "detail": p.detail, "hint": p.hint, "startedAt": _time(p.started_at)}
            for p in status.phases
        ],
    }
    job = objs.job
    doc["job"] = {"found": job is not None} if job is None else {
        "found": True, "uid": job.uid, "createdAt": _time(job.creation_timestamp), "startedAt": _time(job.start_time),
        "finishedAt": _time(job.completion_time), "suspended": job.suspended, "active": job.active,
        "succeeded": job.succeeded, "failed": job.failed, "parallelism": job.parallelism, "managedBy": job.managed_by,
        "conditions": [_condition(c) for c in job.conditions],
    }
    if objs.ray_job is not None:
        rj = objs.ray_job
        raw_status = rj.raw.get("status") or {}
        doc["rayJob"] = {
            "found": True, "uid": rj.uid, "createdAt": _time(rj.creation_timestamp), "jobId": rj.job_id,
            "rayClusterName": rj.ray_cluster_name, "jobStatus": rj.job_status, "jobDeploymentStatus": rj.job_deployment_status,
            "failed": raw_status.get("failed"), "message": raw_status.get("message"), "suspended": rj.suspended,
            "managedBy": rj.managed_by,
        }
    doc["workloads"] = [
        {"name": w.name, "queue": w.queue_name, "clusterQueue": w.cluster_queue, "status": w.status_word, "active": w.active,
         "clusterName": w.cluster_name, "nominatedClusterNames": list(w.nominated_cluster_names),
         "admissionChecks": [{"name": c.name, "state": c.state, "message": c.message,
                              "lastTransitionTime": _time(c.last_transition_time)} for c in w.admission_checks],
         "conditions": [_condition(c) for c in w.conditions]}
        for w in objs.workloads
    ]
    doc["pods"] = [
        {"name": p.name, "phase": p.phase, "node": p.node_name, "startedAt": _time(p.start_time),
         "deleting": p.deletion_timestamp is not None,
         "containers": [{"name": c.name, "init": c.init, "state": c.state, "reason": c.reason, "ready": c.ready,
                         "restarts": c.restart_count} for c in p.container_statuses]}
        for p in objs.pods
    ]
    doc["resourceClaims"] = [
        {"pod": p.name, "claims": list((p.raw.get("status") or {}).get("resourceClaimStatuses") or [])}
        for p in objs.pods if (p.raw.get("spec") or {}).get("resourceClaims")
    ]
    doc["events"] = [
        {"type": e.type, "reason": e.reason, "message": e.message, "object": f"{e.involved_kind}/{e.involved_name}",
         "count": e.count, "lastTimestamp": _time(e.last_timestamp)}
        for e in sorted(objs.events, key=lambda e: (e.last_timestamp is None, e.last_timestamp or datetime.min))
    ]
    doc["gpuFaults"] = [
        {"pod": h.pod, "node": h.fault.node, "verdict": h.fault.verdict, "reason": h.fault.reason,
         "message": h.fault.message, "gpus": list(h.fault.gpus), "since": _time(h.fault.since),
         "sources": list(h.fault.sources), "podFailed": h.failed}
        for h in status.gpu_hits
    ]
    if retry is not None:
        doc["retry"] = {"verdict": retry.verdict, "message": retry.message, "attempt": retry.attempt,
                        "maxRetries": retry.max_retries, "reason": retry.reason or None,
                        "notBefore": _time(retry.not_before), "newName": retry.new_name or None}
    doc["diagnostics"] = [
        {"code": d.code, "severity": d.severity, "message": d.message, "suggestion": d.suggestion,
         "commands": [_argv(c) for c in d.commands]}
        for d in status.diagnostics
    ]
    doc["actions"] = [
        {"name": a.name, "description": a.description, "key": a.key, "command": _argv(a.command) if a.command else None}
        for a in status.actions
    ]
    return doc


def age_bucket(created: datetime | None, now: datetime) -> str:
    """``30s``, ``45m``, ``2h``, ``3d`` as ``tau run list`` prints them."""
    if created is None:
        return "?"
    seconds = max(0, int((now - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def list_document(namespace: str | None, owners: Sequence[JobView | RayJobView], now: datetime,
                  statuses: Mapping[str, RunStatus] | None = None) -> dict[str, Any]:
    """The §8.4 document: one row per run; ``state`` added from the phase engine when given."""
    runs = []
    for owner in owners:
        kind = "Job" if isinstance(owner, JobView) else "RayJob"
        key = f"{owner.namespace}/{owner.name}"
        status = (statuses or {}).get(key)
        run: dict[str, Any] = {
            "name": owner.name, "kind": kind, "status": owner.status_word, "created": _time(owner.creation_timestamp),
            "age": age_bucket(owner.creation_timestamp, now), "runId": owner.labels.get(RUN_ID_LABEL) or owner.labels.get(SUBMISSION_ID_LABEL),
            "queue": owner.labels.get(QUEUE_NAME_LABEL), "namespace": owner.namespace,
            "cluster": status.cluster if status else None, "resourceUid": owner.uid,
            "durableId": owner.labels.get(DURABLE_ID_LABEL), "source": "kubernetes",
            "managedBy": "tau" if owner.tau_managed else "external",
            "experimentTracking": owner.labels.get(EXPERIMENT_LABEL) is not None,
            "experimentPath": owner.annotations.get(RESULT_PATH_ANNOTATION),
            "executionTarget": "multiKueue" if owner.managed_by == MULTIKUEUE_CONTROLLER_NAME else "local",
        }
        if status is not None:
            run["state"] = status.state
            if status.gpu_hits:
                run["gpuFaultNodes"] = sorted({h.fault.node for h in status.gpu_hits})
        runs.append(run)
    return {"namespace": namespace or "", "total": len(runs), "historyState": "live", "runs": runs}


def list_statuses(backend: BaseBackend, namespace: str | None, owners: Sequence[JobView | RayJobView],
                  gpu_faults: Mapping[str, NodeGpuFault] | None = None) -> dict[str, RunStatus]:
    """The phase engine's state of every run, from one list of Workloads and pods per namespace
    (with ``gpu_faults``, the runs a GPU fault hit are marked)."""
    workloads: list[WorkloadView] = _only(backend.fetch(ResourceKind.WORKLOAD, namespace), WorkloadView)
    pods: list[PodView] = _only(backend.fetch(ResourceKind.POD, namespace), PodView)
    index = RunIndex(workloads, pods, ())
    out: dict[str, RunStatus] = {}
    for owner in sorted(owners, key=lambda o: o.namespace or ""):  # stable: the owners' order within a namespace
        out[f"{owner.namespace or ''}/{owner.name}"] = compute_run_status(index.objects(owner, gpu_faults))
    return out


SEVERITY_MARKS = {"error": "✗", "warning": "⚠", "info": "i"}


def status_lines(status: RunStatus, retry: RetryDecision | None = None, place: QueuePlace | None = None) -> list[str]:
    """The human view of one run: its place in line, Progress, Attention, Next (as the Runs pane, in plain text)."""
    head = f"{status.kind} {status.namespace}/{status.name}  {STATE_SYMBOLS[status.state]} {status.display_state}"
    if status.queue:
        head += f"  queue {status.queue}"
    if status.cluster:
        head += f"  worker {status.cluster}"
    lines = [head]
    if place is not None:
        lines += [f"  queue: {place.line}", f"  why pending: {place.why_pending}"]
    lines += [hit.line for hit in status.gpu_hits]
    if retry is not None:
        lines.append(retry.line)
    lines += ["", "Progress"]
    width = max(len(p.name) for p in status.phases)
    for p in status.phases:
        line = f"  {p.name:<{width}}  {p.symbol} {p.status:<8}  {p.detail}".rstrip()
        if p.hint:
            line += f"  → {p.hint}"
        lines.append(line)
    if status.diagnostics:
        lines += ["", "Attention"]
        for d in status.diagnostics:
            lines.append(f"  {SEVERITY_MARKS[d.severity]} {d.code}: {d.message}" + (f"  → {d.suggestion}" if d.suggestion else ""))
            lines += [f"      $ {shlex.join(c)}" for c in d.commands]
    if status.actions:
        lines += ["", "Next"]
        for a in status.actions:
            lines.append(f"  {a.name}: {a.description}" + (f"  $ {shlex.join(a.command)}" if a.command else ""))
    return lines


def event_lines(objs: RunObjects, now: datetime) -> list[str]:
    """``status --events``: the Events about the run, its Workloads, pods and RayCluster, oldest first
    (as ``kubectl describe`` lists them), with their age, type, reason, object and count."""
    events = sorted(objs.events, key=lambda e: (e.last_timestamp or e.creation_timestamp or datetime.min.replace(tzinfo=UTC),
                                                e.name))
    if not events:
        return ["", "Events", "  none (the API server keeps events for an hour by default)"]
    rows = []
    for e in events:
        seen = e.last_timestamp or e.creation_timestamp
        rows.append((age_bucket(seen, now), e.type, e.reason, f"{e.involved_kind}/{e.involved_name}",
                     " ".join(e.message.split()) + (f" (x{e.count})" if e.count > 1 else "")))
    header = ("AGE", "TYPE", "REASON", "OBJECT", "MESSAGE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    return ["", "Events", *("  " + "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
                            for r in [header, *rows])]


def list_lines(doc: Mapping[str, Any]) -> list[str]:
    """``tau run list`` as a table: one line per run."""
    columns: tuple[str, ...] = ("namespace", "name", "kind", "state", "status", "queue", "executionTarget", "age")
    header: tuple[str, ...] = ("NAMESPACE", "NAME", "KIND", "STATE", "STATUS", "QUEUE", "WHERE", "AGE")
    if any(run.get("managedBy") == "external" for run in doc.get("runs") or ()):
        columns, header = columns + ("managedBy",), header + ("SOURCE",)
    def cell(run: Mapping[str, Any], column: str) -> str:
        value = run.get(column)
        if column == "state" and run.get("gpuFaultNodes"):
            return f"{value or '—'}, GPU fault ({', '.join(run['gpuFaultNodes'])})"
        return str(value) if value is not None else "—"
    rows = [tuple(cell(run, c) for c in columns) for run in doc.get("runs") or ()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(columns))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
