"""Can a queue ever admit a request?  The total a rendered Job/RayJob asks for, compared
with the nominal quota of every flavor of the ClusterQueue behind its LocalQueue.

Kueue admits a workload only when one flavor of each resource group covers the whole
request (borrowing aside), so a request above every flavor's nominal quota waits for
ever.  The compose pane, its submit confirmation and ``tau-tui submit`` all warn with
the numbers (issue #11: ``memory_request: 999Pi`` validated and queued for ever)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.convert import cluster_queue_view, local_queue_view, parse_quantity
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import QUEUE_NAME_LABEL
from tau_tui.core.cluster.view_types import ClusterQueueView, LocalQueueView


@dataclass(frozen=True)
class RequestTotals:
    """What one submission asks for: pods and the sum of their container requests."""

    pods: int
    requests: Mapping[str, float]
    namespace: str
    queue: str | None


def _pod_requests(template: Mapping[str, Any]) -> dict[str, float]:
    spec = (template or {}).get("spec") or {}
    totals: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for name, value in (((container.get("resources") or {}).get("requests")) or {}).items():
            totals[name] = totals.get(name, 0.0) + parse_quantity(value)
    return totals


def _pod_sets(manifest: Mapping[str, Any]) -> list[tuple[int, dict[str, float]]]:
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    if kind == "Job":
        count = spec.get("parallelism") or spec.get("completions") or 1
        return [(int(count), _pod_requests(spec.get("template") or {}))]
    if kind == "RayJob":
        cluster = spec.get("rayClusterSpec") or {}
        sets = [(1, _pod_requests((cluster.get("headGroupSpec") or {}).get("template") or {}))]
        for group in cluster.get("workerGroupSpecs") or []:
            sets.append((int(group.get("replicas") or group.get("minReplicas") or 1), _pod_requests(group.get("template") or {})))
        return sets
    return []


def request_totals(manifests: Iterable[Mapping[str, Any]]) -> RequestTotals:
    """Sum of requests over every pod the queued object (the last manifest) will create."""
    manifests = list(manifests)
    main = manifests[-1] if manifests else {}
    meta = main.get("metadata") or {}
    pods = 0
    totals: dict[str, float] = {}
    for count, per_pod in _pod_sets(main):
        pods += count
        for name, value in per_pod.items():
            totals[name] = totals.get(name, 0.0) + count * value
    return RequestTotals(pods, totals, meta.get("namespace") or "", (meta.get("labels") or {}).get(QUEUE_NAME_LABEL))


def human(value: float, resource: str) -> str:
    """A quantity as people write it: memory in binary units, counts as integers."""
    if resource in ("memory", "ephemeral-storage") or resource.endswith("memory"):
        units = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
        for unit, size in units:  # as written in the quota ("4000Gi"), when a unit divides it
            if value >= size and value % size == 0 and value / size < 100000:
                return f"{value / size:.0f}{unit}"
        for unit, size in units:
            if value >= size:
                return f"{value / size:.1f}{unit}"
        return f"{value:.0f}"
    return str(int(value)) if value == int(value) else f"{value:.1f}"


def summary_line(totals: RequestTotals) -> str:
    """``2 pods: nvidia.com/gpu 16, cpu 8, memory 64Gi`` (GPU resources first)."""
    order = sorted(totals.requests, key=lambda r: (not ("gpu" in r or r.startswith("nvidia.com/")), r))
    parts = [f"{name} {human(totals.requests[name], name)}" for name in order]
    return f"{totals.pods} pod(s): " + (", ".join(parts) if parts else "no resource requests")


def quota_warnings(totals: RequestTotals, local_queues: Iterable[LocalQueueView],
                   cluster_queues: Iterable[ClusterQueueView]) -> list[str]:
    """One line per requested resource that no flavor of the queue's ClusterQueue can ever hold.

    Empty when the request fits, and when the queue cannot be found (the server dry-run and
    the queue pane report a missing queue; this check only speaks about quota it can see)."""
    if not totals.queue:
        return []
    local = next((q for q in local_queues if q.name == totals.queue and q.namespace == totals.namespace), None)
    if local is None or not local.cluster_queue:
        return []
    cq = next((q for q in cluster_queues if q.name == local.cluster_queue), None)
    if cq is None:
        return []
    where = f"ClusterQueue {cq.name} (LocalQueue {totals.namespace}/{totals.queue})"
    warnings = []
    for resource, wanted in sorted(totals.requests.items()):
        if wanted <= 0:
            continue
        groups = [(covered, flavors) for covered, flavors in cq.resource_groups if resource in covered]
        if not groups:
            warnings.append(f"{resource} {human(wanted, resource)} requested, but {where} has no quota for {resource}: "
                            "it can never be admitted")
            continue
        nominal = [(fq.flavor, rq.nominal_quota) for _, flavors in groups for fq in flavors
                   for rq in fq.resources if rq.name == resource]
        if nominal and all(wanted > quota for _, quota in nominal):
            largest = max(nominal, key=lambda item: item[1])
            listed = ", ".join(f"{flavor} {human(quota, resource)}" for flavor, quota in nominal)
            warnings.append(f"{resource} {human(wanted, resource)} requested exceeds every flavor's nominal quota in "
                            f"{where} (largest {largest[0]} {human(largest[1], resource)}; {listed}): "
                            "it can never be admitted")
    return warnings


def server_quota_warnings(backend: Any, totals: RequestTotals) -> list[str]:
    """:func:`quota_warnings` with the two queues read from the API server, for a one-shot
    ``tau-tui submit`` whose backend runs no watches.  A queue that cannot be read gives no
    warning: the server dry-run and the submit itself report it."""
    if not totals.queue or not totals.namespace:
        return []
    try:
        local = local_queue_view(backend._api_get(ResourceKind.LOCAL_QUEUE.value, totals.queue, totals.namespace))
        cluster = cluster_queue_view(backend._api_get(ResourceKind.CLUSTER_QUEUE.value, local.cluster_queue, None))
    except Exception:  # not found, forbidden, unreachable: said elsewhere, by the submit
        return []
    return quota_warnings(totals, [local], [cluster])
