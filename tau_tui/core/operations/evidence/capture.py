"""Capture the evidence of one finished run into the store.

A record is the files a bundle holds (``record.json``, ``tau.yaml``, ``manifests.yaml``,
``workload-history.json``, ``events.json``, ``nodes.json``, ``logs/run.log``), built from the
run's objects (read live by the CLI, from the watch cache by the app's recorder), the nodes its
pods ran on with their GPU health, its log (read once, not followed) and, when tau-tui submitted
it, the tau.yaml and the manifests it rendered.  Everything is redacted before it is stored.

Idempotent: a run and submission id is captured once; capturing again returns the stored record
without reading anything more.  What could not be read is said in ``record.json`` under
``unavailable`` (fail closed: never an empty section that looks complete).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from tau_gpuhealth.names import CONDITION_DEGRADED, CONDITION_UNHEALTHY
from tau_gpuhealth.nodeview import view_from_node
from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.names import SUBMISSION_ID_LABEL
from tau_tui.core.cluster.view_types import GpuHealthView, NodeView, PodView
from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity, cluster_identity
from tau_tui.core.operations.evidence.store import EvidenceStore, RecordSummary, Submission
from tau_tui.core.operations.redaction import redact_object, redact_text
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.run_status_types import RunStatus
from tau_tui.core.operations.rundocument import read_run
from tau_tui.core.operations.runstatus import compute_run_status

RECORD_FORMAT = "tau.azure.com/evidence-record/v1"
CONFIG_HASH_ANNOTATION = "tau.azure.com/config-hash"
IMAGE_DIGEST_ANNOTATION = "tau.azure.com/image-digest"
CHECKPOINT_ANNOTATIONS = ("tau.azure.com/checkpoint-uri", "tau.azure.com/checkpoint-artifact")
RESUME_ENV = "TAU_RESUME_FROM"
#: A run log bigger than this keeps its last lines (the end says why a run failed).
LOG_LIMIT_BYTES = 8 * 1024 * 1024
#: Seconds to wait for a finished run's log to be read to its end.
LOG_READ_TIMEOUT_S = 60.0
FINISHED_OUTCOMES = ("succeeded", "failed", "cancelled")


def outcome_of(status: RunStatus) -> str | None:
    """``succeeded`` or ``failed`` for a finished run, None while it is not finished."""
    return status.state if status.state in ("succeeded", "failed") else None


def submission_id_of(objs: RunObjects) -> str:
    """The run's ``tau.azure.com/submission-id``; a run submitted without one is keyed by its uid."""
    owner = objs.job or objs.ray_job
    for labels in ([owner.labels] if owner else []) + [p.labels for p in objs.pods]:
        if labels.get(SUBMISSION_ID_LABEL):
            return labels[SUBMISSION_ID_LABEL]
    return f"uid:{owner.uid}" if owner and owner.uid else "unknown"


@dataclass(frozen=True)
class RunLog:
    text: str = ""
    #: Why the log is missing or cut, or "".
    note: str = ""
    lines: int = 0


@dataclass(frozen=True)
class CaptureInputs:
    objs: RunObjects
    outcome: str
    captured_at: datetime
    source: str = "app"
    nodes: Sequence[NodeView] | None = None  # None: the nodes could not be read
    gpu_reports: Mapping[str, GpuHealthView] = field(default_factory=dict)
    log: RunLog = field(default_factory=RunLog)
    submission: Submission | None = None
    cluster: ClusterIdentity = field(default_factory=lambda: ClusterIdentity(None, None, problem="not read"))


@dataclass(frozen=True)
class CaptureResult:
    record: RecordSummary | None
    created: bool = False
    #: Why nothing was captured (not finished, not found), or "".
    message: str = ""


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _pod_containers(pod: PodView) -> list[dict[str, Any]]:
    status = pod.raw.get("status") or {}
    out: list[dict[str, Any]] = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or ():
            image_id = str(c.get("imageID") or "")
            out.append({"pod": pod.name, "container": c.get("name"), "init": key.startswith("init"),
                        "image": c.get("image"), "imageID": image_id or None,
                        "digest": image_id.rsplit("@", 1)[1] if "@sha256:" in image_id else None})
    return out


