"""Runs pane: every Tau-managed Job and RayJob, and for the selected one its
phases in order (computed by :mod:`tau_tui.core.operations.runstatus`), diagnostics and
the next actions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import JobView, PodView, RayJobView
from tau_tui.core.operations.live_node_faults import LiveNodeFaults
from tau_tui.core.operations.multikueue_steps.worker_logs import worker_log_backend
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.core.operations.recovery import RetryDecision, checkpoint_candidates, checkpoint_of
from tau_tui.core.operations.run_status_types import RunStatus
from tau_tui.core.operations.rundocument import read_worker_pods
from tau_tui.mutations.cluster_changes import cancel_mutation
from tau_tui.mutations.recovery import CancelledCopy, resume_mutation, retry_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.describe import describe_object
from tau_tui.screens.freshness import Freshness
from tau_tui.screens.known_counts import CountedStatus, RowCount, count_text
from tau_tui.screens.object_scope import ObjectScope, open_object_view
from tau_tui.screens.pane_reader import ReadRequest, read_place
from tau_tui.screens.run_rows import RunRows
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable, Matchable
from tau_tui.widgets.status_text import status_text, style_of
from tau_tui.widgets.table_plan import Row, TablePlan


@dataclass
class RunsData:
    rows: Sequence[Row] = field(default_factory=list)
    statuses: Mapping[str, RunStatus] = field(default_factory=dict)
    #: The retry decision of every failed run, as core makes it for this tick's clock.
    decisions: dict[str, RetryDecision] = field(default_factory=dict)
    owners: Mapping[str, JobView | RayJobView] = field(default_factory=dict)
    #: Each row's text and labels for the table's filter.
    matchable: Mapping[str, Matchable] = field(default_factory=dict)
    #: The runs table's update, worked out in the worker.
    plan: TablePlan | None = None
    status: str | CountedStatus = ""
    #: Runs cancelled on a MultiKueue manager whose worker pods are now gone.
    released: set[str] = field(default_factory=set)
    #: Handed back to the kept rows once the table shows this read.
    token: int = 0
    #: The first part of a full read: (runs read, runs in all); the next read goes on with the others.
    reading: tuple[int, int] | None = None


@dataclass(frozen=True)
class CancelledRun:
    """A run this pane cancelled: what finds its pods once the Job or RayJob is gone."""

    uid: str
    #: The MultiKueue worker it was placed on (its pods are there), None once they are gone.
    worker: str | None = None
    #: A RayJob's Ray cluster (its pods carry ``ray.io/cluster``, not ``job-name``).
    ray_cluster: str | None = None
    #: The run as it was when cancelled: what R resumes (the cluster keeps nothing of it).
    copy: CancelledCopy | None = None


#: At 80 columns the state and the run stay (its name cut in the middle); kind goes first, then queue and age.
RUN_COLUMNS = [ColumnSpec("state", "State", flexible=True, min_width=12), ColumnSpec("run", "Run", flexible=True, min_width=16, cut="middle"),
               ColumnSpec("kind", "Kind", optional=True), ColumnSpec("queue", "Queue", optional=True, priority=1),
               ColumnSpec("where", "Where", optional=True, flexible=True, min_width=10, priority=2),
               ColumnSpec("age", "Age", optional=True, priority=1)]

#: Next actions that change the cluster: not offered in --readonly.
MUTATING_RUN_ACTIONS = frozenset({"cancel", "retry", "resume"})


def recovery_lines(status: RunStatus, decision: RetryDecision | None) -> list[Text]:
    """What the run's GPU fault and its retry policy mean now: the mark, and retry now / in N s / never."""
    lines = [Text(hit.line, style=style_of("failed")) for hit in status.gpu_hits]
    if decision is not None:
        lines.append(Text(decision.line))
    return lines


