"""GPU faults as the panes and commands use them: cluster-wide in one line for the panes a user
opens first (issue #11: ``--demo faults`` opened on a queue that looked healthy), per node with
GPUs, reason and time (:class:`NodeGpuFault`, from the agent's verdict or other writers' node
conditions), and the runs such a fault hit (:func:`gpu_hits`, :func:`runs_hit_by_node`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tau_gpuhealth.nodeview import NodeHealthView, view_from_node
from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.names import GPU_NODE_CONDITIONS
from tau_tui.core.cluster.view_types import GpuHealthView, NodeView, PodView, RayJobView

#: The agent's heartbeat period when its report does not say (gpu-health.md: 5 min).
DEFAULT_HEARTBEAT_S = 300.0

#: verdicts worth a line on every queue/runs screen (unknown is shown on the Nodes pane)
FAULT_VERDICTS = ("unhealthy", "degraded")


def gpu_problems(reports: Iterable[GpuHealthView]) -> dict[str, str]:
    """node → "unhealthy (Xid79)" for every node whose agent reports a GPU problem."""
    problems: dict[str, str] = {}
    for report in reports:
        status = report.status or {}
        verdict = str(status.get("verdict") or "")
        if verdict not in FAULT_VERDICTS:
            continue
        codes = sorted({str(r.get("code")) for gpu in status.get("gpus") or () for r in gpu.get("reasons") or ()
                        if r.get("code")} | {str(r.get("code")) for r in status.get("reasons") or () if r.get("code")})
        problems[report.node_name or report.name] = f"{verdict} ({', '.join(codes)})" if codes else verdict
    return problems


def fault_summary(problems: dict[str, str], shown: int = 3) -> str | None:
    """``⚠ GPU faults: 2 nodes unhealthy (gpu-node-1, gpu-node-6), 1 degraded (gpu-node-4)``
    (one line at 80 columns for a fault or two; the Nodes pane has the details)."""
    if not problems:
        return None
    parts: list[str] = []
    for verdict in FAULT_VERDICTS:
        nodes = sorted(n for n, p in problems.items() if p.startswith(verdict))
        if nodes:
            names = ", ".join(nodes[:shown]) + (f", +{len(nodes) - shown} more" if len(nodes) > shown else "")
            noun = "" if parts else (" nodes" if len(nodes) > 1 else " node")  # "2 nodes unhealthy (..), 1 degraded (..)"
            parts.append(f"{len(nodes)}{noun} {verdict} ({names})")
    return "⚠ GPU faults: " + ", ".join(parts)


#: How long after a pod ended a fault may still be blamed for it: the agent notices an XID a
#: heartbeat or so after the process died of it.
FAULT_GRACE = timedelta(minutes=5)


@dataclass(frozen=True)
class NodeGpuFault:
    """One node whose GPUs are unhealthy (or degraded) now: which GPUs, why, since when and who said so."""

    node: str
    verdict: str  # "unhealthy" or "degraded"
    #: What went wrong in the writer's words: "Xid79", "XIDErrors", "GPUECCUncorrectable" ...
    reason: str
    message: str
    #: The bad GPUs as the agent names them ("gpu0 GPU-…"); empty when only node conditions tell.
    gpus: tuple[str, ...] = ()
    #: When the GPU turned bad (the agent's reason, else the condition's transition); None = not known.
    since: datetime | None = None
    #: Who reported it: tau-agent, taugrid-npd, gke-device-plugin ...
    sources: tuple[str, ...] = ()

    def describe(self) -> str:
        """``gpu2 GPU-… Xid48: double-bit ECC error (Xid 48) (tau-agent)``"""
        where = ", ".join(self.gpus)
        text = f"{where} {self.reason}" if where else self.reason
        if self.message and self.message not in text:
            text += f": {self.message}"
        return text + (f" ({', '.join(self.sources)})" if self.sources else "")


@dataclass(frozen=True)
class GpuHit:
    """A pod of a run that was on a node while its GPU turned bad."""

    pod: str
    fault: NodeGpuFault
    #: True when the pod failed (rather than still running on the bad GPU).
    failed: bool

    @property
    def line(self) -> str:
        """``✗ GPU fault: pod on node: gpu3 GPU-… Xid79: … (tau-agent)``: the run's mark."""
        return f"✗ GPU fault: {self.pod} on {self.fault.node}: {self.fault.describe()}"


def node_health_view(node: NodeView, now: datetime) -> NodeHealthView | None:
    """The node's GPU verdict from every writer (agent and node conditions); None without GPUs."""
    if not node.gpu:
        return None
    status = dict(node.gpu_health.status) if node.gpu_health is not None else None
    return view_from_node(dict(node.raw), {"status": status} if status is not None else None, now,
                          heartbeat_period_s=heartbeat_period_of(node))


