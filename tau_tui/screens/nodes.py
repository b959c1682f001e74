"""Nodes pane: per-node GPU health verdict and reason, GPUs allocated/capacity per
resource name, temperature, utilisation, ECC, recent XIDs and the agent's
heartbeat age.  Enter drills down (per-GPU rows, pods and runs, events);
cordon, uncordon and drain are previewed, confirmed and audited."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.binding import Binding

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.mutations.drain import drain_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.known_counts import CountedStatus, RowCount, count_text, counts_known
from tau_tui.screens.node_actions import request_node_change
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.node_rows import NodeRows
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable, Matchable
from tau_tui.widgets.row_detail import RowDetail
from tau_tui.widgets.table_plan import Row, TablePlan

#: At 80 columns the state columns stay (the node, its verdict, the runs it hit, Sched, Reason): the
#: telemetry goes first, utilisation first, then the GPUs; names are cut in the middle.
NODE_COLUMNS = [
    ColumnSpec("node", "Node", flexible=True, min_width=12, cut="middle"), ColumnSpec("verdict", "Health"),
    ColumnSpec("hit", "Runs hit", flexible=True, min_width=8),
    ColumnSpec("gpus", "GPUs alloc/cap", optional=True, flexible=True, min_width=8, priority=3),
    ColumnSpec("temp", "Temp", optional=True, priority=1), ColumnSpec("util", "Util", optional=True),
    ColumnSpec("ecc", "ECC d/s", optional=True, priority=1), ColumnSpec("xid", "XIDs", optional=True, priority=2),
    ColumnSpec("hb", "HB", optional=True, priority=2), ColumnSpec("sched", "Sched"),
    ColumnSpec("reason", "Reason", flexible=True, min_width=14),
]


@dataclass
class NodesData:
    rows: Sequence[Row] = field(default_factory=list)
    nodes: Mapping[str, NodeView] = field(default_factory=dict)
    #: Each row's text and labels for the table's filter.
    matchable: Mapping[str, Matchable] = field(default_factory=dict)
    #: The nodes table's update, worked out in the worker.
    plan: TablePlan | None = None
    status: str | CountedStatus = ""


class NodesScreen(PaneScreen):
    PANE = "nodes"
    PANE_TITLE = "Nodes"
    TABLE_FILTER = True
    HELP = (
        "Every node with its GPU health verdict (✓ healthy, ▲ degraded, ✗ unhealthy, ? unknown) and the "
        "reason the node agent gave.  Unknown means no report or a stale heartbeat: it is never shown as "
        "healthy.  GPUs: allocated/capacity per resource name (gpu, gpu.shared, MIG).  Temp is the hottest "
        "GPU, Util the mean, ECC volatile double/single-bit errors, XIDs the recent ones, HB the age of the "
        "agent's last heartbeat.  enter opens the node: per-GPU rows, the pods and runs on it, events.  "
        "D drains: the preview lists the pods that would be evicted and those that stay, PodDisruptionBudgets "
        "and the cluster-wide drain budget that block it, and the server dry-run; a blocked drain cannot be "
        "confirmed.  c cordons: a cordon counts against the same drain budget, previewed the same way.  u uncordons: "
        "a node whose GPUs report a fault (or whose health is unknown) asks first, naming it.  While the connection "
        "is down, verdicts read 'stale', never healthy."
    )
    MUTATING_ACTIONS = frozenset({"cordon", "uncordon", "drain"})
    VIEW_KINDS = (ResourceKind.NODE, ResourceKind.GPU_HEALTH)
    #: Pods and RayJobs name the runs a bad node hit.
    READ_KINDS = VIEW_KINDS + (ResourceKind.POD, ResourceKind.RAY_JOB)
    BINDINGS = [
        Binding("enter", "open", "Open", id="nodes.open"),
        Binding("c", "cordon", "Cordon", id="nodes.cordon"),
        Binding("u", "uncordon", "Uncordon", id="nodes.uncordon"),
        Binding("D", "drain", "Drain", id="nodes.drain"),
        Binding("d", "describe", "Describe", id="nodes.describe"),
        Binding("y", "yaml", "YAML", id="nodes.yaml"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.data = NodesData()
        self._node_rows = NodeRows()

    def compose_body(self) -> ComposeResult:
        yield KeyedTable(NODE_COLUMNS, id="nodes-table")
        yield RowDetail(id="node-detail-line")

    def collect(self, request: ReadRequest) -> NodesData:
        backend = self.tau.backend
        assert backend is not None
        # the rows kept from the last read: a read costs the nodes that changed (node_rows.py)
        notice = request.freshness.notice(ResourceKind.NODE)
        read = self._node_rows.read(backend, self.tau.node_health, self.tau.now(), self.read_freshness().stale,
                                    request.table_states.get("nodes-table"), notice, request.keep_reading)
        data = NodesData(read.rows, read.nodes, read.matchable)
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(read.counts.items())) or "none"
        listed = request.freshness.views.get(ResourceKind.NODE)  # no zeros before the node list ended
        data.status = CountedStatus((RowCount(count_text(len(data.rows), listed), "nodes", "nodes-table"), " · GPU health: "
                                     + (verdicts if counts_known(listed) else count_text(0, listed))))
        data.plan = read.plan or request.plan_table("nodes-table", data.rows, notice, data.matchable)
        self._node_rows.planned(data.plan)
        return data

    def apply(self, data: NodesData) -> None:
        self.data = data
        table = self.query_one("#nodes-table", KeyedTable)
        if data.plan is not None:
            table.apply_plan(data.plan)
        else:
            table.apply_rows(data.rows, notice=self.freshness.notice(ResourceKind.NODE), matchable=data.matchable)
        self.set_status(data.status)
        self.call_after_refresh(self._show_node_detail)

    def _show_node_detail(self) -> None:
        """The selected node whole under the table: its name, and what its row cuts or hides."""
        self.query_one("#node-detail-line", RowDetail).show(self.query_one("#nodes-table", KeyedTable))

    def on_keyed_table_row_highlighted(self, event) -> None:
        self._show_node_detail()

    def on_resize(self, event) -> None:
        super().on_resize(event)
        self.call_after_refresh(self._show_node_detail)  # the columns fit the new width first

    def selected_node(self) -> str | None:
        return self.query_one("#nodes-table", KeyedTable).selected_key

    def on_keyed_table_row_selected(self, event) -> None:
        self.action_open()

    def action_open(self) -> None:
        name = self.selected_node()
        if name:
            self.app.push_screen(NodeDetailScreen(name))

    def _mutate(self, verb: str) -> None:
        name = self.selected_node()
        if name is None:
            self.notify("select a node", severity="warning")
            return
        request_node_change(self, verb, name, self.data.nodes.get(name))

    def action_cordon(self) -> None:
        self._mutate("cordon")

    def action_uncordon(self) -> None:
        self._mutate("uncordon")

    def action_drain(self) -> None:
        name = self.selected_node()
        if name is None:
            self.notify("select a node", severity="warning")
            return
        self.tau.request_mutation(drain_mutation(self.tau, name))

    def action_describe(self) -> None:
        name = self.selected_node()
        if name and name in self.data.nodes:
            describe_object(self.tau, self.data.nodes[name], yaml_view=False)

    def action_yaml(self) -> None:
        name = self.selected_node()
        if name and name in self.data.nodes:
            describe_object(self.tau, self.data.nodes[name], yaml_view=True)