def render_run_status(status: RunStatus, decision: RetryDecision | None = None, readonly: bool = False) -> Group:
    phases = Table(box=None, show_header=True, header_style="bold", padding=(0, 1, 0, 0), expand=True)
    phases.add_column("phase", no_wrap=True)
    phases.add_column("status", no_wrap=True)
    phases.add_column("detail", overflow="fold")
    for phase in status.phases:
        detail = Text(phase.detail)
        if phase.hint:
            detail.append(f"  → {phase.hint}", style="italic")
        phases.add_row(Text(phase.name), Text(f"{phase.symbol} {phase.status}", style=style_of(phase.status)), detail)
    title = Text()
    title.append(f"{status.kind} {status.namespace}/{status.name}  ", style="bold")
    title.append_text(status_text(status.state, status.display_state))
    title.append("  ")
    if status.queue:
        title.append(f"  queue {status.queue}")
    if status.cluster:
        title.append(f"  worker {status.cluster}")
    parts: list = [title, *recovery_lines(status, decision), phases]
    if status.diagnostics:
        parts.append(Text("Attention", style="bold underline"))
        for d in status.diagnostics:
            line = Text(f"{ {'error': '✗', 'warning': '⚠', 'info': 'i'}[d.severity] } {d.code}: {d.message}",
                        style=style_of({"error": "failed", "warning": "warning", "info": ""}[d.severity]))
            if d.suggestion:
                line.append(f"  → {d.suggestion}", style="italic")
            parts.append(line)
    if status.actions:
        parts.append(Text("Next", style="bold underline"))
        for a in status.actions:
            if readonly and a.name in MUTATING_RUN_ACTIONS:
                continue
            if a.name == "retry" and decision is not None and decision.verdict != "retry":
                continue  # only keys that work now: the retry line above says when, or why never
            parts.append(Text(f"  {a.key:<7} {a.name}: {a.description}"))
    return Group(*parts)


