"""Nodes pane: per-node GPU health verdict and reason, GPUs allocated/capacity per
resource name, temperature, utilisation, ECC, recent XIDs and the agent's
heartbeat age.  Enter drills down (per-GPU rows, pods and runs, events);
cordon, uncordon and drain are previewed, confirmed and audited."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding

from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.operations.gpufaults import runs_hit_by_node
from tau_tui.mutations.cluster_changes import node_mutation
from tau_tui.mutations.drain import drain_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.known_counts import count_text, counts_known
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import age, one_line
from tau_tui.widgets.keyed_table import KeyedTable, Matchable
from tau_tui.widgets.node_cells import gpu_summary, telemetry_summary, verdict_cell_for
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_plan import TablePlan


@dataclass
class NodesData:
    rows: list = field(default_factory=list)
    nodes: dict[str, NodeView] = field(default_factory=dict)
    #: Each row's text and labels for the table's filter.
    matchable: dict[str, Matchable] = field(default_factory=dict)
    #: The nodes table's update, worked out in the worker.
    plan: TablePlan | None = None
    status: str = ""


def filter_text(name: str, health, stale: bool) -> str:
    """What ``/`` matches for a node: its name, the verdict word as shown, and the reason only when
    it explains a problem.  A healthy node's reason is negative text ("NoUnhealthyGPUs: no unhealthy
    GPU") that ``/unhealthy`` would otherwise match on every healthy node (issue #11)."""
    if health is None:
        return f"{name} no GPUs"
    word = "unknown stale" if stale and health.verdict is Verdict.HEALTHY else health.verdict.value
    if health.verdict is Verdict.HEALTHY:
        return f"{name} {word}"
    return f"{name} {word} {health.reason} {health.message or ''}"


def runs_hit_cell(runs: list[str]) -> Text:
    """``✗ 2: team/a, team/b`` (the first two named; the drill-down and /filter find the rest)."""
    if not runs:
        return Text("—")
    shown = ", ".join(runs[:2]) + (f", +{len(runs) - 2}" if len(runs) > 2 else "")
    return Text(f"✗ {len(runs)}: {shown}", style="bold")


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
        "confirmed.  While the connection is down, verdicts read 'stale', never healthy."
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

    def compose_body(self) -> ComposeResult:
        yield KeyedTable(
            [("node", "Node"), ("verdict", "Health"), ("hit", "Runs hit"), ("gpus", "GPUs alloc/cap"), ("temp", "Temp"), ("util", "Util"),
             ("ecc", "ECC d/s"), ("xid", "XIDs"), ("hb", "HB"), ("sched", "Sched"), ("reason", "Reason")],
            id="nodes-table",
        )

    def collect(self, request: ReadRequest) -> NodesData:
        backend = self.tau.backend
        assert backend is not None
        now = self.tau.now()
        stale = self.read_freshness().stale
        data = NodesData()
        counts: dict[str, int] = {}
        rank = {None: 9, Verdict.UNHEALTHY: 0, Verdict.UNKNOWN: 1, Verdict.DEGRADED: 2, Verdict.HEALTHY: 3}
        items = []
        nodes = backend.nodes()
        memo = self.tau.node_health
        hit = runs_hit_by_node(backend.pods(), backend.ray_jobs(), memo.faults(nodes, now))
        for count, node in enumerate(nodes):
            if count % 256 == 0:
                request.keep_reading()
            health = memo.view(node, now)
            verdict = health.verdict if health else None
            data.matchable[node.name] = (f"{filter_text(node.name, health, stale)} {' '.join(hit.get(node.name, ()))}",
                                         node.labels)
            items.append((rank[verdict], node.name, node, health))
        for _, name, node, health in sorted(items, key=lambda i: (i[0], i[1])):
            data.nodes[name] = node
            if health is None:
                verdict_cell, reason, hb = Text("– no GPUs"), "", "—"
                temp = util = ecc = xids = "—"
            else:
                word = "unknown" if stale and health.verdict is Verdict.HEALTHY else health.verdict.value
                counts[word] = counts.get(word, 0) + 1
                verdict_cell = verdict_cell_for(health.verdict.value, stale)
                reason = one_line(f"{health.reason}: {health.message}" if health.message else health.reason, 80)
                hb = age((now - health.last_heartbeat).total_seconds()) if health.last_heartbeat else "never"
                temp, util, ecc, xids = telemetry_summary(health.detail)
            sched = status_text("cordoned") if node.unschedulable else Text("schedulable" if node.ready else "✗ NotReady")
            data.rows.append((name, [name, verdict_cell, runs_hit_cell(hit.get(name, [])), gpu_summary(node),
                                     temp, util, ecc, xids, hb, sched, reason]))
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "none"
        listed = request.freshness.views.get(ResourceKind.NODE)  # no zeros before the node list ended
        data.status = (f"{count_text(len(data.rows), listed)} nodes · GPU health: "
                       + (verdicts if counts_known(listed) else count_text(0, listed)))
        data.plan = request.plan_table("nodes-table", data.rows, request.freshness.notice(ResourceKind.NODE),
                                    data.matchable)
        return data

    def apply(self, data: NodesData) -> None:
        self.data = data
        table = self.query_one("#nodes-table", KeyedTable)
        if data.plan is not None:
            table.apply_plan(data.plan)
        else:
            table.apply_rows(data.rows, notice=self.freshness.notice(ResourceKind.NODE), matchable=data.matchable)
        self.set_status(data.status)

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
        self.tau.request_mutation(node_mutation(self.tau, verb, name))

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
