"""Pods view (``:pods``, ``p`` on a run): the pods of one run, of a namespace, or of every namespace
the app reads, from the same cache and watch as the other panes; ``l`` logs, ``d`` describe,
``y`` YAML.  A read costs the pods that changed (``kept_rows.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView, PodView
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.kept_rows import BuiltRow, KeptRows
from tau_tui.screens.known_counts import CountedStatus, RowCount, count_text
from tau_tui.screens.object_scope import (
    ObjectScope,
    RayJobsByCluster,
    RunIdentity,
    open_object_view,
    pod_in_scope,
    run_identity,
)
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import since
from tau_tui.widgets.keyed_table import KeyedTable, Matchable
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_columns import ColumnSpec
from tau_tui.widgets.table_plan import Row, TablePlan

#: A pod's status word as kubectl prints it, mapped to the app's status styles (never colour alone).
STATUS_STYLES = {"Running": "running", "Succeeded": "done", "Completed": "done", "Pending": "pending",
                 "ContainerCreating": "pending", "PodInitializing": "pending", "Terminating": "warning"}


def pod_run(pod: PodView, ray_jobs: dict[tuple[str, str], str] | None = None) -> str:
    """The run a pod belongs to: its Job (``job-name``; a RayJob's submitter's is named as the RayJob),
    the RayJob whose RayCluster it is in (``ray_jobs``: by namespace and cluster), its owner RayJob
    (the simulated cluster's), else its RayCluster or owner."""
    owner = pod.controller_owner or {}
    if pod.labels.get("job-name"):
        return pod.labels["job-name"]
    cluster = pod.labels.get("ray.io/cluster")
    if cluster and ray_jobs and (pod.namespace or "", cluster) in ray_jobs:
        return ray_jobs[(pod.namespace or "", cluster)]
    if owner.get("kind") == "RayJob":
        return str(owner.get("name"))
    return cluster or str(owner.get("name") or "—")


def pod_status(pod: PodView) -> str:
    """kubectl's STATUS: Terminating, a waiting or terminated container's reason, else the phase."""
    if pod.deletion_timestamp is not None:
        return "Terminating"
    for cs in pod.container_statuses:
        if cs.init:
            continue
        if cs.state == "waiting" and cs.reason:
            return cs.reason
        if cs.state == "terminated" and cs.reason and not pod.terminal:
            return cs.reason
    return pod.phase


def pod_row(pod: PodView, now: datetime, ray_jobs: dict[tuple[str, str], str] | None = None) -> BuiltRow:
    app = [cs for cs in pod.container_statuses if not cs.init]
    ready = f"{sum(cs.ready for cs in app)}/{len(pod.containers)}"
    restarts = sum(cs.restart_count for cs in app)
    status = pod_status(pod)
    style = STATUS_STYLES.get(status, "failed" if status in ("Failed", "Error") or "BackOff" in status or "Err" in status
                              else "unknown")
    run = pod_run(pod, ray_jobs)
    cells: list[Any] = [pod.name, pod.namespace or "", run, ready, status_text(style, status), str(restarts),
                        pod.node_name or "—", since(pod.creation_timestamp, now)]
    matchable: Matchable = (f"{pod.namespace}/{pod.name} {run} {status} {pod.node_name or ''}", pod.labels)
    return BuiltRow((pod.namespace or "", pod.name), cells, matchable, pod.creation_timestamp)


@dataclass
class PodsData:
    rows: Any = field(default_factory=list)
    pods: dict[str, ObjectView] = field(default_factory=dict)
    matchable: dict[str, Matchable] = field(default_factory=dict)
    plan: TablePlan | None = None
    status: str | CountedStatus = ""


class PodsScreen(PaneScreen):
    PANE = "pods"
    PANE_TITLE = "Pods"
    TABLE_FILTER = True
    HELP = (
        "Pods, k9s style: those of one run (p on a run, or :pods NS/RUN; a Job's by job-name, a RayJob's by "
        "ray.io/cluster), of one namespace (:pods NS), or of every namespace the app reads (:pods all).  "
        "Ready counts ready containers, Status is kubectl's (Terminating, CrashLoopBackOff, ...), Restarts the "
        "containers' restarts.  l opens the pod's log, d describes it, y shows its YAML; e its events."
    )
    VIEW_KINDS = (ResourceKind.POD,)
    READ_KINDS = (ResourceKind.POD, ResourceKind.JOB, ResourceKind.RAY_JOB)
    BINDINGS = [
        Binding("l", "logs", "Logs", id="pods.logs"),
        Binding("d", "describe", "Describe", id="pods.describe"),
        Binding("y", "yaml", "YAML", id="pods.yaml"),
        Binding("e", "events", "Events", id="pods.events"),
    ]

    def __init__(self, scope: ObjectScope | None = None) -> None:
        super().__init__()
        self.scope = scope or ObjectScope()
        self._run: RunIdentity | None = None
        self.data = PodsData()
        self._ray_jobs = RayJobsByCluster()
        self.kept = KeptRows(ResourceKind.POD, lambda view: pod_in_scope(view, self.scope, self._run),
                             lambda pod, now: pod_row(pod, now, self._ray_jobs.by_cluster))

    def compose_body(self) -> ComposeResult:
        yield KeyedTable([ColumnSpec("pod", "Pod", "N", flexible=True, min_width=16, cut="middle"),
                          ColumnSpec("ns", "Namespace", optional=True), ColumnSpec("run", "Run", optional=True, cut="middle"), ColumnSpec("ready", "Ready"),
                          ColumnSpec("status", "Status", "S"), ColumnSpec("restarts", "Restarts", "R"),
                          ColumnSpec("node", "Node", optional=True), ColumnSpec("age", "Age", "A")], id="pods-table")

    def crumbs(self) -> str:
        return f"Pods › {self.scope.crumb}"

    def extra_signature(self) -> Any:
        return self.scope

    def set_scope(self, scope: ObjectScope) -> None:
        """Show another run's, namespace's or every pod (``:pods ...``, ``p`` on a run)."""
        if scope != self.scope:
            self.scope = scope
            self.kept.reset()
        if self.is_mounted:  # else its first read takes the scope
            self.update_header()
            self.tick(force=True)

    def collect(self, request: ReadRequest) -> PodsData:
        backend = self.tau.backend
        assert backend is not None
        self._ray_jobs.update(backend)
        run = run_identity(backend, self.scope)
        if run != self._run:  # the run's RayCluster came, or changed with a retry: its pods are others
            self._run = run
            self.kept.reset()
        notice = request.freshness.notice(ResourceKind.POD)
        read = self.kept.read(backend, self.tau.now(), request.table_states.get("pods-table"), notice, request.keep_reading)
        data = PodsData(read.rows, read.views, read.matchable)
        listed = request.freshness.views.get(ResourceKind.POD)
        scope = f" · {self.scope.label}"
        if self.scope.run and run is not None and not run.job and not run.ray_cluster:
            scope += " · no Job or RayJob of that name here, or its RayCluster is not made yet"
        data.status = CountedStatus((RowCount(count_text(len(read.rows), listed), "pods", "pods-table"), scope))
        data.plan = read.plan or request.plan_table("pods-table", list(read.rows), notice, data.matchable)
        self.kept.planned(data.plan)
        return data

    def apply(self, data: PodsData) -> None:
        self.data = data
        table = self.query_one("#pods-table", KeyedTable)
        if data.plan is not None:
            table.apply_plan(data.plan)
        else:
            rows: list[Row] = list(data.rows)
            table.apply_rows(rows, notice=self.freshness.notice(ResourceKind.POD), matchable=data.matchable)
        self.set_status(data.status)

    def selected_pod(self) -> PodView | None:
        key = self.query_one("#pods-table", KeyedTable).selected_key
        pod = self.data.pods.get(key) if key else None
        if not isinstance(pod, PodView):
            self.notify("select a pod", severity="warning")
            return None
        return pod

    async def action_logs(self) -> None:
        pod = self.selected_pod()
        if pod is not None:
            await self.tau.open_logs_for_run(f"{pod.namespace}/{pod_run(pod, self._ray_jobs.by_cluster)}", pod=pod.name)

    def action_describe(self) -> None:
        pod = self.selected_pod()
        if pod is not None:
            describe_object(self.tau, pod, yaml_view=False)

    def action_yaml(self) -> None:
        pod = self.selected_pod()
        if pod is not None:
            describe_object(self.tau, pod, yaml_view=True)

    def action_events(self) -> None:
        pod = self.selected_pod()
        if pod is not None:
            open_object_view(self.tau, "events", ObjectScope(pod.namespace, pod_run(pod, self._ray_jobs.by_cluster)))
