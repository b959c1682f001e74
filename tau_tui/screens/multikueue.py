"""MultiKueue pane: the live MultiKueueReady evaluation next to what
the TauCluster condition claims; AdmissionChecks, MultiKueueConfigs and
MultiKueueClusters with their Active condition; where each MultiKueue workload
was placed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, Static

from tau_tui.core.apifields import Condition
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView, WorkloadView
from tau_tui.core.operations.live_selection import LiveSelection
from tau_tui.core.operations.multikueue import compare_with_tau_cluster, evaluate_multikueue_ready
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.known_counts import CountedStatus, RowCount
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import one_line
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.status_text import status_text, style_of


def multikueue_workloads(mk_checks: frozenset[str]) -> LiveSelection:
    """The Workloads placed on a worker or carrying one of ``mk_checks``' states, kept from the
    cache's journal: a read costs the Workloads that changed, not every one."""

    def picks(view: ObjectView) -> bool:
        return isinstance(view, WorkloadView) and bool(
            view.cluster_name or any(state.name in mk_checks for state in view.admission_checks))

    return LiveSelection(ResourceKind.WORKLOAD, picks)


def condition_cells(condition: Condition | None) -> list[Text]:
    if condition is None:
        return [status_text("Unknown", "no Active condition"), Text(""), Text("")]
    return [status_text(condition.status, f"Active={condition.status}"), Text(condition.reason), Text(one_line(condition.message, 120))]


@dataclass
class MultiKueueData:
    verdict: Text = field(default_factory=Text)
    check_rows: list = field(default_factory=list)
    config_rows: list = field(default_factory=list)
    cluster_rows: list = field(default_factory=list)
    workload_rows: list = field(default_factory=list)
    status: str | CountedStatus = ""


