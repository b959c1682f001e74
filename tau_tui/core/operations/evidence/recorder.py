"""The app's evidence recorder: captures a run's record when the app sees it finish.

Runs on its own core thread (no Textual), which sleeps until the cache's generations of Jobs,
RayJobs, Workloads or pods move, then follows the cache's change feed: its cursors name the Jobs and
RayJobs that changed, and its run index (kept from the same feed) the Workloads and pods, whose run
it looks at when it watches that run.  It captures a run that it saw unfinished and now sees
succeeded, failed, or deleted (cancelled: captured from the objects it saw last, while its pods may
still be terminating).
A run already finished when the app started is not captured here: ``tau-tui evidence export``
captures it on demand.  Capture is idempotent (one record per run and submission id), so the
app and the CLI capturing the same run leave one record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial

from tau_tui.core.cluster.interfaces import ClusterBackend, is_tau_run
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import JobView, NodeView, ObjectView, PodView, RayJobView
from tau_tui.core.operations.evidence.capture import CaptureResult, capture, outcome_of
from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity, cluster_identity
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.live_run_index import LiveRunIndex
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.core.operations.run_index import RunIndex
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.run_status_memo import RunInputs, RunStatusMemo
from tau_tui.core.operations.run_status_types import RunStatus
from tau_tui.core.operations.runstatus import compute_run_status
from tau_tui.core.pacing import BusyUntil, give_way

RunKey = tuple[str, str]
#: The recorder looks whether its host's foreground is busy after this many runs (a few milliseconds of work)...
RUNS_BETWEEN_NAPS = 32
#: ...and sleeps for them at most this long per batch, so that it still records.
MAX_NAPS_PER_BATCH_S = 10.0
#: After the first change it wakes for, the recorder waits this long for the rest of a burst (a
#: relist, a mass update), so that they make one batch.
BATCH_WINDOW_S = 0.1
#: The kinds whose changes wake it.
FOLLOWED = (ResourceKind.JOB, ResourceKind.RAY_JOB, ResourceKind.WORKLOAD, ResourceKind.POD)
OWNER_KINDS = (ResourceKind.JOB, ResourceKind.RAY_JOB)


class EvidenceRecorder:
    def __init__(self, backend: ClusterBackend, store: EvidenceStore, clock: Callable[[], datetime],
                 on_captured: Callable[[CaptureResult], None] | None = None,
                 statuses: RunStatusMemo | None = None, node_health: NodeHealthMemo | None = None,
                 foreground_busy_until: BusyUntil | None = None) -> None:
        self.backend = backend
        #: Until when (monotonic) the host's foreground wants the interpreter (the app says): the
        #: recorder shares the interpreter with them, and nobody waits for it, so it sleeps till then.
        self.foreground_busy_until = foreground_busy_until
        #: Seconds the recorder slept for the foreground (tests bound it), how it sleeps and the
        #: clock the foreground's hold is compared with (tests give both).
        self.napped_s = 0.0
        self.nap: Callable[[float], None] = time.sleep
        self.monotonic: Callable[[], float] = time.monotonic
        #: Shared with the Runs pane: a status worked out here is not worked out there again.
        self.statuses = statuses or RunStatusMemo()
        #: Shared with the Runs and Nodes panes, as the statuses are.
        self.node_health = node_health or NodeHealthMemo()
        self.store = store
        self.clock = clock
        self.on_captured = on_captured
        #: Unfinished runs and the objects last seen of them (what a cancelled run is recorded from).
        self._watching: dict[RunKey, RunObjects] = {}
        #: The run's objects, read from the cache's changes since the last batch.
        self._index = LiveRunIndex(backend)
        #: The Jobs and RayJobs changed since the last batch.
        self._owners = {kind: JournalCursor(kind) for kind in OWNER_KINDS}
        #: Runs to look at in the next batch (a test may add some), and the Workloads and pods the
        #: index moved since the last batch (their runs are looked at when watched).
        self.due: set[RunKey] = set()
        self._moved: list[tuple[ObjectView | None, ObjectView | None]] = []
        self._everything = False
        self._thread: threading.Thread | None = None
        #: Set by close(): a nap for the foreground ends at once.
        self._closing = threading.Event()
        self.captured = 0
        self.last_error = ""
        #: The cluster the records are of (read at the first capture, on this thread).
        self._cluster: ClusterIdentity | None = None

    def start(self, thread: bool = True) -> EvidenceRecorder:
        """Follow the cluster from now on: the first batch looks at every run there is now.
        ``thread=False``: no thread of its own; the caller runs :meth:`drain` (tests on a frozen clock)."""
        if thread:
            self._thread = threading.Thread(target=self._run, name="evidence-recorder", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def drain(self) -> None:
        """Look at the runs that changed since the last batch, on the calling thread (after
        ``start(thread=False)``)."""
        self._handle_batch(self._changed_runs())

    def _run(self) -> None:
        while not self._closing.is_set():
            # the generations before the batch reads: a change made meanwhile wakes the next one
            seen = {kind: self.backend.generation(kind) for kind in FOLLOWED}
            try:
                self._handle_batch(self._changed_runs())
            except Exception as err:  # one bad read must not end the recorder (its runs come again when they change)
                self.last_error = f"{type(err).__name__}: {err}"
            while not self.backend.wait_for_change(seen, 1.0):
                if self._closing.is_set():
                    return
            if self._closing.wait(BATCH_WINDOW_S):  # the rest of a burst comes with it
                return

    def _changed_runs(self) -> Iterable[RunKey]:
        """The runs to look at: those whose Job or RayJob changed since the last batch, those whose
        Workloads or pods did while the recorder watches them (a RayJob can finish by its Workload
        alone), and every run when a cursor or the index read everything."""
        due = self.due  # kept there until the index is read: a read that fails loses no run
        for cursor in self._owners.values():
            changed = cursor.read(self.backend).keys
            if changed is None:
                self._everything = True
            else:
                due.update(changed)
        self._index_read()
        self.due = set()
        moved, self._moved = self._moved, []
        if self._everything:
            self._everything = False
            due.update((owner.namespace or "", owner.name) for owner in [*self.backend.jobs(), *self.backend.ray_jobs()])
            due.update(self._watching)
            return due
        for pair in moved:
            for view in pair:
                if view is None:
                    continue
                owner = getattr(view, "owner_name", None) or view.labels.get("job-name")
                if owner and (view.namespace or "", owner) in self._watching:
                    due.add((view.namespace or "", owner))
        return due

    def _index_read(self) -> RunIndex:
        """The run index brought up to date; what it moved is kept for the next batch."""
        live = self._index
        index = live.current()
        self._moved.extend(live.moved)
        if live.relisted:
            self._everything = True
        return index

    def _give_way(self, napped: float) -> float:
        """Sleep while the foreground is busy (at most what is left of this batch's naps); the seconds slept."""
        waits_until = self.foreground_busy_until
        if waits_until is None or napped >= MAX_NAPS_PER_BATCH_S:
            return 0.0
        return give_way(lambda: 0.0 if self._closing.is_set() else waits_until(), MAX_NAPS_PER_BATCH_S - napped,
                        self.nap, self.monotonic)

    def _owner(self, key: RunKey) -> JobView | RayJobView | None:
        """The run's owner as ``jobs()`` and ``ray_jobs()`` list it (Tau-managed; a RayJob's submitter
        Job is not a run), or None."""
        namespace, name = key
        ray_job = self.backend.get(ResourceKind.RAY_JOB, name, namespace or None)
        if isinstance(ray_job, RayJobView) and is_tau_run(ray_job):
            return ray_job
        job = self.backend.get(ResourceKind.JOB, name, namespace or None)
        if isinstance(job, JobView) and is_tau_run(job):
            return job
        return None

    def _node_faults(self, pods: list[PodView]) -> dict[str, NodeGpuFault]:
        """The GPU faults of the nodes the run's pods are on (all a run's status looks at)."""
        now = self.clock()
        faults: dict[str, NodeGpuFault] = {}
        for name in {p.node_name for p in pods if p.node_name}:
            node = self.backend.get(ResourceKind.NODE, name)
            if not isinstance(node, NodeView):
                self.node_health.forget(name)  # gone: its judgement would be kept for nothing
                continue
            fault = self.node_health.fault(node, now)
            if fault is not None:
                faults[name] = fault
        return faults

    def _handle_batch(self, runs: Iterable[RunKey]) -> None:
        """The runs changed since the last batch.  Each run's objects come from the run index kept
        from the cache's changes (read again, for what changed, before each run): a tick that
        changes hundreds of runs reads each changed object once, and a batch of a few runs on a
        cluster of 20,000 costs those few runs, not the lists."""
        runs = sorted(runs)
        if not runs:
            return
        napped = self._give_way(0.0)  # before the read: what is recorded is what the cluster holds after the wait
        for count, key in enumerate(runs):
            if count and count % RUNS_BETWEEN_NAPS == 0:
                napped += self._give_way(napped)
            owner = self._owner(key)
            try:
                if owner is None:
                    self._handle(key, None, None)
                    continue
                # after the owner (a capture before may have taken seconds): its objects are at least as
                # new as it, so a run seen finished is recorded from the pods it finished with
                index = self._index_read()
                parts = index.parts(owner)
                faults = self._node_faults(parts[1])
                objs = index.objects(owner, faults, parts)
                status, _ = self.statuses.status(f"{key[0]}/{key[1]}", RunInputs.of(owner, objs.workloads, objs.pods,
                                                                                    objs.events, faults),
                                                 partial(compute_run_status, objs))
                self._handle(key, objs, status)
            except Exception as err:  # a failed capture must not end the recorder
                self.last_error = f"{key[0]}/{key[1]}: {type(err).__name__}: {err}"
        self.napped_s += napped

    def _handle(self, key: RunKey, objs: RunObjects | None, status: RunStatus | None) -> None:
        if objs is None or status is None:
            last = self._watching.pop(key, None)
            if last is not None:  # seen unfinished, now gone: cancelled
                self._capture(last, "cancelled")
            return
        outcome = outcome_of(status)
        if outcome is None:
            self._watching[key] = objs
            return
        if self._watching.pop(key, None) is not None:
            self._capture(objs, outcome)

    def _capture(self, objs: RunObjects, outcome: str) -> None:
        try:
            nodes = self.backend.nodes()
            reports = {h.node_name: h for h in self.backend.gpu_health()}
            if self._cluster is None or self._cluster.problem:  # asked again until it is known
                self._cluster = cluster_identity(self.backend)
            result = capture(self.backend, self.store, objs, outcome, self.clock(), source="app",
                             nodes=nodes, gpu_reports=reports, cluster=self._cluster)
        except Exception as err:
            self.last_error = f"{objs.namespace}/{objs.name}: {type(err).__name__}: {err}"
            return
        if result.created:
            self.captured += 1
        if self.on_captured is not None:
            self.on_captured(result)