def _mappings(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping nested in ``value`` (a spec), depth first."""
    if isinstance(value, Mapping):
        yield value
        for v in value.values():
            yield from _mappings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _mappings(v)


def _spec_images(raw: Mapping[str, Any]) -> list[str]:
    """Every container image the object's spec names (Job template or RayJob groups)."""
    found: list[str] = []
    for m in _mappings(raw.get("spec") or {}):
        for c in [*(m.get("initContainers") or ()), *(m.get("containers") or ())]:
            if isinstance(c, Mapping) and c.get("image") and str(c["image"]) not in found:
                found.append(str(c["image"]))
    return found


def _resume_paths(raw: Mapping[str, Any]) -> list[str]:
    """``TAU_RESUME_FROM`` values of the spec's containers (the checkpoint the run resumes from)."""
    paths: list[str] = []
    for m in _mappings(raw.get("spec") or {}):
        if m.get("name") == RESUME_ENV and isinstance(m.get("value"), str) and m["value"] not in paths:
            paths.append(m["value"])
    return paths


def finished_at(objs: RunObjects, outcome: str, captured_at: datetime) -> datetime:
    """When the run ended: the Job's completion or last terminal condition, the RayJob's
    ``endTime``; a cancelled run ends when it was seen deleted."""
    if outcome != "cancelled":
        job = objs.job
        if job is not None:
            if job.completion_time is not None:
                return job.completion_time
            ends = [c.last_transition_time for c in job.conditions
                    if c.type in ("Complete", "Failed") and c.is_true and c.last_transition_time]
            if ends:
                return max(ends)
        if objs.ray_job is not None:
            end = parse_time((objs.ray_job.raw.get("status") or {}).get("endTime"))
            if end is not None:
                return end
    return captured_at


def started_at(objs: RunObjects) -> datetime | None:
    starts = [p.start_time for p in objs.pods if p.start_time]
    if objs.job is not None and objs.job.start_time is not None:
        starts.append(objs.job.start_time)
    return min(starts) if starts else None


def workload_history(objs: RunObjects) -> list[dict[str, Any]]:
    """Each Workload's conditions in time order, with queue wait, admission and evictions."""
    out = []
    for w in objs.workloads:
        conditions = sorted(w.conditions, key=lambda c: (c.last_transition_time is None, c.last_transition_time or datetime.min))
        reserved = w.condition("QuotaReserved")
        admitted = w.condition("Admitted")
        admitted_at = admitted.last_transition_time if admitted is not None and admitted.is_true else None
        reserved_at = reserved.last_transition_time if reserved is not None and reserved.is_true else None
        first_quota = min((t for t in (reserved_at, admitted_at) if t is not None), default=None)
        wait = (first_quota - w.creation_timestamp).total_seconds() if first_quota and w.creation_timestamp else None
        evicted = [c for c in w.conditions if c.type in ("Evicted", "Preempted", "Requeued") and c.is_true]
        eviction_events = [e for e in objs.events if e.involved_name == w.name
                           and e.reason in ("Evicted", "Preempted", "EvictedDueToPodsReadyTimeout", "Requeued")]
        out.append({
            "name": w.name, "queue": w.queue_name, "clusterQueue": w.cluster_queue, "priority": w.priority,
            "createdAt": _time(w.creation_timestamp), "quotaReservedAt": _time(reserved_at), "admittedAt": _time(admitted_at),
            "queueWaitSeconds": wait, "clusterName": w.cluster_name, "finalStatus": w.status_word,
            "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": redact_text(c.message),
                            "at": _time(c.last_transition_time)} for c in conditions],
            "admissionChecks": [{"name": a.name, "state": a.state, "message": redact_text(a.message),
                                 "at": _time(a.last_transition_time)} for a in w.admission_checks],
            "evictions": [{"type": c.type, "reason": c.reason, "message": redact_text(c.message), "at": _time(c.last_transition_time)}
                          for c in evicted]
            + [{"type": "event", "reason": e.reason, "message": redact_text(e.message), "count": e.count,
                "at": _time(e.last_timestamp)} for e in eviction_events],
        })
    return out