class RunsScreen(PaneScreen):
    PANE = "runs"
    SHOWS_GPU_FAULTS = True
    PANE_TITLE = "Runs"
    TABLE_FILTER = True
    HELP = (
        "Every Tau-managed Job and RayJob.  The panel below shows the selected run's phases in order "
        "(Submitted, Kueue admission, MultiKueue placement, RayCluster, Pod scheduling, DRA allocation, "
        "Image pull, Init containers, Container start, Ready, RayJob, Compute release), each pending ○, "
        "active ◐, done ✓, warning ⚠ or skipped –, then diagnostics and what to do next.  A run a GPU fault "
        "hit reads 'GPU fault' with the node, GPU and reason.  r retries a failed run as its resilience.* "
        "allows (retry_on, max_retries, backoff; ↻ now, ◷ later, – never); R resumes it from its last "
        "checkpoint under a new submission, away from the faulty node.  Both are previewed and confirmed.  "
        "p lists the run's pods and e the Events about it (l, d and y from there)."
    )
    MUTATING_ACTIONS = frozenset({"cancel", "retry", "resume"})
    VIEW_KINDS = (ResourceKind.JOB, ResourceKind.RAY_JOB, ResourceKind.WORKLOAD, ResourceKind.POD, ResourceKind.EVENT)
    #: Node GPU health marks the runs a fault hit: a change there redraws the pane too.
    READ_KINDS = VIEW_KINDS + (ResourceKind.NODE, ResourceKind.GPU_HEALTH)
    BINDINGS = [
        Binding("l", "logs", "Logs", id="runs.logs"),
        Binding("a", "logs_all", "Logs (all ctrs)", id="runs.logs_all"),
        Binding("d", "describe", "Describe", id="runs.describe"),
        Binding("y", "yaml", "YAML", id="runs.yaml"),
        # told in HELP; kept off the footer, where at 80 columns they pushed Resume and Help out
        Binding("p", "pods", "Pods", id="runs.pods", show=False),
        Binding("e", "events", "Events", id="runs.events", show=False),
        Binding("ctrl+d", "cancel", "Cancel", id="runs.cancel"),
        Binding("r", "retry", "Retry", id="runs.retry"),
        Binding("R", "resume", "Resume", id="runs.resume"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.data = RunsData()
        #: The rows kept between reads: a run whose status (kept by ``tau.run_statuses`` while none of
        #: its objects changed) and age are the same keeps its cells object, so the table skips it.
        self._run_rows = RunRows()
        #: Every node's fault, from the nodes that changed since the last read (over the app's memo).
        self._node_faults: LiveNodeFaults | None = None
        self._replay_jumps = 0
        #: "namespace/name" → the runs cancelled from this pane: once their Job or RayJob and every pod
        #: (on its worker, for a run MultiKueue placed there) are gone they read "cancelled" (the
        #: cluster keeps no trace of a deleted run).
        self.cancelled_runs: dict[str, CancelledRun] = {}
        #: Backends that read a worker's pods, by worker (from config.yaml's worker_contexts).
        self._worker_backends: dict[str, Any] = {}

    @property
    def statuses_computed(self) -> int:
        """Run statuses this pane's reads worked out (tests bound a refresh's work by it)."""
        return self._run_rows.statuses_computed

    def compose_body(self) -> ComposeResult:
        yield KeyedTable(RUN_COLUMNS, id="runs-table")
        with VerticalScroll(id="run-detail"):
            yield Static(Text("select a run"), id="run-phases")

    def collect(self, request: ReadRequest) -> RunsData:
        backend = self.tau.backend
        assert backend is not None
        request.keep_reading()  # before the nodes' faults (a large cluster has many): a key waits for no read
        now = self.tau.now()
        if self._node_faults is None or self._node_faults.memo is not self.tau.node_health:
            self._node_faults = LiveNodeFaults(self.tau.node_health)
        gpu_faults = self._node_faults.current(backend, now)
        cancelled = dict(self.cancelled_runs)  # changed on the UI thread; read once here
        request.keep_reading()
        if isinstance(backend, ReplayBackend) and backend.jumps != self._replay_jumps:
            self._replay_jumps = backend.jumps
            self._run_rows.forget()  # a seek: the rows held are of another time
        # the rows kept from the last read: a read costs the runs that changed (run_rows.py)
        read = self._run_rows.read(backend, read_place(backend), now, gpu_faults, self.tau.run_statuses, cancelled,
                                   lambda worker, ns, run: read_worker_pods(self._worker_backend(worker), ns, run),
                                   request.freshness.notice(ResourceKind.JOB, ResourceKind.RAY_JOB) is None,
                                   request.table_states.get("runs-table"), request.keep_reading,
                                   # a read ahead reads the first part only, and goes on once the pane is
                                   # opened: a pane not open does no work in proportion to the runs
                                   waited_for=lambda: request.first_rows_waited_for() or request.read_ahead())
        data = RunsData(read.rows, read.statuses, read.decisions, read.owners, read.matchable, None, "", read.released,
                        read.token, read.reading)
        counts = ", ".join(f"{n} {s}" for s, n in sorted(read.counts.items()) if n)
        if read.reading is not None:
            done, total = read.reading
            data.status = f"reading runs: {done} of {total} so far · {counts}"
        else:
            views = request.freshness.views  # no zeros before the Job and RayJob lists ended
            runs = count_text(len(data.rows), views.get(ResourceKind.JOB), views.get(ResourceKind.RAY_JOB))
            data.status = CountedStatus((RowCount(runs, "runs", "runs-table"), f" · {counts}"))
        data.plan = read.plan or request.plan_table("runs-table", data.rows, self._notice(request.freshness, data),
                                                 data.matchable)
        return data

    def _worker_backend(self, worker: str) -> Any:
        """A backend reading ``worker`` (never started), or None when no context is mapped to it."""
        if worker not in self._worker_backends:
            try:
                self._worker_backends[worker] = worker_log_backend(self.tau.backend, worker, self.tau.settings.worker_contexts)
            except ClusterError:  # the mapped context is not in the kubeconfig: unread, so never "released"
                self._worker_backends[worker] = None
        return self._worker_backends[worker]

    def apply(self, data: RunsData) -> None:
        self.data = data
        for key, entry in list(self.cancelled_runs.items()):
            owner = data.owners.get(key)
            if owner is not None and owner.uid != entry.uid:  # submitted again under the same name: a new run
                del self.cancelled_runs[key]
            elif key in data.released:  # its worker's pods are gone: no need to read that worker again
                self.cancelled_runs[key] = replace(entry, worker=None)
        table = self.query_one("#runs-table", KeyedTable)
        if data.plan is not None:
            table.apply_plan(data.plan)
        else:
            table.apply_rows(data.rows, notice=self._notice(self.freshness, data), matchable=data.matchable)
        self._run_rows.applied(data.token)  # the next read may go on from these rows
        self.set_status(data.status)
        self._show_selected()
        if data.reading is not None:  # the other runs next, once these rows are drawn
            self.call_after_refresh(self.tick, True)

    def read_complete(self, data: RunsData) -> bool:
        return data.reading is None

    @staticmethod
    def _notice(freshness: Freshness, data: RunsData) -> Text | None:
        notice = freshness.notice(ResourceKind.JOB)
        ray_state = freshness.views.get(ResourceKind.RAY_JOB)
        if notice is None and ray_state is not None and not ray_state.usable and not data.rows:
            notice = freshness.notice(ResourceKind.RAY_JOB)
        return notice

    def on_keyed_table_row_highlighted(self, event) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        key = self.query_one("#runs-table", KeyedTable).selected_key
        status = self.data.statuses.get(key) if key else None
        detail = self.query_one("#run-phases", Static)
        decision = self.data.decisions.get(key) if key else None
        detail.update(render_run_status(status, decision, self.tau.readonly) if status else Text("no run selected"))

    def selected(self) -> tuple[str, JobView | RayJobView] | None:
        key = self.query_one("#runs-table", KeyedTable).selected_key
        if key is None or key not in self.data.owners:
            return None
        return key, self.data.owners[key]

    async def action_logs(self) -> None:
        picked = self.selected()
        if picked:
            await self.tau.open_logs_for_run(picked[0])

    async def action_logs_all(self) -> None:
        picked = self.selected()
        if picked:
            await self.tau.open_logs_for_run(picked[0], container_all=True)

    def action_describe(self) -> None:
        picked = self.selected()
        if picked:
            describe_object(self.tau, picked[1], yaml_view=False)

    def action_pods(self) -> None:
        """The selected run's pods (the Pods view)."""
        picked = self.selected()
        if picked:
            open_object_view(self.tau, "pods", ObjectScope(picked[1].namespace, picked[1].name))

    def action_events(self) -> None:
        """The Events about the selected run (the Events view)."""
        picked = self.selected()
        if picked:
            open_object_view(self.tau, "events", ObjectScope(picked[1].namespace, picked[1].name))

    def action_yaml(self) -> None:
        picked = self.selected()
        if picked:
            describe_object(self.tau, picked[1], yaml_view=True)

    def action_cancel(self) -> None:
        picked = self.selected()
        if picked is None:
            self.notify("select a run to cancel", severity="warning")
            return
        key, owner = picked
        kind = ResourceKind.JOB if isinstance(owner, JobView) else ResourceKind.RAY_JOB
        mutation = cancel_mutation(self.tau, kind, owner.namespace or "", owner.name)
        copy = CancelledCopy(owner, self._cached_pods(owner))  # R resumes it once it is gone

        status = self.data.statuses.get(key)
        # A run MultiKueue placed on a worker holds its GPUs there: released when the worker's pods are gone.
        worker = status.cluster if status is not None and status.multikueue else None

        def done(ok: bool, _text: str) -> None:
            if ok:
                ray_cluster = owner.ray_cluster_name if isinstance(owner, RayJobView) else None
                self.cancelled_runs[key] = CancelledRun(owner.uid or "", worker, ray_cluster, copy)

        mutation.on_done = done
        self.tau.request_mutation(mutation)

    def action_retry(self) -> None:
        picked = self.selected()
        if picked is None:
            self.notify("select a failed run to retry", severity="warning")
            return
        self.tau.request_mutation(retry_mutation(self.tau, picked[1].namespace or "", picked[1].name))

    def _cached_pods(self, owner: JobView | RayJobView) -> list[PodView]:
        """The run's pods in the app's cache now (which GPU fault hit it, for a later resume)."""
        backend = self.tau.backend
        if backend is None:
            return []
        label, value = (("ray.io/cluster", owner.ray_cluster_name) if isinstance(owner, RayJobView)
                        else ("job-name", owner.name))
        return [p for p in backend.list(ResourceKind.POD, owner.namespace) if isinstance(p, PodView)
                and value and p.labels.get(label) == value]

    def _resume_target(self) -> tuple[str, JobView | RayJobView, CancelledCopy | None] | None:
        """The selected run and its object: live, or the copy kept of a run cancelled here."""
        key = self.query_one("#runs-table", KeyedTable).selected_key
        if key is None:
            return None
        if key in self.data.owners:
            return key, self.data.owners[key], None
        copy = self.cancelled_runs[key].copy if key in self.cancelled_runs else None
        return (key, copy.owner, copy) if copy is not None else None

    def action_resume(self) -> None:
        target = self._resume_target()
        if target is None:
            self.notify("select a run to resume: a failed, finished or cancelled one", severity="warning")
            return
        key, owner, copy = target
        status = self.data.statuses.get(key)
        if status is not None and status.state in ("queued", "starting", "running"):
            self.notify(f"{key} is still {status.state}: cancel it first (ctrl+d), then press R to resume it "
                        "from its last checkpoint", severity="warning")
            return
        namespace = owner.namespace or ""
        # An OOMKilled run is resumed only by force, with the warning in the confirmation.
        after_oom = status is not None and status.state == "failed" and any(d.code == "OOM_KILLED" for d in status.diagnostics)

        def resume(checkpoint: str | None = None) -> None:
            self.tau.request_mutation(resume_mutation(self.tau, namespace, owner.name, force=after_oom,
                                                      checkpoint=checkpoint, cancelled=copy))

        if checkpoint_of(owner) is not None or self.tau.readonly:
            resume()
            return
        found = checkpoint_candidates(owner)

        def chosen(path: str | None) -> None:
            if path:
                resume(path)

        self.app.push_screen(InputDialog(
            f"Resume {key} from which checkpoint?\nThe run carries no TAU_RESUME_FROM; "
            + ("prefilled with where it says it checkpoints." if found else "it names no checkpoint: type the path.")
            + "\nenter: preview the resume · esc: back", found[0] if found else ""), chosen)
