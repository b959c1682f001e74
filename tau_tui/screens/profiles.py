"""Profiles pane: every workload profile from TauCluster/cluster with its Ready
and applicable state, the failing condition and reason, and its queue,
ClusterQueue, flavors, priorities and execution target."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.runconfig.profiles import (
    MULTIKUEUE_TARGET,
    Caller,
    ProfileExplanation,
    explain,
    profile_set_from_taucluster,
)
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.host import PaneHost
from tau_tui.screens.known_counts import CountedStatus, RowCount
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.cell_text import one_line
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.status_text import status_text, style_of


def caller_for(app: PaneHost) -> Caller:
    backend = app.backend
    namespace = app.namespace_name or (backend.namespace if backend is not None else None)
    return Caller(namespace, app.settings.team or os.environ.get("TAU_TEAM"), app.settings.lane)


def read_profiles(app: PaneHost):
    """(profile set or None, explanations, problem) from the backend's TauCluster."""
    backend = app.backend
    tau_cluster = backend.tau_cluster() if backend is not None else None
    if tau_cluster is None:
        return None, [], "TauCluster/cluster not found: TauGrid is not installed or not readable; no profile can be used"
    profile_set = profile_set_from_taucluster(dict(tau_cluster.raw))
    return profile_set, explain(profile_set, caller_for(app)), ""


@dataclass
class ProfilesData:
    rows: list = field(default_factory=list)
    explanations: dict[str, ProfileExplanation] = field(default_factory=dict)
    header: Text = field(default_factory=Text)
    status: str | CountedStatus = ""


def render_profile(item: ProfileExplanation) -> Group:
    p = item.profile
    parts: list = []
    title = Text(f"{p.name}  ", style="bold")
    title.append_text(status_text("selectable" if item.selectable else "excluded"))
    if p.execution_target == MULTIKUEUE_TARGET:
        title.append("  MultiKueue · Alpha: dispatched to a worker cluster; data on a PVC stays on one cluster",
                     style=style_of("warning"))
    parts.append(title)
    if p.description:
        parts.append(Text(p.description, style="italic"))
    for reason in item.reasons:
        parts.append(Text(f"  ✗ {reason}", style=style_of("failed")))
    parts.append(Text("conditions:", style="bold"))
    for c in p.conditions:
        line = Text("  ")
        line.append_text(status_text(c.status, f"{c.type}={c.status}"))
        line.append(f" {c.reason} {c.message}".rstrip())
        parts.append(line)
    if not p.conditions:
        parts.append(Text("  none reported (not ready: fail closed)", style=style_of("failed")))
    parts.append(Text(
        f"queues: default {p.default_local_queue or '—'}; "
        + ", ".join(f"{q.namespace}/{q.name}→{q.cluster_queue}" for q in p.local_queues)
        + f"\nClusterQueues: {', '.join(p.cluster_queues) or '—'}  flavors: {', '.join(p.resource_flavors) or '—'}"
        + f"\npriorities: workload {p.workload_priority_class or '—'}, pod {p.pod_priority_class or '—'}"
        + f"\nshape: {p.worker_count} worker(s) × {p.gpus_per_worker} GPU, {p.mode}, placement {p.placement}"
        + f"\nexecution target: {p.execution_target}"
        + (f"\napplies to: teams {', '.join(p.teams) or 'any'}, lanes {', '.join(p.lanes) or 'any'}, "
           f"namespaces {', '.join(p.namespaces) or 'any'}")
    ))
    return Group(*parts)