def events_document(objs: RunObjects) -> list[dict[str, Any]]:
    events = sorted(objs.events, key=lambda e: (e.last_timestamp is None, e.last_timestamp or datetime.min, e.name))
    return [{"type": e.type, "reason": e.reason, "object": f"{e.involved_kind}/{e.involved_name}",
             "message": redact_text(e.message), "count": e.count, "lastTimestamp": _time(e.last_timestamp)} for e in events]


def nodes_document(inputs: CaptureInputs, start: datetime | None, end: datetime) -> tuple[list[dict[str, Any]], list[str]]:
    """The nodes the run's pods were bound to, each with its GPU verdict and the GPU conditions that
    changed while the run was on it.  Second value: what could not be read."""
    names = sorted({p.node_name for p in inputs.objs.pods if p.node_name})
    if inputs.nodes is None:
        return [{"name": n, "verdict": "unknown", "reason": "nodes could not be read"} for n in names], \
            ["nodes: no access to read Node objects; GPU health unknown"]
    by_name = {n.name: n for n in inputs.nodes}
    out: list[dict[str, Any]] = []
    for name in names:
        node = by_name.get(name)
        if node is None:
            out.append({"name": name, "verdict": "unknown", "reason": "the node no longer exists"})
            continue
        report = inputs.gpu_reports.get(name)
        view = view_from_node(dict(node.raw), {"status": dict(report.status)} if report else None, inputs.captured_at)
        gpu_types = {CONDITION_UNHEALTHY, CONDITION_DEGRADED} | {f.type for s in view.sources for f in s.findings}
        conditions = []
        for c in (node.raw.get("status") or {}).get("conditions") or ():
            if c.get("type") not in gpu_types:
                continue
            at = parse_time(c.get("lastTransitionTime"))
            conditions.append({"type": c.get("type"), "status": c.get("status"), "reason": c.get("reason"),
                               "message": redact_text(str(c.get("message") or "")), "lastTransitionTime": _time(at),
                               "lastHeartbeatTime": c.get("lastHeartbeatTime"),
                               "changedDuringRun": bool(at and (start is None or at >= start) and at <= end)})
        out.append({
            "name": name, "verdict": view.verdict.value, "reason": view.reason, "message": redact_text(view.message),
            "stale": view.stale, "lastHeartbeat": _time(view.last_heartbeat),
            "sources": [{"source": s.source, "verdict": s.verdict.value, "reason": s.reason, "stale": s.stale}
                        for s in view.sources],
            "conditions": conditions,
            "pods": sorted(p.name for p in inputs.objs.pods if p.node_name == name),
        })
    return out, []


