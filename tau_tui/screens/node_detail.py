"""Node drill-down (from the nodes pane): per-GPU rows, the pods and runs using
the node's GPUs, and the node's events.  Same verbs as the nodes pane."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.cluster.view_types import EventView, NodeView, ObjectView, PodView
from tau_tui.core.operations.live_selection import LiveSelection
from tau_tui.mutations.drain import drain_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.node_actions import request_node_change
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import one_line, since
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.node_cells import gpu_summary, node_health, verdict_cell_for
from tau_tui.widgets.status_text import status_text


@dataclass
class NodeDetailData:
    title: str = ""
    gpu_rows: list = field(default_factory=list)
    pod_rows: list = field(default_factory=list)
    event_rows: list = field(default_factory=list)
    found: bool = True
    #: One line per GPU problem: what to do, and why the verdict is what it is (latched or not).
    advice: list[str] = field(default_factory=list)


def _pct(value: float | int | None, unit: str = "%") -> str:
    return "—" if value is None else f"{value:.0f}{unit}"


class NodeDetailScreen(PaneScreen):
    PANE = "nodes"
    PANE_TITLE = "Node"
    FILTERS_ROWS = False
    HELP = (
        "One node.  GPUs: each GPU's verdict and reasons (from the node agent), utilisation, memory, "
        "temperature and ECC; '—' means the agent did not report it.  Pods: every pod on the node that "
        "requests a GPU resource, with the run (Job/RayJob) that owns it.  Events: the node's recent events. "
        "esc goes back to the nodes list."
    )
    MUTATING_ACTIONS = frozenset({"cordon", "uncordon", "drain"})
    VIEW_KINDS = (ResourceKind.NODE, ResourceKind.GPU_HEALTH, ResourceKind.POD, ResourceKind.EVENT)
    BINDINGS = [
        Binding("c", "cordon", "Cordon", id="node.cordon"),
        Binding("u", "uncordon", "Uncordon", id="node.uncordon"),
        Binding("D", "drain", "Drain", id="node.drain"),
        Binding("l", "logs", "Pod logs", id="node.logs"),
        Binding("y", "yaml", "YAML", id="node.yaml"),
    ]

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node_name = node
        self.data = NodeDetailData()
        # the node's pods and events, kept from the cache's journal: a read costs what changed
        self._node_pods = LiveSelection(ResourceKind.POD, self._on_node)
        self._node_events = LiveSelection(ResourceKind.EVENT, self._about_node)

    def _on_node(self, view: ObjectView) -> bool:
        return isinstance(view, PodView) and view.node_name == self.node_name

    def _about_node(self, view: ObjectView) -> bool:
        return isinstance(view, EventView) and view.involved_kind == "Node" and view.involved_name == self.node_name

    def crumbs(self) -> str:
        return f"Nodes › {self.node_name}"

    def compose_body(self) -> ComposeResult:
        yield Label(Text(f"node {self.node_name}"), id="node-title", classes="section-title")
        yield Label(Text(""), id="node-advice")
        # at 80 columns each GPU's verdict and reasons stay; the model and telemetry go first
        yield KeyedTable([ColumnSpec("gpu", "GPU"), ColumnSpec("name", "Model", optional=True, flexible=True, min_width=8),
                          ColumnSpec("verdict", "Health"), ColumnSpec("reasons", "Reasons", flexible=True, min_width=16),
                          ColumnSpec("util", "Util", optional=True, priority=1), ColumnSpec("mem", "Mem", optional=True, priority=1),
                          ColumnSpec("temp", "Temp", optional=True, priority=2), ColumnSpec("ecc", "ECC d/s", optional=True, priority=2)],
                         id="gpus-table")
        yield Label(Text("Pods using GPUs on this node"), classes="section-title")
        yield KeyedTable([ColumnSpec("pod", "Pod", flexible=True, min_width=16, cut="middle"),
                          ColumnSpec("run", "Run", flexible=True, min_width=12, cut="middle"), ColumnSpec("gpus", "GPUs"),
                          ColumnSpec("phase", "Phase"), ColumnSpec("age", "Age", optional=True)], id="pods-table")
        yield Label(Text("Events"), classes="section-title")
        yield KeyedTable([ColumnSpec("type", "Type"), ColumnSpec("reason", "Reason", flexible=True, min_width=10),
                          ColumnSpec("message", "Message", flexible=True, min_width=16), ColumnSpec("age", "Age")],
                         id="events-table")

    def collect(self, request: ReadRequest) -> NodeDetailData:
        backend = self.tau.backend
        assert backend is not None
        now = self.tau.now()
        stale = self.read_freshness().stale
        node = backend.get(ResourceKind.NODE, self.node_name)
        data = NodeDetailData()
        if not isinstance(node, NodeView):
            data.found = False
            data.title = f"node {self.node_name} not found (deleted?)"
            return data
        health = node_health(node, now)
        sched = "cordoned" if node.unschedulable else "schedulable"
        data.title = f"node {node.name} · {gpu_summary(node)} · {sched}"
        if health is not None:
            shown = verdict_cell_for(health.verdict.value, stale).plain[2:]
            data.title += f" · health {shown}: {health.reason}"
            detail = health.detail
            for gpu in detail.gpus if detail else []:
                t = gpu.telemetry
                reasons = "; ".join(f"{r.code} ({r.action.value}{', latched' if r.latched else ''}): {r.message}"
                                    for r in gpu.reasons) or "—"
                data.advice += [f"gpu{gpu.index} {r.explain()}" for r in gpu.reasons]
                mem = "—"
                if t and t.memory_used_bytes is not None and t.memory_total_bytes:
                    mem = f"{t.memory_used_bytes / t.memory_total_bytes * 100:.0f}%"
                ecc = "—" if not t or (t.ecc_volatile_dbe is None and t.ecc_volatile_sbe is None) else f"{t.ecc_volatile_dbe or 0}/{t.ecc_volatile_sbe or 0}"
                data.gpu_rows.append((str(gpu.index), [
                    Text(f"gpu{gpu.index}"), Text(gpu.name or "—"), verdict_cell_for(gpu.verdict.value, stale), Text(one_line(reasons, 120)),
                    Text(_pct(t.utilization_gpu if t else None)), Text(mem), Text(_pct(t.temperature_c if t else None, "°C")),
                    Text(ecc),
                ]))
            others = [src for src in health.sources if src.source != "tau-agent"]
            if detail is None and not others:
                data.gpu_rows.append(("none", [Text("—"), Text("no per-GPU report"), verdict_cell_for(health.verdict.value, stale),
                                               Text(one_line(health.message, 120)), "", "", "", ""]))
            for src in others:  # conditions of TauGrid's NPD, its collector, GKE, AKS: one row per writer
                data.gpu_rows.append((f"source-{src.source}", [
                    Text("node"), Text(src.label), verdict_cell_for(src.verdict.value, stale or src.stale),
                    Text(one_line(src.message, 120)), "", "", "", ""]))
        for pod in self._node_pods.current(backend):
            assert isinstance(pod, PodView)
            gpus = {k: v for k, v in pod.requests.items() if is_gpu_resource(k)}
            if not gpus:
                continue
            run = pod.labels.get("job-name") or pod.labels.get("ray.io/cluster") or (pod.controller_owner or {}).get("name", "—")
            key = f"{pod.namespace}/{pod.name}"
            data.pod_rows.append((key, [Text(key), Text(f"{pod.namespace}/{run}"),
                                        Text(" ".join(f"{v:g} {k.replace('nvidia.com/', '')}" for k, v in sorted(gpus.items()))),
                                        Text(pod.phase), Text(since(pod.creation_timestamp, now))]))
        events = [e for e in self._node_events.current(backend) if isinstance(e, EventView)]
        events.sort(key=lambda e: e.last_timestamp or e.creation_timestamp or now, reverse=True)
        for e in events[:50]:
            data.event_rows.append((e.uid or e.name, [status_text("warning" if e.type == "Warning" else "done", e.type),
                                                      Text(e.reason), Text(one_line(e.message, 160)),
                                                      Text(since(e.last_timestamp or e.creation_timestamp, now))]))
        return data

    def apply(self, data: NodeDetailData) -> None:
        self.data = data
        self.query_one("#node-title", Label).update(Text(data.title, style="bold"))
        advice = self.query_one("#node-advice", Label)
        advice.update(Text("\n".join(data.advice)))
        advice.display = bool(data.advice)
        fresh = self.freshness
        self.query_one("#gpus-table", KeyedTable).apply_rows(data.gpu_rows, notice=fresh.notice(ResourceKind.NODE))
        self.query_one("#pods-table", KeyedTable).apply_rows(data.pod_rows, notice=fresh.notice(ResourceKind.POD))
        self.query_one("#events-table", KeyedTable).apply_rows(data.event_rows, notice=fresh.notice(ResourceKind.EVENT))
        self.set_status(f"{sum(not key.startswith('source-') for key, _ in data.gpu_rows)} GPUs · {len(data.pod_rows)} pods · {len(data.event_rows)} events")

    def _mutate(self, verb: str) -> None:
        backend = self.tau.backend
        node = backend.get(ResourceKind.NODE, self.node_name) if backend else None
        request_node_change(self, verb, self.node_name, node if isinstance(node, NodeView) else None)

    def action_cordon(self) -> None:
        self._mutate("cordon")

    def action_uncordon(self) -> None:
        self._mutate("uncordon")

    def action_drain(self) -> None:
        self.tau.request_mutation(drain_mutation(self.tau, self.node_name))

    async def action_logs(self) -> None:
        key = self.query_one("#pods-table", KeyedTable).selected_key
        if key is None:
            self.notify("select a pod in the pods table", severity="warning")
            return
        cells = self.query_one("#pods-table", KeyedTable).cells_of(key)
        run = cells[1].plain if cells else key
        await self.tau.open_logs_for_run(run, pod=key.rpartition("/")[2])  # this pod's log, not the run's

    def action_yaml(self) -> None:
        backend = self.tau.backend
        node = backend.get(ResourceKind.NODE, self.node_name) if backend else None
        if isinstance(node, NodeView):
            describe_object(self.tau, node, yaml_view=True)