class ProfilesScreen(PaneScreen):
    PANE = "profiles"
    PANE_TITLE = "Profiles"
    HELP = (
        "Every workload profile the TauCluster resolved.  ✓ selectable means Ready=True, current, and "
        "applicable to you (namespace, team, lane shown above the table); ✗ excluded lists why: the "
        "failing condition and reason, a stale status, or the applicability rule that leaves you out.  "
        "Set your team in the app config (team:) or $TAU_TEAM."
    )
    BINDINGS: ClassVar[list[BindingType]] = []
    VIEW_KINDS = (ResourceKind.TAU_CLUSTER,)

    def __init__(self) -> None:
        super().__init__()
        self.data = ProfilesData()

    def compose_body(self) -> ComposeResult:
        yield Static(Text(""), id="profiles-caller")
        # at 80 columns the state, the name (cut in the middle) and Ready stay; flavors and priorities go first
        yield KeyedTable([ColumnSpec("state", "State"), ColumnSpec("name", "Profile", flexible=True, min_width=16, cut="middle"),
                          ColumnSpec("ready", "Ready", flexible=True, min_width=8),
                          ColumnSpec("queue", "Queue", optional=True, flexible=True, min_width=8, priority=2),
                          ColumnSpec("cq", "ClusterQueue", optional=True, priority=1),
                          ColumnSpec("flavors", "Flavors", optional=True, flexible=True, min_width=8),
                          ColumnSpec("prio", "Priorities", optional=True), ColumnSpec("target", "Target", optional=True, priority=1)],
                         id="profiles-table")
        with VerticalScroll(id="profile-detail"):
            yield Static(Text(""), id="profile-why")

    def extra_signature(self) -> tuple:
        return (self.tau.namespace_name, self.tau.settings.team, self.tau.settings.lane)

    def collect(self, request: ReadRequest) -> ProfilesData:
        data = ProfilesData()
        profile_set, explanations, problem = read_profiles(self.tau)
        caller = caller_for(self.tau)
        header = Text(f"as namespace={caller.namespace or '(all)'} team={caller.team or '-'} lane={caller.lane or '-'}")
        if profile_set is not None:
            header.append(f" · from {profile_set.source}")
            for gate in profile_set.gate_problems:
                header.append(f"\n✗ profile set unusable: {gate}", style=style_of("failed"))
        if problem:
            header.append(f"\n✗ {problem}", style=style_of("failed"))
        data.header = header
        f = request.row_filter
        for item in explanations:
            p = item.profile
            if not f.matches(f"{p.name} {p.execution_target} {p.default_local_queue}", {}):
                continue
            data.explanations[p.name] = item
            ready = p.condition("Ready")
            ready_cell = status_text(ready.status, f"{ready.status} {ready.reason}".strip()) if ready else status_text("Unknown", "missing")
            lq = p.local_queue_for(caller.namespace) if caller.namespace else None
            queue = f"{lq.namespace}/{lq.name}" if lq else (p.default_local_queue or "—")
            prio = "/".join(x for x in (p.workload_priority_class, p.pod_priority_class) if x) or "—"
            # ASCII, so a name cut in the middle at 80 columns keeps both its end and the mark
            alpha = " (Alpha)" if p.execution_target == MULTIKUEUE_TARGET else ""
            data.rows.append((p.name, [status_text("selectable" if item.selectable else "excluded"), Text(p.name + alpha), ready_cell,
                                       Text(queue), Text(", ".join(p.cluster_queues) or "—"),
                                       Text(one_line(", ".join(p.resource_flavors) or "—", 40)), Text(prio),
                                       Text(p.execution_target + (" (Alpha)" if p.execution_target == MULTIKUEUE_TARGET else ""))]))
        usable = sum(1 for e in data.explanations.values() if e.selectable)
        data.status = CountedStatus((RowCount(str(len(explanations)), "profiles"), f" · {usable} selectable for you"))
        return data

    def apply(self, data: ProfilesData) -> None:
        self.data = data
        self.query_one("#profiles-caller", Static).update(data.header)
        self.query_one("#profiles-table", KeyedTable).apply_rows(data.rows, notice=self.freshness.notice(ResourceKind.TAU_CLUSTER))
        self.set_status(data.status)
        self._show_selected()

    def on_keyed_table_row_highlighted(self, event) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        key = self.query_one("#profiles-table", KeyedTable).selected_key
        item = self.data.explanations.get(key) if key else None
        self.query_one("#profile-why", Static).update(render_profile(item) if item else Text("no profile selected"))