def build_files(inputs: CaptureInputs) -> tuple[RecordSummary, dict[str, bytes]]:
    """The record's summary and files (pure: no I/O)."""
    objs = inputs.objs
    owner = objs.job or objs.ray_job
    kind = "Job" if objs.job is not None else "RayJob" if objs.ray_job is not None else "unknown"
    annotations: Mapping[str, str] = owner.annotations if owner else {}
    sid = submission_id_of(objs)
    end = finished_at(objs, inputs.outcome, inputs.captured_at)
    start = started_at(objs)
    unavailable: list[str] = []
    files: dict[str, bytes] = {}

    submission = inputs.submission
    if submission is not None and submission.tau_yaml is not None:
        files["tau.yaml"] = submission.tau_yaml.encode("utf-8")
    else:
        unavailable.append("tau.yaml: not submitted from this machine (the cluster keeps no copy)")
    if submission is not None:
        files["manifests.yaml"] = submission.manifests.encode("utf-8")
        manifests_source = "rendered by tau-tui at submission"
    elif owner is not None:
        served = {"apiVersion": owner.raw.get("apiVersion"), "kind": owner.raw.get("kind"),
                  "metadata": {"name": owner.name, "namespace": owner.namespace, "labels": dict(owner.labels),
                               "annotations": dict(owner.annotations)},
                  "spec": owner.raw.get("spec") or {}}
        files["manifests.yaml"] = yaml.safe_dump(redact_object(served), sort_keys=False).encode("utf-8")
        manifests_source = "as served by the API server (the render was not kept)"
    else:
        manifests_source = "unavailable"
        unavailable.append("manifests: the run's object was gone when it was captured")

    containers = [c for p in objs.pods for c in _pod_containers(p)]
    digests = sorted({c["digest"] for c in containers if c["digest"]})
    if not digests and annotations.get(IMAGE_DIGEST_ANNOTATION):
        digests = [annotations[IMAGE_DIGEST_ANNOTATION]]
    if not digests:
        unavailable.append("image digest: no pod status had an imageID with a digest")
    checkpoints = [annotations[a] for a in CHECKPOINT_ANNOTATIONS if annotations.get(a)]
    checkpoints += _resume_paths(owner.raw) if owner else []

    history = workload_history(objs)
    if not history:
        unavailable.append("workload history: no Kueue Workload was found for the run")
    files["workload-history.json"] = _json(history)
    files["events.json"] = _json(events_document(objs))
    nodes, node_problems = nodes_document(inputs, start, end)
    unavailable += node_problems
    files["nodes.json"] = _json(nodes)
    if inputs.log.text:
        files["logs/run.log"] = inputs.log.text.encode("utf-8")
    if inputs.log.note:
        unavailable.append(f"log: {inputs.log.note}")
    cluster = inputs.cluster
    if cluster.problem:
        unavailable.append(f"cluster identity: {cluster.problem}")

    config_hash = annotations.get(CONFIG_HASH_ANNOTATION) or (submission.config_hash if submission else None)
    record = {
        "format": RECORD_FORMAT,
        "run": {"namespace": objs.namespace, "name": objs.name, "kind": kind, "uid": owner.uid if owner else None,
                "submissionId": sid},
        "outcome": inputs.outcome,
        "createdAt": _time(owner.creation_timestamp) if owner else None,
        "startedAt": _time(start),
        "finishedAt": _time(end),
        "capturedAt": _time(inputs.captured_at),
        "capturedBy": inputs.source,
        "cluster": {"server": cluster.server, "kubeSystemUID": cluster.kube_system_uid, "simulated": cluster.simulated},
        "configHash": config_hash,
        "tauYaml": submission.tau_yaml_path if submission else None,
        "manifestsSource": manifests_source,
        "images": _spec_images(owner.raw) if owner else sorted({str(c["image"]) for c in containers if c["image"]}),
        "imageDigests": digests,
        "containers": containers,
        "checkpointPaths": checkpoints,
        "queueWaitSeconds": history[0]["queueWaitSeconds"] if history else None,
        "nodes": [n["name"] for n in nodes],
        "logLines": inputs.log.lines,
        "unavailable": unavailable,
    }
    files["record.json"] = _json(redact_object(record))
    summary = RecordSummary(0, objs.namespace, objs.name, sid, kind, owner.uid if owner else None, inputs.outcome,
                            _time(end), _time(inputs.captured_at) or "", inputs.source, config_hash,
                            ",".join(n["name"] for n in nodes), cluster_server=cluster.server,
                            cluster_uid=cluster.kube_system_uid, simulated=cluster.simulated)
    return summary, files


