"""The app's evidence recorder: captures a run's record when the app sees it finish.

Runs on its own core thread (no Textual): the backend's change callback (on the dispatcher
thread) only queues the Job and RayJob keys that changed; the recorder thread reads the watch
cache, and captures a run that it saw unfinished and now sees succeeded, failed, or deleted
(cancelled: captured from the objects it saw last, while its pods may still be terminating).
A run already finished when the app started is not captured here: ``tau-tui evidence export``
captures it on demand.  Capture is idempotent (one record per run and submission id), so the
app and the CLI capturing the same run leave one record.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial

from tau_tui.core.cluster.changes import ChangeBatch, ChangeType, Subscription
from tau_tui.core.cluster.interfaces import ClusterBackend, is_tau_run
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import JobView, NodeView, PodView, RayJobView
from tau_tui.core.operations.evidence.capture import CaptureResult, capture, outcome_of
from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity, cluster_identity
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.live_run_index import LiveRunIndex
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
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
_STOP = ("", "")


class EvidenceRecorder:
    def __init__(self, backend: ClusterBackend, store: EvidenceStore, clock: Callable[[], datetime],
                 on_captured: Callable[[CaptureResult], None] | None = None,
                 statuses: RunStatusMemo | None = None, node_health: NodeHealthMemo | None = None,
                 foreground_busy_until: BusyUntil | None = None) -> None:
        self.backend = backend
        #: Until when (monotonic) the host's foreground wants the interpreter (the app says): the
        #: recorder shares the interpreter with them, and nobody waits for it, so it sleeps till then.
        self.foreground_busy_until = foreground_busy_until
        #: Seconds the recorder slept for the foreground (tests bound it), and how it sleeps.
        self.napped_s = 0.0
        self.nap: Callable[[float], None] = time.sleep
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
        self._deleted: set[RunKey] = set()
        self._queue: queue.Queue[tuple[RunKey, bool]] = queue.Queue()
        self._subscription: Subscription | None = None
        self._thread: threading.Thread | None = None
        #: Set by close(): a nap for the foreground ends at once.
        self._closing = threading.Event()
        self.captured = 0
        self.last_error = ""
        #: The cluster the records are of (read at the first capture, on this thread).
        self._cluster: ClusterIdentity | None = None

    def start(self, thread: bool = True) -> EvidenceRecorder:
        """Subscribe and queue every run there is now.  ``thread=False``: no thread of its own; the
        caller runs :meth:`drain` (tests on a frozen clock)."""
        self._subscription = self.backend.subscribe(self._on_changes, (ResourceKind.JOB, ResourceKind.RAY_JOB,
                                                                        ResourceKind.WORKLOAD, ResourceKind.POD))
        if thread:
            self._thread = threading.Thread(target=self._run, name="evidence-recorder", daemon=True)
            self._thread.start()
        for owner in [*self.backend.jobs(), *self.backend.ray_jobs()]:
            self._queue.put(((owner.namespace or "", owner.name), False))
        return self

    def close(self) -> None:
        self._closing.set()
        if self._subscription is not None:
            self._subscription.close()
        self._queue.put((_STOP, False))
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _on_changes(self, batch: ChangeBatch) -> None:
        """Dispatcher thread: queue keys only (reads and captures happen on the recorder thread)."""
        for event in batch.events:
            obj = event.obj
            if isinstance(obj, (JobView, RayJobView)):
                if not getattr(obj, "owned_by_rayjob", False):
                    self._queue.put(((obj.namespace or "", obj.name), event.type is ChangeType.DELETED))
            elif event.kind in (ResourceKind.WORKLOAD, ResourceKind.POD):
                # A Workload's or pod's change can finish a run whose owner did not change (RayJob).
                owner = getattr(obj, "owner_name", None) or obj.labels.get("job-name")
                if owner and (obj.namespace or "", owner) in self._watching:
                    self._queue.put(((obj.namespace or "", owner), False))
        if batch.relisted & {ResourceKind.JOB, ResourceKind.RAY_JOB}:  # rebuilt from a list: look at every run again
            for owner in [*self.backend.jobs(), *self.backend.ray_jobs()]:
                self._queue.put(((owner.namespace or "", owner.name), False))
            for key in list(self._watching):
                self._queue.put((key, False))

    def drain(self) -> None:
        """Process what is queued now, on the calling thread (after ``start(thread=False)``)."""
        self._handle_batch(self._take_queued([]))

    def _take_queued(self, batch: list[tuple[RunKey, bool]]) -> list[tuple[RunKey, bool]]:
        while True:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                return batch

    def _run(self) -> None:
        while True:
            batch = self._take_queued([self._queue.get()])
            try:
                self._handle_batch([item for item in batch if item[0] != _STOP])
            except Exception as err:  # one bad read must not end the recorder (its runs come again when they change)
                self.last_error = f"{type(err).__name__}: {err}"
            if any(key == _STOP for key, _ in batch):
                return

    def _give_way(self, napped: float) -> float:
        """Sleep while the foreground is busy (at most what is left of this batch's naps); the seconds slept."""
        waits_until = self.foreground_busy_until
        if waits_until is None or napped >= MAX_NAPS_PER_BATCH_S:
            return 0.0
        return give_way(lambda: 0.0 if self._closing.is_set() else waits_until(), MAX_NAPS_PER_BATCH_S - napped,
                        self.nap)

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

    def _handle_batch(self, batch: list[tuple[RunKey, bool]]) -> None:
        """Everything queued since the last batch.  Each run's objects come from the run index kept
        from the cache's changes (read again, for what changed, before each run): a tick that
        changes hundreds of runs reads each changed object once, and a batch of a few runs on a
        cluster of 20,000 costs those few runs, not the lists."""
        latest: dict[RunKey, bool] = {}
        for key, deleted in batch:
            latest[key] = deleted  # the last change of a run says whether it is gone
        if not latest:
            return
        napped = self._give_way(0.0)  # before the read: what is recorded is what the cluster holds after the wait
        for count, (key, deleted) in enumerate(latest.items()):
            if count and count % RUNS_BETWEEN_NAPS == 0:
                napped += self._give_way(napped)
            owner = None if deleted else self._owner(key)
            try:
                if owner is None:
                    self._handle(key, None, None)
                    continue
                # after the owner (a capture before may have taken seconds): its objects are at least as
                # new as it, so a run seen finished is recorded from the pods it finished with
                index = self._index.current()
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