class MultiKueueScreen(PaneScreen):
    PANE = "multikueue"
    PANE_TITLE = "MultiKueue"
    HELP = (
        "'W' opens the setup wizard and 'C' the drain checklist (also :mk setup, :mk drain, "
        ":mk rotate WORKER NEW_CONTEXT; after a drain :mk setup re-enables).  'live' is MultiKueueReady "
        "recomputed now from what this manager sees: an "
        "AdmissionCheck with controllerName kueue.x-k8s.io/multikueue that is Active, whose parameters "
        "name a readable MultiKueueConfig, with at least one Active MultiKueueCluster.  'TauCluster says' is "
        "the controller's condition; a disagreement is flagged.  Below: every AdmissionCheck, "
        "MultiKueueConfig and MultiKueueCluster with its Active condition, and every MultiKueue workload "
        "with the worker it was placed on."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("W", "wizard('setup')", "Setup wizard", id="multikueue.setup"),
        Binding("C", "wizard('drain')", "Drain checklist", id="multikueue.drain"),
    ]

    def action_wizard(self, flow: str) -> None:
        self.tau.open_multikueue_flow(flow, [])
    VIEW_KINDS = (ResourceKind.ADMISSION_CHECK, ResourceKind.MULTIKUEUE_CONFIG, ResourceKind.MULTIKUEUE_CLUSTER,
                  ResourceKind.WORKLOAD)

    def __init__(self) -> None:
        super().__init__()
        self._mk_workloads: tuple[frozenset[str], LiveSelection] | None = None

    def compose_body(self) -> ComposeResult:
        yield Static(Text("evaluating…"), id="mk-verdict")
        yield Label(Text("AdmissionChecks"), classes="section-title")
        # at 80 columns the name, Active and its reason stay; the message shrinks
        yield KeyedTable([ColumnSpec("name", "Name", flexible=True, min_width=12, cut="middle"),
                          ColumnSpec("controller", "Controller", optional=True), ColumnSpec("active", "Active"),
                          ColumnSpec("reason", "Reason", flexible=True, min_width=8),
                          ColumnSpec("message", "Message", flexible=True, min_width=8),
                          ColumnSpec("params", "Parameters", optional=True, flexible=True, min_width=8)], id="mk-checks")
        yield Label(Text("MultiKueueConfigs and MultiKueueClusters"), classes="section-title")
        yield KeyedTable([ColumnSpec("name", "Name", flexible=True, min_width=12, cut="middle"),
                          ColumnSpec("kind", "Kind", optional=True), ColumnSpec("active", "Active"),
                          ColumnSpec("reason", "Reason", flexible=True, min_width=8),
                          ColumnSpec("message", "Message / clusters", flexible=True, min_width=8)], id="mk-clusters")
        yield Label(Text("MultiKueue workloads"), classes="section-title")
        yield KeyedTable([ColumnSpec("name", "Workload", flexible=True, min_width=16, cut="middle"),
                          ColumnSpec("queue", "Queue", optional=True, priority=1),
                          ColumnSpec("check", "Check state", flexible=True, min_width=10),
                          ColumnSpec("worker", "Placed on", flexible=True, min_width=8, cut="middle"),
                          ColumnSpec("nominated", "Nominated", optional=True)], id="mk-workloads")

    def collect(self, request: ReadRequest) -> MultiKueueData:
        backend = self.tau.backend
        assert backend is not None
        data = MultiKueueData()
        checks = backend.admission_checks()
        configs_state = backend.view_state(ResourceKind.MULTIKUEUE_CONFIG)
        clusters_state = backend.view_state(ResourceKind.MULTIKUEUE_CLUSTER)
        configs = backend.multikueue_configs() if configs_state.status is not ViewStatus.FORBIDDEN else None
        clusters = backend.multikueue_clusters() if clusters_state.status is not ViewStatus.FORBIDDEN else None
        live = evaluate_multikueue_ready(checks, configs, clusters)
        comparison = compare_with_tau_cluster(live, backend.tau_cluster())
        verdict = Text()
        if self.read_freshness().stale:
            verdict.append("⚠ computed from stale data  ", style=style_of("warning"))
        verdict.append("MultiKueueReady  live: ", style="bold")
        verdict.append_text(status_text(live.status, f"{live.status} ({live.reason})"))
        verdict.append(f"  {live.message}\n")
        verdict.append("TauCluster says: ", style="bold")
        claimed = comparison.claimed
        if claimed is None:
            verdict.append_text(status_text("Unknown", "no condition"))
        else:
            verdict.append_text(status_text(claimed.status, f"{claimed.status} ({claimed.reason})"))
            verdict.append(f"  {one_line(claimed.message, 120)}")
        verdict.append("\n")
        agree_word = "done" if comparison.agrees and comparison.claimed_current else "warning"
        verdict.append(f"{'✓' if agree_word == 'done' else '⚠'} {comparison.summary}", style=style_of(agree_word))
        data.verdict = verdict
        f = request.row_filter
        for check in checks:
            if not f.matches(f"{check.name} {check.controller_name}", check.labels):
                continue
            params = check.parameters or {}
            ptext = f"{params.get('kind', '?')}/{params.get('name', '?')}" if params else "—"
            data.check_rows.append((check.name, [Text(check.name), Text(check.controller_name),
                                                 *condition_cells(check.condition("Active")), Text(ptext)]))
        for config in configs or ():
            if not f.matches(config.name, config.labels):
                continue
            data.config_rows.append((f"config/{config.name}", [Text(config.name), Text("MultiKueueConfig"),
                                                                Text("–"), Text(""), Text("clusters: " + (", ".join(config.clusters) or "none"))]))
        if configs is None:
            data.config_rows.append(("config/forbidden", [Text("—"), Text("MultiKueueConfig"), status_text("unknown"), Text(""),
                                                          Text(configs_state.message or "not readable")]))
        for cluster in clusters or ():
            if not f.matches(cluster.name, cluster.labels):
                continue
            cells = condition_cells(cluster.condition("Active"))
            data.config_rows.append((f"cluster/{cluster.name}", [Text(cluster.name), Text("MultiKueueCluster"), *cells]))
        mk_checks = frozenset(c.name for c in checks if c.is_multikueue)
        if self._mk_workloads is None or self._mk_workloads[0] != mk_checks:
            self._mk_workloads = (mk_checks, multikueue_workloads(mk_checks))
        placed = 0  # MultiKueue workloads, the filter's or not
        for wl in self._mk_workloads[1].current(backend):
            assert isinstance(wl, WorkloadView)
            states = [c for c in wl.admission_checks if c.name in mk_checks]
            if not states and not wl.cluster_name:
                continue
            placed += 1
            key = f"{wl.namespace}/{wl.name}"
            if not f.matches(key, wl.labels):
                continue
            check_text = ", ".join(f"{c.name}={c.state}" for c in states) or "—"
            data.workload_rows.append((key, [Text(key), Text(wl.queue_name or "—"), Text(check_text),
                                             Text(wl.cluster_name or "not placed"),
                                             Text(", ".join(wl.nominated_cluster_names) or "—")]))
        data.status = CountedStatus((f"{len(checks)} AdmissionChecks ({len(mk_checks)} MultiKueue) · "
                                     f"{len(configs or ())} configs · {len(clusters or ())} clusters · {placed} workloads",
                                     RowCount(str(f.tally[0]), "rows shown", only_filtered=True, prefix=" · ")))
        return data

    def apply(self, data: MultiKueueData) -> None:
        self.query_one("#mk-verdict", Static).update(data.verdict)
        fresh = self.freshness
        self.query_one("#mk-checks", KeyedTable).apply_rows(data.check_rows, notice=fresh.notice(ResourceKind.ADMISSION_CHECK))
        self.query_one("#mk-clusters", KeyedTable).apply_rows(
            data.config_rows + data.cluster_rows,
            notice=fresh.notice(ResourceKind.MULTIKUEUE_CONFIG, ResourceKind.MULTIKUEUE_CLUSTER))
        self.query_one("#mk-workloads", KeyedTable).apply_rows(data.workload_rows, notice=fresh.notice(ResourceKind.WORKLOAD))
        self.set_status(data.status)
