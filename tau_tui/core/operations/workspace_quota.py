"""`tau-tui workspace quota show WS`: the quota behind a workspace, as `tau workspace quota show` resolves
it (taugrid.md §2.5): the workspace's LocalQueue, its backing ClusterQueue with the nominal quota and
use of each flavor and resource, and the team Cohort `tau-team-<team>` the queue borrows through.

Fails closed: a queue or ClusterQueue that cannot be read is reported as unknown with the reason,
never as zero quota."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ClusterQueueView, CohortView, LocalQueueView
from tau_tui.core.runconfig.workspace import WorkspaceDefaults

TEAM_COHORT_PREFIX = "tau-team-"


@dataclass(frozen=True)
class QuotaLine:
    flavor: str
    resource: str
    nominal: float
    borrowing_limit: float | None
    used: float | None
    borrowed: float | None


@dataclass(frozen=True)
class WorkspaceQuota:
    workspace: str
    namespace: str
    local_queue: str | None
    cluster_queue: str | None
    cohort: str | None
    team_cohort: str | None
    team_cohort_found: bool | None
    lines: tuple[QuotaLine, ...] = ()
    pending: int | None = None
    admitted: int | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)

    def document(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace, "namespace": self.namespace, "localQueue": self.local_queue,
            "clusterQueue": self.cluster_queue, "cohort": self.cohort, "teamCohort": self.team_cohort,
            "teamCohortFound": self.team_cohort_found, "pendingWorkloads": self.pending, "admittedWorkloads": self.admitted,
            "quota": [{"flavor": q.flavor, "resource": q.resource, "nominal": q.nominal, "borrowingLimit": q.borrowing_limit,
                       "used": q.used, "borrowed": q.borrowed} for q in self.lines],
            "problems": list(self.problems),
        }


def _one(backend: BaseBackend, kind: ResourceKind, name: str, namespace: str | None = None) -> Any:
    return next((v for v in backend.fetch(kind, namespace) if v.name == name), None)


def read_workspace_quota(backend: BaseBackend, ws: WorkspaceDefaults, team: str | None) -> WorkspaceQuota:
    problems: list[str] = []
    cluster_queue = ws.cluster_queue
    if not cluster_queue and ws.queue:
        try:
            lq = _one(backend, ResourceKind.LOCAL_QUEUE, ws.queue, ws.namespace)
        except ClusterError as err:
            lq = None
            problems.append(f"LocalQueue {ws.namespace}/{ws.queue} unreadable: {err.message}")
        if isinstance(lq, LocalQueueView):
            cluster_queue = lq.cluster_queue or None
        elif not problems:
            problems.append(f"LocalQueue {ws.namespace}/{ws.queue} not found")
    cq: ClusterQueueView | None = None
    if cluster_queue:
        try:
            found = _one(backend, ResourceKind.CLUSTER_QUEUE, cluster_queue)
            cq = found if isinstance(found, ClusterQueueView) else None
            if cq is None:
                problems.append(f"ClusterQueue {cluster_queue} not found")
        except ClusterError as err:
            problems.append(f"ClusterQueue {cluster_queue} unreadable: {err.message}")
    elif not problems:
        problems.append("the workspace names no queue (spec.queue, status.queue)")
    team_cohort = f"{TEAM_COHORT_PREFIX}{team}" if team else None
    team_found: bool | None = None
    if team_cohort:
        try:
            team_found = isinstance(_one(backend, ResourceKind.COHORT, team_cohort), CohortView)
        except ClusterError as err:
            problems.append(f"Cohort {team_cohort} unreadable: {err.message}")
    lines: list[QuotaLine] = []
    if cq is not None:
        usage = {u.flavor: u.resources for u in cq.flavors_usage}
        for _covered, flavors in cq.resource_groups:
            for flavor in flavors:
                for res in flavor.resources:
                    used = usage.get(flavor.flavor, {}).get(res.name)
                    lines.append(QuotaLine(flavor.flavor, res.name, res.nominal_quota, res.borrowing_limit,
                                           used[0] if used else (0.0 if cq.flavors_usage or flavor.flavor in usage else None),
                                           used[1] if used else None))
    return WorkspaceQuota(ws.name, ws.namespace, ws.queue, cluster_queue, cq.cohort if cq else None, team_cohort, team_found,
                          tuple(lines), cq.pending_workloads if cq else None, cq.admitted_workloads if cq else None,
                          tuple(problems))
