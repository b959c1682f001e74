"""A pending run's place in its queue, for `tau-tui status` (one-shot, no watch).

The place comes from Kueue's visibility API (`pendingworkloads` of the run's LocalQueue) as the Queue
pane reads it; when that API is missing or refused, it is estimated from Kueue's order over a live
list of the Workloads and LocalQueues sharing the ClusterQueue, and says so.  Why it waits is
Kueue's own word: the Workload's QuotaReserved=False reason and message (or its eviction).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.positions import (
    PositionReport,
    PositionSource,
    estimate_cluster_queue_order,
    is_pending,
)
from tau_tui.core.cluster.view_types import LocalQueueView, WorkloadView
from tau_tui.core.operations.run_objects import RunObjects

ESTIMATE_PREFIX = "estimated from Kueue's order: "


@dataclass(frozen=True)
class QueuePlace:
    """Where a pending run waits. Positions count from 1 (#1 is admitted next); None: not in the report."""

    namespace: str
    local_queue: str
    cluster_queue: str | None
    position: int | None
    position_in_cluster_queue: int | None
    pending_in_queue: int
    estimated: bool
    estimate_reason: str
    why_pending: str

    @property
    def line(self) -> str:
        mark = "~" if self.estimated else "#"
        where = f"{mark}{self.position}" if self.position is not None else "not in the pending list yet"
        text = f"position {where} of {self.pending_in_queue} pending in LocalQueue {self.namespace}/{self.local_queue}"
        if self.position_in_cluster_queue is not None and self.cluster_queue:
            text += f" ({mark}{self.position_in_cluster_queue} in ClusterQueue {self.cluster_queue})"
        if self.estimated:
            text += f"; {self.estimate_reason}"
        return text

    def document(self) -> dict[str, Any]:
        return {"localQueue": self.local_queue, "clusterQueue": self.cluster_queue, "position": self.position,
                "positionInClusterQueue": self.position_in_cluster_queue, "pendingInQueue": self.pending_in_queue,
                "estimated": self.estimated, "estimateReason": self.estimate_reason or None,
                "whyPending": self.why_pending or None}


def why_pending(workload: WorkloadView) -> str:
    evicted = workload.condition("Evicted")
    if evicted is not None and evicted.is_true:
        return f"evicted ({evicted.reason}): {evicted.message}".strip()
    quota = workload.condition("QuotaReserved")
    if quota is not None and not quota.is_true:
        return quota.reason + (f": {quota.message}" if quota.message else "")
    return "waiting for Kueue to consider it (no QuotaReserved condition yet)"


def _local_queue_estimate(namespace: str, queue: str, workloads: list[WorkloadView], queues: list[LocalQueueView],
                          message: str, now: datetime) -> PositionReport:
    """The LocalQueue's pending Workloads in Kueue's order over its ClusterQueue's (a one-shot list: the
    backend's kept order follows a watched cache, which a CLI call does not have)."""
    cluster_queue = next((q.cluster_queue for q in queues if q.namespace == namespace and q.name == queue), None)
    entries = []
    if cluster_queue is not None:
        # only this ClusterQueue's workloads share its order: sort those, not the whole cluster's
        same_cq = [q for q in queues if q.cluster_queue == cluster_queue]
        members = {(q.namespace or "", q.name) for q in same_cq}
        candidates = [w for w in workloads if ((w.namespace or ""), (w.queue_name or "")) in members]
        entries = [e for e in estimate_cluster_queue_order(candidates, same_cq).get(cluster_queue, [])
                   if e.namespace == namespace and e.local_queue == queue]
    return PositionReport("LocalQueue", queue, namespace, tuple(entries), PositionSource.ESTIMATED, message, now)


def _live_estimate(backend: BaseBackend, namespace: str, queue: str, why: str, now: datetime) -> PositionReport:
    """Kueue's order over a live list: every namespace when allowed, else the run's own (said so)."""
    scope = ""
    try:
        workloads = [w for w in backend.fetch(ResourceKind.WORKLOAD) if isinstance(w, WorkloadView)]
        queues = [q for q in backend.fetch(ResourceKind.LOCAL_QUEUE) if isinstance(q, LocalQueueView)]
    except ClusterError:
        workloads = [w for w in backend.fetch(ResourceKind.WORKLOAD, namespace) if isinstance(w, WorkloadView)]
        queues = [q for q in backend.fetch(ResourceKind.LOCAL_QUEUE, namespace) if isinstance(q, LocalQueueView)]
        scope = f"; other namespaces are not readable, so only {namespace}'s workloads are counted"
    return _local_queue_estimate(namespace, queue, workloads, queues, ESTIMATE_PREFIX + why + scope, now)


def read_queue_place(backend: BaseBackend, objs: RunObjects, now: datetime) -> QueuePlace | None:
    """The place of the run's pending Workload, or None when none of its Workloads is pending."""
    pending = next((w for w in objs.workloads if is_pending(w)), None)
    if pending is None or not pending.queue_name:
        return None
    namespace, queue = pending.namespace or objs.namespace, pending.queue_name
    report = backend.pending_positions_local_queue(namespace, queue)
    if report.estimated:
        # A one-shot read has no watched cache to estimate from: estimate from a live list instead.
        why = report.message.removeprefix(ESTIMATE_PREFIX).split("; workloads not readable")[0]
        report = _live_estimate(backend, namespace, queue, why, now)
    entry = report.position_of(namespace, pending.name)
    cluster_queue = (entry.cluster_queue if entry else None) or pending.cluster_queue
    if cluster_queue is None:  # the visibility answer names no ClusterQueue: the LocalQueue does
        lq = next((q for q in backend.fetch(ResourceKind.LOCAL_QUEUE, namespace) if q.name == queue), None)
        cluster_queue = (lq.cluster_queue or None) if isinstance(lq, LocalQueueView) else None
    return QueuePlace(
        namespace=namespace, local_queue=queue, cluster_queue=cluster_queue,
        position=entry.position_in_local_queue + 1 if entry and entry.position_in_local_queue is not None else None,
        position_in_cluster_queue=(entry.position_in_cluster_queue + 1
                                   if entry and entry.position_in_cluster_queue is not None else None),
        pending_in_queue=len(report.entries), estimated=report.estimated,
        estimate_reason=report.message if report.estimated else "", why_pending=why_pending(pending),
    )
