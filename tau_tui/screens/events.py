"""Events view (``:events``, ``e`` on a run): the Events about one run (the run, its Workloads, its
pods, its RayCluster), of a namespace, or of every namespace the app reads, newest first, from the
same cache and watch as the other panes; ``l`` the logs of what an event is about, ``d`` describe,
``y`` YAML.  A read costs the events that changed (``kept_rows.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import EventView, ObjectView, PodView
from tau_tui.core.operations.live_selection import LiveSelection
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.kept_rows import BuiltRow, KeptRows
from tau_tui.screens.known_counts import CountedStatus, RowCount, count_text
from tau_tui.screens.object_scope import (
    ObjectScope,
    RunIdentity,
    event_in_scope,
    pod_in_scope,
    run_identity,
    run_object_names,
)
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.screens.pods import pod_run
from tau_tui.widgets.cell_text import one_line, since
from tau_tui.widgets.keyed_table import KeyedTable, Matchable
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_columns import ColumnSpec
from tau_tui.widgets.table_plan import Row, TablePlan

EPOCH = datetime.fromtimestamp(0).astimezone()


def event_row(event: EventView, now: datetime) -> BuiltRow:
    seen = event.last_timestamp or event.creation_timestamp
    about = f"{event.involved_kind}/{event.involved_name}"
    cells: list[Any] = [since(seen, now), status_text("warning" if event.type == "Warning" else "done", event.type),
                        event.reason, about, event.namespace or "", one_line(event.message, 240), str(event.count)]
    matchable: Matchable = (f"{event.type} {event.reason} {about} {event.namespace} {event.message}", event.labels)
    # newest first: the negated time of the last sighting, then the key
    return BuiltRow((-(seen or EPOCH).timestamp(),), cells, matchable, seen)


@dataclass
class EventsData:
    rows: Any = field(default_factory=list)
    events: dict[str, ObjectView] = field(default_factory=dict)
    matchable: dict[str, Matchable] = field(default_factory=dict)
    plan: TablePlan | None = None
    status: str | CountedStatus = ""


class EventsScreen(PaneScreen):
    PANE = "events"
    PANE_TITLE = "Events"
    TABLE_FILTER = True
    HELP = (
        "Events, newest first: those about one run (e on a run, or :events NS/RUN: the Job or RayJob, its "
        "Workloads, its pods, its RayCluster), about a namespace's objects (:events NS), or every event the "
        "app reads (:events all).  Warning events are marked ▲.  l opens the logs of the pod or run an "
        "event is about, d describes the event, y shows its YAML."
    )
    VIEW_KINDS = (ResourceKind.EVENT,)
    READ_KINDS = (ResourceKind.EVENT, ResourceKind.POD, ResourceKind.JOB, ResourceKind.RAY_JOB, ResourceKind.WORKLOAD)
    BINDINGS = [
        Binding("l", "logs", "Logs", id="events.logs"),
        Binding("d", "describe", "Describe", id="events.describe"),
        Binding("y", "yaml", "YAML", id="events.yaml"),
    ]

    def __init__(self, scope: ObjectScope | None = None) -> None:
        super().__init__()
        self.scope = scope or ObjectScope()
        self._run: RunIdentity | None = None
        self._names: frozenset[str] = frozenset()
        self.data = EventsData()
        self.kept = KeptRows(ResourceKind.EVENT, lambda view: event_in_scope(view, self.scope, self._names), event_row)
        # a run's pods (their names pick its events), kept from the journal as well
        self._run_pods = LiveSelection(ResourceKind.POD, lambda view: pod_in_scope(view, self.scope, self._run))

    def compose_body(self) -> ComposeResult:
        yield KeyedTable([ColumnSpec("seen", "Seen"), ColumnSpec("type", "Type", "T"),
                          ColumnSpec("reason", "Reason", "R", flexible=True), ColumnSpec("object", "Object", "O", flexible=True, cut="middle"),
                          ColumnSpec("ns", "Namespace", optional=True), ColumnSpec("message", "Message", flexible=True),
                          ColumnSpec("count", "Count", optional=True)], id="events-table")

    def crumbs(self) -> str:
        return f"Events › {self.scope.crumb}"

    def extra_signature(self) -> Any:
        return self.scope

    def set_scope(self, scope: ObjectScope) -> None:
        if scope != self.scope:
            self.scope = scope
            self._run = None
            self._run_pods = LiveSelection(ResourceKind.POD, lambda view: pod_in_scope(view, self.scope, self._run))
            self.kept.reset()
        if self.is_mounted:  # else its first read takes the scope
            self.update_header()
            self.tick(force=True)

    def collect(self, request: ReadRequest) -> EventsData:
        backend = self.tau.backend
        assert backend is not None
        if self.scope.run:
            run = run_identity(backend, self.scope)
            if run != self._run:
                self._run = run
                self._run_pods = LiveSelection(ResourceKind.POD, lambda view: pod_in_scope(view, self.scope, self._run))
            names = run_object_names(backend, self.scope, run, self._run_pods.current(backend))
            if names != self._names:  # a new pod or Workload: its earlier events are picked too
                self._names = names
                self.kept.reset()
        notice = request.freshness.notice(ResourceKind.EVENT)
        read = self.kept.read(backend, self.tau.now(), request.table_states.get("events-table"), notice, request.keep_reading)
        data = EventsData(read.rows, read.views, read.matchable)
        listed = request.freshness.views.get(ResourceKind.EVENT)
        warnings = sum(1 for e in read.views.values() if isinstance(e, EventView) and e.type == "Warning")
        data.status = CountedStatus((RowCount(count_text(len(read.rows), listed), "events", "events-table"),
                                     f" ({warnings} warning) · {self.scope.label}"))
        data.plan = read.plan or request.plan_table("events-table", list(read.rows), notice, data.matchable)
        self.kept.planned(data.plan)
        return data

    def apply(self, data: EventsData) -> None:
        self.data = data
        table = self.query_one("#events-table", KeyedTable)
        if data.plan is not None:
            table.apply_plan(data.plan)
        else:
            rows: list[Row] = list(data.rows)
            table.apply_rows(rows, notice=self.freshness.notice(ResourceKind.EVENT), matchable=data.matchable)
        self.set_status(data.status)

    def selected_event(self) -> EventView | None:
        key = self.query_one("#events-table", KeyedTable).selected_key
        event = self.data.events.get(key) if key else None
        if not isinstance(event, EventView):
            self.notify("select an event", severity="warning")
            return None
        return event

    async def action_logs(self) -> None:
        event = self.selected_event()
        if event is None:
            return
        namespace = event.involved_namespace or event.namespace or ""
        backend = self.tau.backend
        if event.involved_kind == "Pod" and backend is not None:
            pod = backend.get(ResourceKind.POD, event.involved_name, namespace)
            if isinstance(pod, PodView):
                clusters = {(r.namespace or "", r.ray_cluster_name): r.name
                            for r in backend.ray_jobs(namespace, tau_managed_only=False) if r.ray_cluster_name}
                await self.tau.open_logs_for_run(f"{namespace}/{pod_run(pod, clusters)}", pod=pod.name)
                return
            self.notify(f"pod {namespace}/{event.involved_name} is gone: its log went with it", severity="warning")
            return
        if event.involved_kind in ("Job", "RayJob"):
            await self.tau.open_logs_for_run(f"{namespace}/{event.involved_name}")
            return
        self.notify(f"{event.involved_kind} {event.involved_name} has no log: l works on events about a pod, Job or RayJob",
                    severity="warning")

    def action_describe(self) -> None:
        event = self.selected_event()
        if event is not None:
            describe_object(self.tau, event, yaml_view=False)

    def action_yaml(self) -> None:
        event = self.selected_event()
        if event is not None:
            describe_object(self.tau, event, yaml_view=True)
