"""Workspaces pane (`:workspaces`): every TauWorkspace of the system namespace (taugrid.md §4.2) with
its phase and conditions, the primary one marked, the namespace, queue and defaults it gives a run.

Fed by the cache's TauWorkspace watch (listed in the system namespace whatever namespace the session
reads).  Fails closed: a workspace is ✓ Ready only when its phase is Ready, RBACReady and QueueReady
are True, no drift is detected and its status is current; otherwise ✗ with every reason."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import TauWorkspaceView
from tau_tui.core.runconfig.workspace import CONDITION_TYPES, SYSTEM_NAMESPACE, WorkspaceDefaults
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import since
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.status_text import status_text, style_of

PHASE_WORDS = {"Ready": "ready", "Degraded": "degraded", "Pending": "pending"}
SHORT_NAMES = {"RBACReady": "RBAC", "QueueReady": "QueueOK", "WorkloadIdentityReady": "Identity", "DriftDetected": "Drift"}


@dataclass
class WorkspacesData:
    rows: list = field(default_factory=list)
    workspaces: dict[str, tuple[TauWorkspaceView, WorkspaceDefaults]] = field(default_factory=dict)
    status: str = ""


def condition_cell(ws: WorkspaceDefaults, type_: str) -> Text:
    """A condition's cell: DriftDetected is a problem when True, the others when not True; an absent
    required condition is unknown (fail closed), an absent diagnostic one is only absent."""
    cond = ws.condition(type_)
    if cond is None:
        return status_text("skipped", "absent") if type_ in ("WorkloadIdentityReady", "DriftDetected") else status_text("Unknown", "absent")
    if type_ == "DriftDetected":
        return status_text("False" if cond.is_true else "True", "drift" if cond.is_true else "none")
    return status_text(cond.status, cond.status)


def render_workspace(view: TauWorkspaceView, ws: WorkspaceDefaults) -> Group:
    problems = ws.readiness_problems()
    title = Text(f"{ws.system_namespace}/{ws.name}  ", style="bold")
    title.append_text(status_text("ready", "Ready") if not problems else status_text("not ready", "not Ready"))
    if ws.primary:
        title.append("  primary (tau.azure.com/v0-primary-workspace)")
    parts: list = [title]
    parts += [Text(f"  ✗ {p}", style=style_of("failed")) for p in problems]
    parts.append(Text("conditions:", style="bold"))
    for type_ in CONDITION_TYPES:
        cond = ws.condition(type_)
        line = Text(f"  {type_:<22} ")
        if cond is None:
            line.append("absent" + ("" if type_ in ("WorkloadIdentityReady", "DriftDetected") else " (not ready: fail closed)"),
                        style=style_of("unknown"))
        else:
            line.append_text(condition_cell(ws, type_))
            line.append(f"  {cond.reason}: {cond.message}".rstrip(": ") if cond.reason or cond.message else "")
        parts.append(line)
    ttl = f"{ws.ttl_seconds_after_finished}s" if ws.ttl_seconds_after_finished is not None else "-"
    parts.append(Text(
        f"runs go to namespace {ws.namespace}, LocalQueue {ws.queue or '-'} → ClusterQueue {ws.cluster_queue or '?'}\n"
        f"defaults for a run: priority {ws.priority_tier or '-'}, output root {ws.output_root or '-'}, TTL {ttl} (Jobs)\n"
        f"authorization: {((view.spec.get('authorization') or {}).get('mode') or 'workspace-rbac')}"
        f"{'' if not view.spec.get('workloadIdentity') else ', workload identity ' + str((view.spec.get('workloadIdentity') or {}).get('serviceAccountName') or '-')}\n"
        f"headless: tau-tui workspace status {ws.name} · workspace check {ws.name} · workspace quota show {ws.name}"))
    return Group(*parts)


class WorkspacesScreen(PaneScreen):
    PANE = "workspaces"
    PANE_TITLE = "Workspaces"
    HELP = (
        f"Every TauWorkspace in the system namespace ({SYSTEM_NAMESPACE}): its phase, the conditions RBACReady, "
        "QueueReady, WorkloadIdentityReady (diagnostic) and DriftDetected, the namespace and queue a run goes to, and "
        "the defaults it gives a run (priority, output root, TTL).  ✓ Ready needs phase Ready, RBACReady and QueueReady "
        "True, no drift and a current status.  The primary workspace (★) is the one `tau-tui submit` uses when none is "
        "named.  d describes, y shows the YAML."
    )
    VIEW_KINDS = (ResourceKind.TAU_WORKSPACE,)
    BINDINGS = [
        Binding("d", "describe", "Describe", id="workspaces.describe"),
        Binding("y", "yaml", "YAML", id="workspaces.yaml"),
    ]
    DEFAULT_CSS = """
    WorkspacesScreen #workspaces-table { height: 1fr; }
    WorkspacesScreen #workspace-detail { height: 1fr; border-top: solid $panel; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.data = WorkspacesData()

    def compose_body(self) -> ComposeResult:
        yield KeyedTable([ColumnSpec("state", "State", "S"), ColumnSpec("name", "Workspace", "W", flexible=True, min_width=12),
                          ColumnSpec("phase", "Phase", "P"), ColumnSpec("namespace", "Namespace", "N", flexible=True, min_width=10),
                          ColumnSpec("queue", "LocalQueue", "Q", optional=True),
                          *[ColumnSpec(type_, SHORT_NAMES[type_], optional=type_ in ("WorkloadIdentityReady", "DriftDetected"))
                            for type_ in CONDITION_TYPES],
                          ColumnSpec("age", "Age", "A", optional=True)],
                         id="workspaces-table")
        with VerticalScroll(id="workspace-detail"):
            yield Static(Text(""), id="workspace-why")

    def collect(self, request: ReadRequest) -> WorkspacesData:
        data = WorkspacesData()
        backend = self.tau.backend
        views = backend.tau_workspaces() if backend is not None else []
        now = self.tau.now()
        ready = 0
        for view in sorted(views, key=lambda v: v.name):
            ws = WorkspaceDefaults.from_object(view.raw)
            problems = ws.readiness_problems()
            ready += not problems
            key = f"{view.namespace}/{view.name}"
            if not request.row_filter.matches(f"{ws.name} {ws.namespace} {ws.phase} {ws.queue}", {}):
                continue
            data.workspaces[key] = (view, ws)
            state = status_text("ready", "Ready") if not problems else status_text("not ready", "not Ready")
            name = Text(("★ " if ws.primary else "") + ws.name)
            phase = status_text(PHASE_WORDS.get(ws.phase or "", "unknown"), ws.phase or "unknown")
            data.rows.append((key, [state, name, phase, Text(ws.namespace),
                                    Text(f"{ws.queue or '-'}"), *[condition_cell(ws, t) for t in CONDITION_TYPES],
                                    Text(since(view.creation_timestamp, now))]))
        primary = next((ws.name for _, ws in data.workspaces.values() if ws.primary), None)
        data.status = (f"{len(views)} workspace{'s' if len(views) != 1 else ''} · {ready} Ready · "
                       + (f"primary: {primary}" if primary else "no primary workspace (tau.azure.com/v0-primary-workspace)"))
        return data

    def apply(self, data: WorkspacesData) -> None:
        self.data = data
        notice = self.freshness.notice(ResourceKind.TAU_WORKSPACE)
        if notice is None and not data.rows:
            notice = Text(f"no TauWorkspaces in {SYSTEM_NAMESPACE}: a platform owner creates them "
                          "(tau workspace create); runs then need -n and a queue")
        self.query_one("#workspaces-table", KeyedTable).apply_rows(data.rows, notice=notice)
        self.set_status(data.status)
        self._show_selected()

    def on_keyed_table_row_highlighted(self, event) -> None:
        self._show_selected()

    def _selected(self) -> tuple[TauWorkspaceView, WorkspaceDefaults] | None:
        key = self.query_one("#workspaces-table", KeyedTable).selected_key
        return self.data.workspaces.get(key) if key else None

    def _show_selected(self) -> None:
        chosen = self._selected()
        self.query_one("#workspace-why", Static).update(render_workspace(*chosen) if chosen else Text("no workspace selected"))

    def action_describe(self) -> None:
        if (chosen := self._selected()) is not None:
            describe_object(self.tau, chosen[0], yaml_view=False)

    def action_yaml(self) -> None:
        if (chosen := self._selected()) is not None:
            describe_object(self.tau, chosen[0], yaml_view=True)
