"""Queue pane: ClusterQueues and LocalQueues with quota bars, and the workloads
table with live position, its change, time in queue, priority and why pending."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import StopPolicy
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.cluster.positions import CachedPositions, LocalQueuePositions, PendingPosition
from tau_tui.core.cluster.view_types import ClusterQueueView, EventView, LocalQueueView, WorkloadView
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.mutations.cluster_changes import cancel_mutation, stop_policy_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.widgets.cell_text import age, delta, one_line
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable, Matchable
from tau_tui.widgets.quota_bar import quota_bar
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_plan import TablePlan

RESOURCE_ORDER = ("nvidia.com/gpu", "cpu", "memory")

_NO_TIME = datetime.min.replace(tzinfo=UTC)
#: The queues table is a tree (a ClusterQueue, then its flavors): not sortable.
QUEUE_COLUMNS = [ColumnSpec("queue", "Queue", flexible=True, min_width=12), ColumnSpec("state", "State"),
                 ColumnSpec("pending", "Pend"), ColumnSpec("admitted", "Adm")]
#: shift+letter sorts (k9s); at narrow widths the optional ones go first, so state, place in line,
#: name and why pending stay on screen at 80 columns.
WORKLOAD_COLUMNS = [
    ColumnSpec("state", "State", "S"), ColumnSpec("pos", "In line", "P"), ColumnSpec("delta", "Δ", optional=True),
    ColumnSpec("name", "Workload", "N", flexible=True, min_width=16), ColumnSpec("queue", "Queue", "Q", optional=True),
    ColumnSpec("waiting", "Waiting", "A", optional=True), ColumnSpec("prio", "Prio", "O", optional=True),
    ColumnSpec("why", "Why pending", "W", flexible=True, min_width=12),
]

#: Where the cells that move without their Workload changing are in a row.
_CELL_OF = {column.key: index for index, column in enumerate(WORKLOAD_COLUMNS)}
POS_CELL, DELTA_CELL, WAITING_CELL = _CELL_OF["pos"], _CELL_OF["delta"], _CELL_OF["waiting"]


def _resource_rank(name: str) -> tuple[int, str]:
    if is_gpu_resource(name):
        return (0, name)
    return (RESOURCE_ORDER.index(name) if name in RESOURCE_ORDER else 9, name)


def why_pending(wl: WorkloadView, events: list[EventView], held: set[str]) -> str:
    """One line from the conditions, admission checks and the newest warning event."""
    if wl.status_word in ("admitted", "finished"):
        return ""
    if not wl.active:
        return "deactivated (spec.active=false)"
    parts = []
    if wl.cluster_queue in held or (wl.queue_name and f"{wl.namespace}/{wl.queue_name}" in held):
        parts.append("queue is held (stopPolicy)")
    evicted = wl.condition("Evicted")
    if evicted is not None and evicted.is_true:
        parts.append(f"evicted {evicted.reason}: {evicted.message}")
    reserved = wl.condition("QuotaReserved")
    if reserved is not None and not reserved.is_true and reserved.message:
        parts.append(reserved.message)
    for check in wl.admission_checks:
        if check.state != "Ready":
            parts.append(f"check {check.name} {check.state}" + (f": {check.message}" if check.message else ""))
    if wl.status_word == "quotaReserved" and not parts:
        parts.append("quota reserved; waiting for admission checks")
    warnings = [e for e in events if e.involved_name == wl.name and e.type == "Warning"]
    if warnings:
        # An event with no timestamp at all sorts first rather than failing the comparison.
        newest = max(warnings, key=lambda e: e.last_timestamp or e.creation_timestamp or wl.creation_timestamp or _NO_TIME)
        parts.append(f"event {newest.reason}: {newest.message}")
    return one_line("; ".join(parts) or "waiting for quota")


#: A first read with more pending Workloads than this shows its rows before asking for their
#: positions (one visibility API request per LocalQueue: 50 of them at 20,000 Workloads), and reads
#: the positions right after; a small queue reads both at once, so it never shows "…".
ROWS_BEFORE_POSITIONS_OVER = 2_000
#: What the "In line" column shows while the positions are being read.
POSITION_READING = "…"


@dataclass
class QueueData:
    queue_rows: list = field(default_factory=list)
    workload_rows: list = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    queues: dict[str, tuple[ResourceKind, str, str | None]] = field(default_factory=dict)
    workloads: dict[str, WorkloadView] = field(default_factory=dict)
    #: Each row's text and labels for the tables' filter.
    queue_matchable: dict[str, Matchable] = field(default_factory=dict)
    workload_matchable: dict[str, Matchable] = field(default_factory=dict)
    #: The workloads table's update, worked out in the worker.
    workload_plan: TablePlan | None = None
    status: str = ""
    #: Rows shown before their positions were read (a large first read): read them next.
    positions_to_read: bool = False


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
        #: key -> (what the row was built from, its cells, its filter text): unchanged workloads keep
        #: their cells object.
        self._row_cache: dict[str, tuple[tuple, list, str]] = {}
        #: Whether a read was made yet: only the first may leave positions out (ROWS_BEFORE_POSITIONS_OVER).
        self._read_once = False

    def compose_body(self) -> ComposeResult:
        yield Label(Text("Queues"), classes="section-title", id="queues-title")
        yield KeyedTable(QUEUE_COLUMNS, id="queues-table", classes="queues-table", sortable=False)
        yield Label(Text("Workloads"), classes="section-title", id="workloads-title")
        yield KeyedTable(WORKLOAD_COLUMNS, id="workloads-table")

    def collect(self) -> QueueData:
        backend = self.tau.backend
        assert backend is not None
        now = self.tau.now()
        cqs: list[ClusterQueueView] = backend.cluster_queues()
        lqs: list[LocalQueueView] = backend.local_queues()
        workloads: list[WorkloadView] = backend.workloads()
        data = QueueData()
        order = {"pending": 0, "quotaReserved": 1, "admitted": 2, "finished": 3}
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
        # positions: one report per LocalQueue with pending work, re-read only when that queue changed
        if isinstance(backend, ReplayBackend) and backend.jumps != self._replay_jumps:
            self._replay_jumps = backend.jumps
            self._positions.invalidate()  # a seek: the reports held are of another time
        lq_names = {(lq.namespace or "", lq.name) for lq in lqs}
        pending_by_queue: dict[tuple[str, str], list[WorkloadView]] = {}
        counts = {word: 0 for word in order}
        for w in workloads:
            if w.status_word in counts:
                counts[w.status_word] += 1
            if w.status_word == "pending":
                queue = (w.namespace or "", w.queue_name or "")
                if queue in lq_names:
                    pending_by_queue.setdefault(queue, []).append(w)
        # the first list still comes in, page by page: its rows are shown, positions once it is whole
        listed = self.collect_freshness.views.get(ResourceKind.WORKLOAD)
        listing = listed is not None and listed.status is ViewStatus.SYNCING and bool(workloads)
        listed_so_far = (listed.message if listed is not None else "") or "first list not finished"
        waiting_for_positions = listing or (not self._read_once and sum(
            len(queued) for queued in pending_by_queue.values()) > ROWS_BEFORE_POSITIONS_OVER)
        self._read_once = self._read_once or not listing
        reports: dict[tuple[str, str], CachedPositions] = {}
        problems: list[str] = []
        if waiting_for_positions:
            data.positions_to_read = not listing  # listing: the list's end moves the generation
        else:
            reports, problems = self._positions.update(pending_by_queue, backend.pending_positions_local_queue)
        if problems:
            data.status = problems[0]
        estimated = any(r.report.estimated for r in reports.values())
        warnings: dict[tuple[str, str], EventView] = {}
        for e in backend.events():
            if e.involved_kind == "Workload" and e.type == "Warning":
                warning_key = (e.namespace or "", e.involved_name)
                have = warnings.get(warning_key)
                stamp = e.last_timestamp or e.creation_timestamp
                have_stamp = (have.last_timestamp or have.creation_timestamp) if have is not None else None
                if have is None or (stamp is not None and (have_stamp is None or stamp > have_stamp)):
                    warnings[warning_key] = e  # the newest warning per workload

        def entry_of(w: WorkloadView) -> PendingPosition | None:
            cached = reports.get((w.namespace or "", w.queue_name or ""))
            return cached.by_name.get(w.name) if cached is not None else None

        def position(w: WorkloadView) -> int:
            entry = entry_of(w)
            return entry.position_in_local_queue if entry and entry.position_in_local_queue is not None else 1 << 30

        previous = self._row_cache
        rows_cache: dict[str, tuple[tuple, list, str]] = {}
        for index, wl in enumerate(sorted(workloads, key=lambda w: (order.get(w.status_word, 9), w.namespace or "",
                                                                     w.queue_name or "", position(w), w.name))):
            if index % 512 == 0:
                self.keep_reading()
            key = f"{wl.namespace}/{wl.name}"
            data.workloads[key] = wl
            entry = entry_of(wl)
            cached_report = reports.get((wl.namespace or "", wl.queue_name or ""))
            pos = ""
            change = ""
            if entry is not None and entry.position_in_local_queue is not None:
                pos = display_position(entry.position_in_local_queue, bool(cached_report and cached_report.report.estimated))
                history = backend.position_history(wl.namespace or "", wl.name)
                change = delta(history.change if history else None)
            elif waiting_for_positions and wl.status_word == "pending":
                pos = POSITION_READING
            waiting = ""
            if wl.status_word in ("pending", "quotaReserved") and wl.queue_order_timestamp is not None:
                waiting = age((now - wl.queue_order_timestamp).total_seconds())
            is_held = wl.cluster_queue in held or bool(wl.queue_name and f"{wl.namespace}/{wl.queue_name}" in held)
            warning = warnings.get((wl.namespace or "", wl.name))
            inputs = (wl, pos, change, waiting, is_held, warning)
            hit = previous.get(key)
            if hit is not None and hit[0][0] is wl and hit[0][5] is warning and hit[0][4] == is_held:
                cells, row_text = hit[1], hit[2]
                if hit[0][1:4] != inputs[1:4]:
                    # only the place in line or the time waited moved (every pending row's age, once a
                    # minute): those cells are new, the others the same objects, so the table compares
                    # and redraws only them
                    cells = list(cells)
                    cells[POS_CELL], cells[DELTA_CELL], cells[WAITING_CELL] = pos, change, waiting
            else:
                row_text = f"{wl.namespace}/{wl.name} {wl.queue_name} {wl.status_word} {wl.owner_name or ''}"
                prio = f"{wl.effective_priority}" + (f" {wl.priority_class}" if wl.priority_class else "")
                cells = [status_text(wl.status_word), pos, change, key, wl.queue_name or "—",
                         waiting, prio, why_pending(wl, [warning] if warning else [], held)]
            rows_cache[key] = (inputs, cells, row_text)
            data.workload_rows.append((key, cells))
            data.workload_matchable[key] = (row_text, wl.labels)
        self._row_cache = rows_cache
        if backend.view_state(ResourceKind.WORKLOAD).status in (ViewStatus.FORBIDDEN, ViewStatus.NOT_INSTALLED):
            workload_summary = "not readable"  # unknown, never "0 pending"
        elif listing:  # partial counts would read as the queue's
            workload_summary = f"◌ still listing ({listed_so_far}); " \
                               f"counts and positions ({POSITION_READING}) once it is done"
        else:
            workload_summary = ", ".join(f"{n} {w}" for w, n in counts.items())
        summary = f"{len(cqs)} CQ · {len(lqs)} LQ · workloads: " + workload_summary
        if estimated:
            summary += " · ~N: position estimated (visibility API unavailable)"
        if waiting_for_positions and not listing:
            summary += f" · {POSITION_READING} reading positions"
        data.status = data.status or summary
        data.workload_plan = self.plan_table("workloads-table", data.workload_rows,
                                             self.collect_freshness.notice(ResourceKind.WORKLOAD), data.workload_matchable)
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
        if keep_top and workloads.row_count:
            workloads.move_cursor(row=0, scroll=True)
        self.set_status(data.status)
        if data.positions_to_read:
            self._rerun = True  # the positions, right after these rows are on screen

    # -- selection helpers ----------------------------------------------------------

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


def display_position(position: int, estimated: bool) -> str:
    """Kueue's 0-based position as people read it: ``#1`` is next; ``~1`` when estimated."""
    return f"{'~' if estimated else '#'}{position + 1}"


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
