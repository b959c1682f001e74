"""Queue pane: ClusterQueues and LocalQueues with quota bars, and the workloads
table with live position, its change, time in queue, priority and why pending."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import StopPolicy
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.cluster.positions import LocalQueuePositions
from tau_tui.core.cluster.view_types import ClusterQueueView, LocalQueueView, WorkloadView
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.mutations.cluster_changes import cancel_mutation, stop_policy_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.known_counts import STILL_LISTING, CountedStatus, RowCount, count_text
from tau_tui.screens.pane_reader import ReadRequest, read_place
from tau_tui.screens.queue_workloads import NAME_CELL, POSITION_READING, WORKLOAD_COLUMNS, WorkloadRows
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable, Matchable
from tau_tui.widgets.quota_bar import quota_bar
from tau_tui.widgets.row_detail import RowDetail
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_plan import Row, TablePlan

RESOURCE_ORDER = ("nvidia.com/gpu", "cpu", "memory")

#: The queues table is a tree (a ClusterQueue, then its flavors): not sortable.
QUEUE_COLUMNS = [ColumnSpec("queue", "Queue", flexible=True, min_width=12), ColumnSpec("state", "State"),
                 ColumnSpec("pending", "Pend"), ColumnSpec("admitted", "Adm")]


def _resource_rank(name: str) -> tuple[int, str]:
    if is_gpu_resource(name):
        return (0, name)
    return (RESOURCE_ORDER.index(name) if name in RESOURCE_ORDER else 9, name)


#: A first read with more pending Workloads than this shows its rows before asking for their
#: positions (one visibility API request per LocalQueue: 50 of them at 20,000 Workloads), and reads
#: the positions right after; a small queue reads both at once, so it never shows "…".
ROWS_BEFORE_POSITIONS_OVER = 2_000


@dataclass
class QueueData:
    queue_rows: list = field(default_factory=list)
    workload_rows: Sequence[Row] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    queues: dict[str, tuple[ResourceKind, str, str | None]] = field(default_factory=dict)
    workloads: Mapping[str, WorkloadView] = field(default_factory=dict)
    #: Each row's text and labels for the tables' filter.
    queue_matchable: dict[str, Matchable] = field(default_factory=dict)
    workload_matchable: Mapping[str, Matchable] = field(default_factory=dict)
    #: The workloads table's update, worked out in the worker.
    workload_plan: TablePlan | None = None
    status: str | CountedStatus = ""
    #: Rows shown before their positions were read (a large first read): read them next.
    positions_to_read: bool = False
    #: The workloads read these rows come from (told back once they are on the table).
    workloads_token: int = 0


class QueueScreen(PaneScreen):
    PANE = "queue"
    SHOWS_GPU_FAULTS = True
    PANE_TITLE = "Queue"
    TABLE_FILTER = True
    HELP = (
        "ClusterQueues (CQ) and LocalQueues (LQ) with used/nominal quota per flavor and resource, "
        "pending and admitted counts.  Below, every workload: state, its place in its LocalQueue (In line: "
        "#1 is next to be admitted; Kueue's API counts from 0, shown here from 1; ~3 means estimated from "
        "Kueue's ordering because the visibility API is unavailable), "
        "the change since it was first seen (Δ: ↑ moved forward), time in queue, priority and why it "
        "is pending (conditions, admission checks and the newest warning event).\n"
        "tab moves between the tables.  Cancel, hold and resume are confirmed after a server dry-run and "
        "written to the audit log; they are hidden in --readonly."
    )
    MUTATING_ACTIONS = frozenset({"cancel", "hold", "hold_and_drain", "resume"})
    VIEW_KINDS = (ResourceKind.CLUSTER_QUEUE, ResourceKind.LOCAL_QUEUE, ResourceKind.WORKLOAD, ResourceKind.EVENT)
    BINDINGS = [
        Binding("l", "logs", "Logs", id="queue.logs"),
        Binding("d", "describe", "Describe", id="queue.describe"),
        Binding("y", "yaml", "YAML", id="queue.yaml"),
        Binding("ctrl+d", "cancel", "Cancel wl", id="queue.cancel"),
        Binding("h", "hold", "Hold q", id="queue.hold"),
        Binding("H", "hold_and_drain", "Hold+drain q", id="queue.hold_and_drain"),
        Binding("r", "resume", "Resume q", id="queue.resume"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.data = QueueData()
        self._resources: list[str] = []
        self._positions = LocalQueuePositions()
        #: A replay's jump count when positions were last read: after a seek they are read again.
        self._replay_jumps = 0
        #: The workloads table's rows, kept between reads (a read costs what moved).
        self._workload_rows = WorkloadRows(self._positions)
        #: Whether a read was made yet: only the first may leave positions out (ROWS_BEFORE_POSITIONS_OVER).
        self._read_once = False

    def extra_signature(self) -> int:
        """A position report that came on its own thread is a change to read."""
        return self._workload_rows.background.generation

    def on_unmount(self) -> None:
        self._workload_rows.close()

    def compose_body(self) -> ComposeResult:
        yield Label(Text("Queues"), classes="section-title", id="queues-title")
        yield KeyedTable(QUEUE_COLUMNS, id="queues-table", classes="queues-table", sortable=False)
        yield Label(Text("Workloads"), classes="section-title", id="workloads-title")
        yield KeyedTable(WORKLOAD_COLUMNS, id="workloads-table")
        yield RowDetail(name_column=NAME_CELL, id="workload-detail")

    def collect(self, request: ReadRequest) -> QueueData:
        backend = self.tau.backend
        assert backend is not None
        now = self.tau.now()
        cqs: list[ClusterQueueView] = backend.cluster_queues()
        lqs: list[LocalQueueView] = backend.local_queues()
        data = QueueData()
        resources = sorted({r.name for cq in cqs for _, flavors in cq.resource_groups for fq in flavors for r in fq.resources},
                           key=_resource_rank)
        data.resources = resources
        held = {cq.name for cq in cqs if cq.stop_policy != "None"} | {f"{lq.namespace}/{lq.name}" for lq in lqs if lq.stop_policy != "None"}
        for cq in cqs:
            state = _queue_state(cq.active, cq.stop_policy)
            key = f"cq/{cq.name}"
            cq_match = (f"{cq.name} {cq.cohort or ''}", cq.labels)  # its flavor rows go with it
            data.queue_matchable[key] = cq_match
            data.queues[key] = (ResourceKind.CLUSTER_QUEUE, cq.name, None)
            cohort = f" ({cq.cohort})" if cq.cohort else ""
            data.queue_rows.append((key, [Text(f"CQ {cq.name}{cohort}", style="bold"), state,
                                          _count(cq.pending_workloads), _count(cq.admitted_workloads)] + [""] * len(resources)))
            usage = {u.flavor: u.resources for u in cq.flavors_usage}
            for _, flavors in cq.resource_groups:
                for fq in flavors:
                    used = usage.get(fq.flavor, {})
                    cells: list[Any] = [Text(f"  └ {fq.flavor}"), "", "", ""]
                    quotas = {r.name: r for r in fq.resources}
                    for res in resources:
                        if res in quotas:
                            total, borrowed = used.get(res, (0.0, 0.0))
                            cells.append(quota_bar(total, quotas[res].nominal_quota, borrowed, res))
                        else:
                            cells.append("")
                    data.queue_rows.append((f"cq/{cq.name}/{fq.flavor}", cells))
                    data.queue_matchable[f"cq/{cq.name}/{fq.flavor}"] = cq_match
        for lq in lqs:
            key = f"lq/{lq.namespace}/{lq.name}"
            data.queue_matchable[key] = (f"{lq.namespace}/{lq.name} {lq.cluster_queue}", lq.labels)
            data.queues[key] = (ResourceKind.LOCAL_QUEUE, lq.name, lq.namespace)
            cells = [Text(f"LQ {lq.namespace}/{lq.name}"), _queue_state(lq.active, lq.stop_policy),
                     _count(lq.pending_workloads), _count(lq.admitted_workloads)]
            lq_used: dict[str, float] = {}
            for u in lq.flavors_usage:
                for res, (total, _) in u.resources.items():
                    lq_used[res] = lq_used.get(res, 0.0) + total
            for res in resources:
                cells.append(Text(f"used {_quantity(lq_used[res], res)}") if res in lq_used else "")
            data.queue_rows.append((key, cells))
        # the workloads' rows and positions, kept between reads: a read costs what moved (queue_workloads.py)
        if isinstance(backend, ReplayBackend) and backend.jumps != self._replay_jumps:
            self._replay_jumps = backend.jumps
            self._positions.invalidate()  # a seek: the reports held are of another time
            self._workload_rows.forget()
        notice = request.freshness.notice(ResourceKind.WORKLOAD)
        if notice is not None:
            self._workload_rows.forget()  # no rows, or loading: never a change to go on from
        # the first list may still come in, page by page: its rows are shown, positions once it is whole
        listed = request.freshness.views.get(ResourceKind.WORKLOAD)
        syncing = listed is not None and listed.status is ViewStatus.SYNCING
        lq_names = frozenset((lq.namespace or "", lq.name) for lq in lqs)
        read = self._workload_rows.read(backend, read_place(backend), now, held, lq_names, syncing,
                                        None if self._read_once else ROWS_BEFORE_POSITIONS_OVER,
                                        request.table_states.get("workloads-table"), request.keep_reading)
        listing = syncing and bool(read.rows)
        listed_so_far = (listed.message if listed is not None else "") or "first list not finished"
        self._read_once = self._read_once or not listing
        data.positions_to_read = read.waiting_for_positions and not listing  # listing: its end moves the generation
        if read.problems:
            data.status = read.problems[0]
        data.workloads = read.views
        data.workloads_token = read.token
        data.workload_rows = read.rows
        data.workload_matchable = read.matchable
        counts = read.counts
        estimated = read.estimated
        waiting_for_positions = read.waiting_for_positions
        if backend.view_state(ResourceKind.WORKLOAD).status in (ViewStatus.FORBIDDEN, ViewStatus.NOT_INSTALLED):
            workload_summary = "not readable"  # unknown, never "0 pending"
        elif listing:  # partial counts would read as the queue's
            workload_summary = f"◌ still listing ({listed_so_far}); " \
                               f"counts and positions ({POSITION_READING}) once it is done"
        elif syncing:  # no page yet: the counts are not known, never zeros
            workload_summary = f"{STILL_LISTING} (first list not finished)"
        else:
            workload_summary = ", ".join(f"{n} {w}" for w, n in counts.items())
        views = request.freshness.views
        queues_total = count_text(len(data.queue_rows), views.get(ResourceKind.CLUSTER_QUEUE), views.get(ResourceKind.LOCAL_QUEUE))
        workloads_total = count_text(len(read.rows), listed)
        summary = (f"{count_text(len(cqs), views.get(ResourceKind.CLUSTER_QUEUE))} CQ · "
                   f"{count_text(len(lqs), views.get(ResourceKind.LOCAL_QUEUE))} LQ")
        tail = ""
        if estimated:
            tail += " · ~N: position estimated (visibility API unavailable)"
        if waiting_for_positions and not listing:
            tail += f" · {POSITION_READING} reading positions"
        # while a filter is on: how many queue and workload rows it shows, of how many
        data.status = data.status or CountedStatus((
            summary, RowCount(queues_total, "queue rows", "queues-table", only_filtered=True, prefix=" · "),
            " · workloads: ", RowCount(workloads_total, "shown", "workloads-table", only_filtered=True, suffix=" · "),
            workload_summary, tail))
        data.workload_plan = read.plan or request.plan_table("workloads-table", data.workload_rows, notice,
                                                          data.workload_matchable)
        return data

    def apply(self, data: QueueData) -> None:
        rows_came_before_positions = self.data.positions_to_read
        self.data = data
        queues = self.query_one("#queues-table", KeyedTable)
        if data.resources != self._resources:
            # The resource columns changed: rebuild the columns once.
            queues.set_columns(QUEUE_COLUMNS + [ColumnSpec(f"res:{r}", r.replace("nvidia.com/", ""), optional=True)
                                                for r in data.resources])
            self._resources = list(data.resources)
        queues.apply_rows(data.queue_rows, notice=self.freshness.notice(ResourceKind.CLUSTER_QUEUE, ResourceKind.LOCAL_QUEUE),
                          matchable=data.queue_matchable)
        workloads = self.query_one("#workloads-table", KeyedTable)
        # the positions re-order the rows: a cursor nobody moved stays on the first row, not on
        # the row it was on (now far down the list)
        keep_top = rows_came_before_positions and workloads.cursor_row == 0
        if data.workload_plan is not None:
            workloads.apply_plan(data.workload_plan)
        else:
            workloads.apply_rows(data.workload_rows, notice=self.freshness.notice(ResourceKind.WORKLOAD),
                                 matchable=data.workload_matchable)
        self._workload_rows.applied(data.workloads_token)  # the next read may go on from these rows
        if keep_top and workloads.row_count:
            workloads.move_cursor(row=0, scroll=True)
        self.set_status(data.status)
        self.call_after_refresh(self._show_workload_detail)
        if data.positions_to_read:
            self.reader.rerun = True  # the positions, right after these rows are on screen

    # -- selection helpers ----------------------------------------------------------

    def _show_workload_detail(self) -> None:
        """The selected workload whole under the table: its name, and what its row cuts or hides."""
        self.query_one("#workload-detail", RowDetail).show(self.query_one("#workloads-table", KeyedTable))

    def on_keyed_table_row_highlighted(self, event) -> None:
        if event.table.id == "workloads-table":
            self._show_workload_detail()

    def on_resize(self, event) -> None:
        super().on_resize(event)
        self.call_after_refresh(self._show_workload_detail)  # the columns fit the new width first

    def selected_workload(self) -> WorkloadView | None:
        key = self.query_one("#workloads-table", KeyedTable).selected_key
        return self.data.workloads.get(key) if key else None

    def selected_queue(self) -> tuple[ResourceKind, str, str | None] | None:
        key = self.query_one("#queues-table", KeyedTable).selected_key
        if key is None:
            return None
        if key.startswith("cq/") and key.count("/") > 1:
            key = "/".join(key.split("/")[:2])
        return self.data.queues.get(key)

    # -- actions --------------------------------------------------------------------

    async def action_logs(self) -> None:
        wl = self.selected_workload()
        if wl is None or not wl.owner_name:
            self.notify("select a workload owned by a Job or RayJob", severity="warning")
            return
        await self.tau.open_logs_for_run(f"{wl.namespace}/{wl.owner_name}")

    def action_describe(self) -> None:
        wl = self.selected_workload()
        if wl is not None:
            describe_object(self.tau, wl, yaml_view=False)

    def action_yaml(self) -> None:
        focused = self.app.focused
        if focused is not None and focused.id == "queues-table":
            queue = self.selected_queue()
            if queue is not None and self.tau.backend is not None:
                obj = self.tau.backend.get(queue[0], queue[1], queue[2])
                if obj is not None:
                    describe_object(self.tau, obj, yaml_view=True)
            return
        wl = self.selected_workload()
        if wl is not None:
            describe_object(self.tau, wl, yaml_view=True)

    def action_cancel(self) -> None:
        wl = self.selected_workload()
        if wl is None:
            self.notify("select a workload to cancel", severity="warning")
            return
        if wl.owner_kind in ("Job", "RayJob") and wl.owner_name:
            kind = ResourceKind.JOB if wl.owner_kind == "Job" else ResourceKind.RAY_JOB
            self.tau.request_mutation(cancel_mutation(self.tau, kind, wl.namespace or "", wl.owner_name))
        else:
            self.tau.request_mutation(cancel_mutation(self.tau, ResourceKind.WORKLOAD, wl.namespace or "", wl.name))

    def _stop(self, policy: StopPolicy) -> None:
        queue = self.selected_queue()
        if queue is None:
            self.notify("select a ClusterQueue or LocalQueue in the queues table", severity="warning")
            return
        self.tau.request_mutation(stop_policy_mutation(self.tau, queue[0], queue[1], queue[2], policy))

    def action_hold(self) -> None:
        self._stop("Hold")

    def action_hold_and_drain(self) -> None:
        self._stop("HoldAndDrain")

    def action_resume(self) -> None:
        self._stop("None")


def _queue_state(active: bool | None, stop_policy: str) -> Text:
    if stop_policy == "Hold":
        return status_text("held", "held")
    if stop_policy == "HoldAndDrain":
        return status_text("held", "draining")
    if active is None:
        return status_text("unknown")
    return status_text("ready", "active") if active else status_text("not ready", "inactive")


def _count(value: int | None) -> Text:
    return Text("?" if value is None else str(value))


def _quantity(value: float, resource: str) -> str:
    from tau_tui.widgets.quota_bar import human_quantity

    return human_quantity(value, resource)
