"""Drain planning for on-call: which pods an Eviction-API drain would move, and whether the
cluster-wide drain budget allows draining this node now.

Pure functions over Kubernetes JSON (dicts as the API returns them); no client, no I/O. The TUI
reads the objects, calls `plan_drain`, shows the plan, and only on confirmation cordons the node
and POSTs the Eviction bodies (which respect PodDisruptionBudgets, unlike NoExecute taints).
The node agent never drains.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from tau_gpuhealth.names import AGENT_COMPONENT, ANNOTATION_CORDON_TIMESTAMP, ANNOTATION_CORDONED_BY, API_GROUP
from tau_tui.core.cluster.field_owners import annotation_owners

GPU_RESOURCE = "nvidia.com/gpu"
ANNOTATION_DRAIN_STARTED = f"{API_GROUP}/drain-started"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


class DrainBudgetPolicy(BaseModel):
    """At most `max_fraction` of GPU nodes and at most `max_nodes` unavailable at once, and at
    most `max_nodes` drains started within `window_s`. Whichever is smaller wins; a fleet of any
    size may drain at least one node (otherwise small fleets could never be repaired)."""

    max_fraction: float = Field(default=0.05, gt=0, le=1)
    max_nodes: int = Field(default=3, ge=1)
    window_s: float = Field(default=600, gt=0)


class PodRef(BaseModel):
    namespace: str
    name: str
    owner: str | None = None


class SkippedPod(BaseModel):
    pod: PodRef
    why: str


class DrainBudget(BaseModel):
    gpu_nodes: int
    unavailable: list[str]
    recently_drained: list[str]
    max_unavailable: int
    allowed: bool
    explanation: str
    #: Nodes whose cordon-timestamp was ignored, each with why (not written by the node agent).
    untrusted_cordon_times: list[str] = Field(default_factory=list)


class DrainPlan(BaseModel):
    node: str
    allowed: bool
    budget: DrainBudget
    evict: list[PodRef] = Field(default_factory=list)
    skipped: list[SkippedPod] = Field(default_factory=list)
    blockers: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def eviction_bodies(self) -> list[dict[str, Any]]:
        """policy/v1 Eviction objects to POST to pods/<name>/eviction, one per pod."""
        return [
            {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
            }
            for pod in self.evict
        ]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def is_gpu_node(node: dict[str, Any]) -> bool:
    capacity = (node.get("status") or {}).get("capacity") or {}
    try:
        if int(str(capacity.get(GPU_RESOURCE, "0"))) > 0:
            return True
    except ValueError:
        pass
    labels = _meta(node).get("labels") or {}
    return labels.get("nvidia.com/gpu.present") == "true" or "nvidia.com/gpu.count" in labels


def _is_ready(node: dict[str, Any]) -> bool:
    conditions: list[dict[str, Any]] = (node.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def trusted_cordon_time(node: dict[str, Any]) -> tuple[datetime | None, str | None]:
    """The node agent's cordon time, or (None, why it is not trusted).

    Anyone who can patch a Node can write the cordon-timestamp annotation; only the agent's is
    believed: cordoned-by says tau-agent and the agent's field manager alone owns the timestamp
    (the admission policy lets the agent set it only in the request that cordons)."""
    annotations = _meta(node).get("annotations") or {}
    if ANNOTATION_CORDON_TIMESTAMP not in annotations:
        return None, None
    owners = annotation_owners(_meta(node).get("managedFields"), ANNOTATION_CORDON_TIMESTAMP)
    if annotations.get(ANNOTATION_CORDONED_BY) != AGENT_COMPONENT:
        return None, f"cordoned-by is {annotations.get(ANNOTATION_CORDONED_BY)!r}, not {AGENT_COMPONENT}"
    if not owners:
        return None, "who wrote it is unknown (no field owner)"
    if any(owner != AGENT_COMPONENT for owner in owners):
        return None, f"written by {', '.join(sorted(set(owners)))}, not {AGENT_COMPONENT}"
    parsed = _parse_time(annotations.get(ANNOTATION_CORDON_TIMESTAMP))
    return parsed, None if parsed is not None else "not a timestamp"


def check_drain_budget(
    target: str, nodes: list[dict[str, Any]], now: datetime, policy: DrainBudgetPolicy | None = None,
    action: str = "draining",
) -> DrainBudget:
    """Whether one more GPU node may be taken out of service now (cluster-wide circuit breaker);
    ``action`` names how in the explanation (a cordon counts against the same budget)."""
    policy = policy or DrainBudgetPolicy()
    gpu_nodes = [n for n in nodes if is_gpu_node(n)]
    unavailable, recent, untrusted = [], [], []
    for node in gpu_nodes:
        name = _meta(node).get("name", "")
        if name == target:
            continue
        if (node.get("spec") or {}).get("unschedulable") or not _is_ready(node):
            unavailable.append(name)
        annotations = _meta(node).get("annotations") or {}
        cordoned_at, distrust = trusted_cordon_time(node)
        if distrust is not None:
            untrusted.append(f"{name}: {distrust}")
        started = _parse_time(annotations.get(ANNOTATION_DRAIN_STARTED)) or cordoned_at
        if started is not None and (now - started).total_seconds() < policy.window_s:
            recent.append(name)
    max_unavailable = min(max(1, math.floor(policy.max_fraction * len(gpu_nodes))), policy.max_nodes)
    too_many_out = len(unavailable) + 1 > max_unavailable
    too_many_recent = len(recent) + 1 > policy.max_nodes
    allowed = not too_many_out and not too_many_recent
    if not gpu_nodes:
        explanation = "no GPU nodes found; nothing to budget against"
        allowed = False
    elif too_many_out:
        explanation = (
            f"{len(unavailable)} of {len(gpu_nodes)} GPU nodes are already cordoned or not Ready "
            f"({', '.join(sorted(unavailable))}); the budget allows {max_unavailable} at once"
        )
    elif too_many_recent:
        explanation = (
            f"{len(recent)} GPU nodes were drained or cordoned in the last {int(policy.window_s)} s "
            f"({', '.join(sorted(recent))}); the budget allows {policy.max_nodes}"
        )
    else:
        explanation = (
            f"{len(unavailable)} of {len(gpu_nodes)} GPU nodes unavailable; {action} {target} "
            f"makes {len(unavailable) + 1} of at most {max_unavailable}"
        )
    return DrainBudget(
        gpu_nodes=len(gpu_nodes),
        unavailable=sorted(unavailable),
        recently_drained=sorted(recent),
        max_unavailable=max_unavailable,
        allowed=allowed,
        explanation=explanation,
        untrusted_cordon_times=sorted(untrusted),
    )


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Kubernetes LabelSelector semantics; an empty selector matches everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _owner(pod: dict[str, Any]) -> tuple[str | None, str | None]:
    for ref in _meta(pod).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("kind"), ref.get("name")
    return None, None


def plan_drain(
    node_name: str,
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    now: datetime,
    policy: DrainBudgetPolicy | None = None,
    *,
    allow_unmanaged: bool = False,
) -> DrainPlan:
    """Plan an Eviction-API drain of `node_name`.

    pods: pods on that node (fieldSelector spec.nodeName=<node>); pdbs: PodDisruptionBudgets in
    the namespaces of those pods; nodes: all nodes (for the cluster-wide budget).
    """
    budget = check_drain_budget(node_name, nodes, now, policy)
    plan = DrainPlan(node=node_name, allowed=budget.allowed, budget=budget)
    if not budget.allowed:
        plan.blockers.append(f"drain budget: {budget.explanation}")

    pdb_hits: dict[tuple[str, str], int] = {}
    for pod in pods:
        meta = _meta(pod)
        ref_kind, ref_name = _owner(pod)
        ref = PodRef(
            namespace=meta.get("namespace", "default"),
            name=meta.get("name", ""),
            owner=f"{ref_kind}/{ref_name}" if ref_kind else None,
        )
        phase = (pod.get("status") or {}).get("phase")
        if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
            plan.skipped.append(SkippedPod(pod=ref, why="static (mirror) pod; managed by the kubelet"))
            continue
        if ref_kind == "DaemonSet":
            plan.skipped.append(SkippedPod(pod=ref, why="DaemonSet pod; it stays on the node"))
            continue
        if phase in ("Succeeded", "Failed"):
            plan.skipped.append(SkippedPod(pod=ref, why=f"already {phase}"))
            continue
        if ref_kind is None:
            message = f"{ref.namespace}/{ref.name} has no controller; evicting it deletes it for good"
            if allow_unmanaged:
                plan.warnings.append(message)
            else:
                plan.blockers.append(message + " (confirm unmanaged pods to proceed)")
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if any("emptyDir" in v for v in volumes):
            plan.warnings.append(f"{ref.namespace}/{ref.name} uses emptyDir; its local data is lost")
        labels = meta.get("labels") or {}
        for pdb in pdbs:
            pmeta = _meta(pdb)
            if pmeta.get("namespace") != ref.namespace:
                continue
            if selector_matches((pdb.get("spec") or {}).get("selector"), labels):
                key = (ref.namespace, pmeta.get("name", ""))
                pdb_hits[key] = pdb_hits.get(key, 0) + 1
        plan.evict.append(ref)

    for pdb in pdbs:
        pmeta = _meta(pdb)
        key = (pmeta.get("namespace", ""), pmeta.get("name", ""))
        hits = pdb_hits.get(key, 0)
        if not hits:
            continue
        allowed = int((pdb.get("status") or {}).get("disruptionsAllowed", 0) or 0)
        if allowed == 0:
            plan.blockers.append(
                f"PodDisruptionBudget {key[0]}/{key[1]} allows no disruption now; "
                f"{hits} pod(s) on {node_name} would be refused (HTTP 429) until it does"
            )
        elif hits > allowed:
            plan.warnings.append(
                f"PodDisruptionBudget {key[0]}/{key[1]} allows {allowed} disruption(s), {hits} pod(s) on "
                f"{node_name} match it; evictions will proceed as replacements become ready"
            )
    plan.allowed = budget.allowed and not plan.blockers
    return plan