def read_run_log(backend: ClusterBackend, objs: RunObjects) -> RunLog:
    """Every container of the run's pods, merged by timestamp, read once to its end (never
    followed); a log over :data:`LOG_LIMIT_BYTES` keeps its last lines."""
    pods = tuple(sorted(p.name for p in objs.pods))
    if not pods:
        return RunLog(note="no pods left to read a log from")
    try:
        stream = backend.open_logs(LogRequest(objs.namespace, pods=pods, all_containers=True))
    except ClusterError as err:
        return RunLog(note=str(err))
    try:
        complete = stream.wait_done(LOG_READ_TIMEOUT_S)
        spool = stream.spool
        count = spool.line_count
        kept: list[str] = []
        size = 0
        stop = count
        while stop > 0 and size <= LOG_LIMIT_BYTES:  # from the end, in blocks: the last lines matter most
            start = max(0, stop - 1000)
            for line in reversed(spool.lines(start, stop)):
                line = redact_text(line)
                size += len(line.encode("utf-8")) + 1
                if size > LOG_LIMIT_BYTES:
                    break
                kept.append(line)
            stop = start
        kept.reverse()
        notes = []
        if len(kept) < count:
            notes.append(f"cut to the last {len(kept)} of {count} lines ({LOG_LIMIT_BYTES // (1024 * 1024)} MiB)")
        if not complete:
            notes.append(f"reading stopped after {LOG_READ_TIMEOUT_S:.0f}s")
        notes += stream.errors
        return RunLog("\n".join(kept) + ("\n" if kept else ""), "; ".join(notes), len(kept))
    finally:
        stream.close(delete_spool=True)


def live_nodes(backend: BaseBackend) -> tuple[list[NodeView] | None, dict[str, GpuHealthView]]:
    """Nodes and GPU health reports read live (the CLI has no watch cache); None: nodes not readable."""
    try:
        nodes: list[NodeView] | None = [n for n in backend.fetch(ResourceKind.NODE) if isinstance(n, NodeView)]
    except ClusterError:
        nodes = None  # a researcher's account often may not list nodes
    try:
        reports = {h.node_name: h for h in backend.fetch(ResourceKind.GPU_HEALTH) if isinstance(h, GpuHealthView)}
    except ClusterError:
        reports = {}
    return nodes, reports


def capture(backend: ClusterBackend, store: EvidenceStore, objs: RunObjects, outcome: str, now: datetime,
            *, source: str, nodes: Sequence[NodeView] | None,
            gpu_reports: Mapping[str, GpuHealthView], cluster: ClusterIdentity | None = None) -> CaptureResult:
    """Store the record of a finished run once.  ``nodes`` (None: not readable) and ``gpu_reports``
    come from the caller: the app's cache, or :func:`live_nodes`; ``cluster`` (read from the
    backend when not given) is the cluster the record is evidence of."""
    if outcome not in FINISHED_OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {', '.join(FINISHED_OUTCOMES)}")
    sid = submission_id_of(objs)
    cluster = cluster if cluster is not None else cluster_identity(backend)
    existing = store.find(objs.namespace, objs.name, sid)
    if existing is not None:
        other = cluster.conflicts(existing.cluster_server, existing.cluster_uid, existing.simulated)
        if other:
            return CaptureResult(None, message=f"{objs.namespace}/{objs.name} (submission {sid}) is recorded already, "
                                               f"but {other}")
        return CaptureResult(existing, created=False, message="already captured")
    inputs = CaptureInputs(objs, outcome, now, source, nodes, gpu_reports, read_run_log(backend, objs),
                           store.submission(objs.namespace, objs.name, sid), cluster)
    summary, files = build_files(inputs)
    record, created = store.add_record(summary, files)
    return CaptureResult(record, created)


def capture_live(backend: BaseBackend, store: EvidenceStore, namespace: str, name: str, now: datetime,
                 *, source: str, cluster: ClusterIdentity) -> CaptureResult:
    """The CLI's capture: read the run live and store its record if it is finished.  A run that is
    gone from the cluster but was captured before (of this ``cluster``) returns that record."""
    objs = read_run(backend, namespace, name)
    status = compute_run_status(objs)
    outcome = outcome_of(status)
    if outcome is None:
        stored = store.find(namespace, name, cluster=cluster)
        if stored is not None:
            return CaptureResult(stored, created=False, message="already captured")
        if status.state == "not_found":
            return CaptureResult(None, message=f"no Job or RayJob {namespace}/{name}, and no evidence record of it")
        return CaptureResult(None, message=f"{namespace}/{name} is {status.display_state}, not finished; "
                                           "evidence is captured when it succeeds, fails or is cancelled")
    nodes, reports = live_nodes(backend)
    return capture(backend, store, objs, outcome, now, source=source, nodes=nodes, gpu_reports=reports,
                   cluster=cluster)