def heartbeat_period_of(node: NodeView) -> float:
    """The agent's heartbeat period as its report on the node says (else the default)."""
    status = (node.gpu_health.status or {}) if node.gpu_health is not None else {}
    return float(status.get("heartbeatPeriodS") or DEFAULT_HEARTBEAT_S)


def _transition_of(node: NodeView, types: Iterable[str]) -> datetime | None:
    wanted = set(types)
    times = [parse_time(c.get("lastTransitionTime")) for c in (node.raw.get("status") or {}).get("conditions") or ()
             if c.get("type") in wanted and c.get("status") == "True"]
    return min((t for t in times if t is not None), default=None)


def fault_of(node: NodeView, view: NodeHealthView) -> NodeGpuFault | None:
    """The fault a node reports now, or None when its verdict is healthy or unknown (unknown is not
    blamed on a run: it says nothing happened, only that nobody can tell)."""
    if view.verdict not in (Verdict.UNHEALTHY, Verdict.DEGRADED):
        return None
    bad = [s for s in view.sources if s.verdict is view.verdict] or []
    gpus: list[str] = []
    since: list[datetime] = []
    reason, message = view.reason, view.message
    if view.detail is not None and any(s.source == "tau-agent" for s in bad):
        pairs = [(gpu, r) for gpu, r in view.detail.all_reasons() if r.severity is view.verdict]
        gpus = sorted({gpu.label for gpu, _ in pairs if gpu is not None})
        since = [r.since for _, r in pairs if r.since is not None]
        if pairs:
            reason, message = pairs[0][1].code, pairs[0][1].message
    if not since:
        types = {f.type for s in bad for f in s.findings if f.status == "True"} | set(GPU_NODE_CONDITIONS)
        found = _transition_of(node, types)
        since = [found] if found is not None else []
    return NodeGpuFault(node.name, view.verdict.value, reason, message, tuple(gpus), min(since, default=None),
                        tuple(s.source for s in bad))


def node_gpu_faults(nodes: Iterable[NodeView], now: datetime) -> dict[str, NodeGpuFault]:
    """node name → its fault, for every node whose GPUs are unhealthy or degraded now."""
    out: dict[str, NodeGpuFault] = {}
    for node in nodes:
        view = node_health_view(node, now)
        fault = fault_of(node, view) if view is not None else None
        if fault is not None:
            out[node.name] = fault
    return out


def _pod_end(pod: PodView) -> datetime | None:
    ends = [parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            for cs in (pod.raw.get("status") or {}).get("containerStatuses") or ()]
    return max((e for e in ends if e is not None), default=None)


def gpu_hits(pods: Iterable[PodView], faults: Mapping[str, NodeGpuFault]) -> list[GpuHit]:
    """The pods a GPU fault hit: bound to a faulty node and running there, or failed there while the
    GPU was already bad (or within :data:`FAULT_GRACE` before the fault was reported).  A pod that
    succeeded, or failed long before the fault, was not hit.  On a degraded node only a failed pod counts."""
    hits = []
    for pod in pods:
        fault = faults.get(pod.node_name or "")
        if fault is None:
            continue
        if pod.phase == "Failed":
            end = _pod_end(pod)
            if fault.since is not None and end is not None and end + FAULT_GRACE < fault.since:
                continue
            hits.append(GpuHit(pod.name, fault, True))
        elif not pod.terminal and fault.verdict == Verdict.UNHEALTHY.value:
            hits.append(GpuHit(pod.name, fault, False))
    return hits


def run_key_of_pod(pod: PodView, ray_clusters: Mapping[tuple[str, str], str]) -> str | None:
    """``namespace/run`` of the Job or RayJob a pod belongs to (``job-name``; a Ray pod through its cluster)."""
    ns = pod.namespace or ""
    job = pod.labels.get("job-name")
    if job:
        return f"{ns}/{job}"
    cluster = pod.labels.get("ray.io/cluster")
    if cluster and (ns, cluster) in ray_clusters:
        return f"{ns}/{ray_clusters[(ns, cluster)]}"
    return None


def runs_hit_by_node(pods: Iterable[PodView], ray_jobs: Iterable[RayJobView],
                     faults: Mapping[str, NodeGpuFault]) -> dict[str, list[str]]:
    """node → the runs (``namespace/name``) its GPU fault hit, for the Nodes pane."""
    clusters = {(r.namespace or "", r.ray_cluster_name or ""): r.name for r in ray_jobs if r.ray_cluster_name}
    out: dict[str, set[str]] = {}
    for pod in pods:
        node = pod.node_name or ""
        if node not in faults or not gpu_hits((pod,), faults):
            continue
        key = run_key_of_pod(pod, clusters)
        if key:
            out.setdefault(node, set()).add(key)
    return {node: sorted(keys) for node, keys in out.items()}
