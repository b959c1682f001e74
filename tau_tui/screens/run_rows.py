"""The Runs pane's rows, kept from one read to the next.

A full read looks at every Job and RayJob: the first read, and one after anything the kept rows
cannot follow one run at a time (a run or another Job gone, a pod of no run, a GPU fault that came
or went, a run cancelled from the pane, a notice in the table, a cursor on the cache's change feed
that says "read everything", a read that never reached the table, a replay's seek).  Any other read
looks only at the runs whose owner, Workloads, pods or events the change feed names since the last
read (through the pane's :class:`~tau_tui.core.operations.live_run_index.LiveRunIndex`), the failed runs (their
retry decision moves with the clock) and the runs whose age ticks over now.  The rows keep their
order by bisection and the table's update is planned for those rows alone, as the queue pane's
workloads are (``queue_workloads.py``): at 20,000 runs a read costs the changes, not the table.

A full read that a person waits for (the pane opened with no rows yet, or opened while its read
ahead runs), and a read ahead of the pane's first open, come in parts: once it has read at least :data:`RUNS_IN_A_FIRST_PART` runs it shows
them, and the next read goes on with the others from the same lists.  At 20,000 runs working out
every status is most of a second; the rows read by then are on screen meanwhile, the status line
saying how many are read.  A read ahead stops after its first part until the pane is opened, so
a pane nobody opened costs one part, not every run."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from rich.text import Text

from tau_tui.core.cluster.interfaces import ClusterBackend, is_tau_run
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import TAU_LABEL_PREFIX
from tau_tui.core.cluster.view_types import EventView, JobView, ObjectView, PodView, RayJobView, WorkloadView
from tau_tui.core.frozen_map import FrozenMap
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.live_run_index import LiveRunIndex
from tau_tui.core.operations.recovery import RetryDecision, retry_decision
from tau_tui.core.operations.run_index import RunIndex
from tau_tui.core.operations.run_objects import RunObjects
from tau_tui.core.operations.run_status_memo import RunInputs, RunStatusMemo
from tau_tui.core.operations.run_status_types import RunStatus
from tau_tui.core.operations.runstatus import compute_run_status
from tau_tui.core.ordered_keys import Move, OrderedKeys
from tau_tui.widgets.cell_text import age_changes_at, since
from tau_tui.widgets.keyed_table import Matchable
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_plan import Row, RowsView, TableState, plan_changed_rows

#: Row order: by state, then by namespace/name.
STATE_ORDER = {"queued": 0, "starting": 1, "running": 2, "failed": 3, "succeeded": 4, "releasing": 5, "cancelled": 6,
               "not_found": 7}
#: A read writes at most this many ages that ticked over, the longest due first (a world whose
#: 20,000 runs were made in one second ticks them all at once); the rest follow in the next reads.
AGES_PER_READ = 500
#: The kinds whose changes a quick read follows, besides the index's (Workloads, pods, events).
OWNER_KINDS = (ResourceKind.JOB, ResourceKind.RAY_JOB)
#: Runs a waited-for full read shows before it reads the others (about 0.1 s of work).
RUNS_IN_A_FIRST_PART = 2_500
#: A full read looks whether the pane still wants it, and whether a person waits, every this many runs.
RUNS_BETWEEN_LOOKS = 256

OrderKey = tuple[int, str]
Parts = tuple[list[WorkloadView], list[PodView], list[EventView]]
#: Reads the pods of a cancelled run on its MultiKueue worker: (worker, namespace, run) -> pods or None.
WorkerPods = Callable[[str, str, str], Any]


def _status_of(index: RunIndex, owner: JobView | RayJobView, gpu_faults: Mapping[str, NodeGpuFault],
               parts: Parts) -> RunStatus:
    return compute_run_status(index.objects(owner, gpu_faults, parts))


@dataclass
class RunRow:
    """A run's row as last drawn: kept while its status (the same object) and age are."""

    status: RunStatus
    cells: list
    age: str


@dataclass
class RunsRead:
    """One read's runs: the rows in order and what the pane shows of them."""

    rows: Sequence[Row]
    statuses: Mapping[str, RunStatus]
    decisions: dict[str, RetryDecision]
    owners: Mapping[str, JobView | RayJobView]
    matchable: Mapping[str, Matchable]
    counts: dict[str, int]
    #: Runs cancelled on a MultiKueue manager whose worker pods are now gone.
    released: set[str] = field(default_factory=set)
    #: The table's update when the read knew its change (a quick read), else None: plan every row.
    plan: Any = None
    full: bool = True
    #: Handed back through :meth:`RunRows.applied` once the table shows this read.
    token: int = 0
    #: A full read's first part: (runs read, runs in all); the next read reads the others.
    reading: tuple[int, int] | None = None


@dataclass
class _Kept:
    """What the last full or quick read left for the next one (worker thread only)."""

    backend: Any
    place: tuple
    faults: dict[str, NodeGpuFault]
    #: handed to the pane with each read: versions that are never changed (FrozenMap, OrderedKeys)
    owners: FrozenMap[str, JobView | RayJobView]
    statuses: FrozenMap[str, RunStatus]
    decisions: dict[str, RetryDecision]
    matchable: FrozenMap[str, Matchable]
    rows: dict[str, RunRow]
    #: the rows' order, for bisection (this reader's own: changed in place)
    order: list[OrderKey]
    #: the keys of ``order``, in its order; a read's moves make the next version
    keys: OrderedKeys
    cells: FrozenMap[str, Sequence]
    counts: dict[str, int]
    #: where each run's objects point back to it: owner uid, Ray cluster, and the names of its owner,
    #: Workloads and pods (events are about one of those)
    by_uid: dict[str, str]
    by_ray_cluster: dict[tuple[str, str], set[str]]
    by_name: dict[tuple[str, str], set[str]]
    #: the failed runs (their retry decision is made again on every read)
    failed: set[str] = field(default_factory=set)
    ages: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class _FullRead:
    """A full read under way: the lists its first part read, and what its parts worked out."""

    backend: Any
    place: tuple
    index: RunIndex
    owners: list[JobView | RayJobView]
    pods: list[PodView]
    #: every Job's (namespace, name), Tau's or not: a pod of none was left by a cancelled run
    job_names: set[tuple[str, str]]
    kept: _Kept
    #: each run's filter text and labels, as its parts read them
    matchable: dict[str, Matchable] = field(default_factory=dict)
    #: (state rank, key, owner or None for pods left by a cancelled Job, status)
    items: list[tuple[int, str, JobView | RayJobView | None, RunStatus]] = field(default_factory=list)
    #: the owners before this one are read
    next_owner: int = 0


class RunRows:
    """The runs table's rows, kept between the Runs pane's reads (one worker at a time)."""

    def __init__(self) -> None:
        #: Every run's objects, kept from the cache's changes.
        self.index: LiveRunIndex | None = None
        #: This reader's places in the change feed of Jobs and RayJobs.
        self._owner_changes = {kind: JournalCursor(kind) for kind in OWNER_KINDS}
        self._kept: _Kept | None = None
        #: A full read whose first part was shown: the next read goes on with it.
        self._full_read_under_way: _FullRead | None = None
        self._read_token = 0
        self._applied_token = -1
        #: The last read's rows (a full read keeps the cells of the runs that did not change).
        self._kept_rows: dict[str, RunRow] = {}
        #: Reads of every run, reads of the changed ones, rows built and run statuses worked out
        #: (tests bound the work by them).
        self.full_reads = 0
        self.quick_reads = 0
        self.rows_built = 0
        self.statuses_computed = 0

    def applied(self, token: int) -> None:
        """UI thread: the table shows the read of ``token`` (the next read can go on from it)."""
        self._applied_token = token

    def forget(self) -> None:
        """The next read is a full one (from the start)."""
        self._kept = None
        self._full_read_under_way = None

    def read(self, backend: ClusterBackend, place: tuple, now: datetime, gpu_faults: dict[str, NodeGpuFault],
             statuses: RunStatusMemo, cancelled: Mapping[str, Any], worker_pods: WorkerPods, quick_allowed: bool,
             table: TableState | None, keep_reading: Callable[[], None],
             waited_for: Callable[[], bool] | None = None) -> RunsRead:
        """``waited_for``: whether this read may end after its first part (asked as it goes): a person
        waits for it, or it is made ahead of the pane's first open.  A full read then shows the runs
        read so far once there are :data:`RUNS_IN_A_FIRST_PART`, and the next read goes on with the
        others (for a read ahead, once the pane is opened)."""
        self._read_token += 1
        under_way = self._full_read_under_way
        if under_way is not None and under_way.backend is backend and under_way.place == place:
            # the lists and the index as the first part read them: the read after this one follows
            # every change since then (the journal from its generations, the index's moves)
            return self._full_read(under_way, now, statuses, cancelled, worker_pods, keep_reading)
        # what changed, taken before the data is read: a change in between is read again next time
        owners_changed = {kind: cursor.read(backend).keys for kind, cursor in self._owner_changes.items()}
        if self.index is None or self.index.backend is not backend:
            self.index = LiveRunIndex(backend)
        index = self.index.current()  # the lists once, then what changed since the last read
        kept = self._kept
        if kept is not None and quick_allowed and not cancelled and kept.backend is backend and kept.place == place \
                and self._applied_token == self._read_token - 1 and not self.index.relisted and kept.faults == gpu_faults:
            dirty = self._dirty_runs(kept, backend, owners_changed, self.index.moved)
            if dirty is not None:
                try:
                    quick = self._quick_read(kept, index, dirty, now, statuses, table)
                except BaseException:
                    self._kept = None  # a quick read stopped half way changed what was kept
                    raise
                self.quick_reads += 1
                quick.token = self._read_token
                return quick
        self.full_reads += 1
        self._kept = None  # until this read is done: one stopped half way keeps nothing
        owners: list[JobView | RayJobView] = [*backend.jobs(), *backend.ray_jobs()]
        full = _FullRead(backend, place, index, owners, backend.pods(),
                         {(j.namespace or "", j.name) for j in backend.jobs(tau_managed_only=False)},
                         _Kept(backend, place, dict(gpu_faults), FrozenMap(), FrozenMap(), {}, FrozenMap(), {}, [],
                               OrderedKeys(), FrozenMap(), {}, {}, {}, {}))
        return self._full_read(full, now, statuses, cancelled, worker_pods, keep_reading, waited_for)

    # -- one run ---------------------------------------------------------------------------------

    def _status(self, key: str, owner: JobView | RayJobView, index: RunIndex, gpu_faults: Mapping[str, NodeGpuFault],
                statuses: RunStatusMemo, parts: Parts) -> RunStatus:
        inputs = RunInputs.of(owner, *parts, gpu_faults)
        status, computed = statuses.status(key, inputs, partial(_status_of, index, owner, gpu_faults, parts))
        self.statuses_computed += computed
        return status

    def _row(self, key: str, owner: JobView | RayJobView, status: RunStatus, now: datetime, previous: RunRow | None,
             state_cells: dict[tuple[str, str], Text]) -> RunRow:
        run_age = since(owner.creation_timestamp, now)
        if previous is None or previous.status is not status:
            self.rows_built += 1
            where = status.cluster or ("multikueue" if status.multikueue else "local")
            words = (status.state, status.display_state)
            state_cell = state_cells.get(words)
            if state_cell is None:
                state_cell = state_cells[words] = status_text(*words)
            return RunRow(status, [state_cell, key, status.kind, status.queue or "—", where, run_age], run_age)
        if previous.age != run_age:  # every run's age, once a minute: only that cell is new
            return RunRow(status, [*previous.cells[:-1], run_age], run_age)
        return previous

    @staticmethod
    def _matchable(key: str, owner: JobView | RayJobView, status: RunStatus) -> Matchable:
        return (f"{key} {status.state} {status.display_state} {status.kind} {status.queue or ''}", owner.labels)

    @staticmethod
    def _point_back(kept: _Kept, key: str, owner: JobView | RayJobView, parts: Parts) -> None:
        """Note where the run's objects lead back to it (a name noted before and no longer the run's
        only makes a later read look at the run once more)."""
        ns = owner.namespace or ""
        if owner.uid:
            kept.by_uid[owner.uid] = key
        if isinstance(owner, RayJobView) and owner.ray_cluster_name:
            kept.by_ray_cluster.setdefault((ns, owner.ray_cluster_name), set()).add(key)
        workloads, pods, _ = parts
        for name in (owner.name, *(w.name for w in workloads), *(p.name for p in pods)):
            kept.by_name.setdefault((ns, name), set()).add(key)

    # -- reads -----------------------------------------------------------------------------------

    def _full_read(self, full: _FullRead, now: datetime, statuses: RunStatusMemo, cancelled: Mapping[str, Any],
                   worker_pods: WorkerPods, keep_reading: Callable[[], None],
                   waited_for: Callable[[], bool] | None = None) -> RunsRead:
        """Reads the owners of ``full`` not read yet (the first part only, while ``waited_for``),
        then, when none is left, the runs of no owner and the rows in order."""
        # a read stopped among the owners (the pane left the screen) goes on from there next time:
        # each owner is read whole before it counts as read
        self._full_read_under_way = full
        kept, index = full.kept, full.index
        start = stop = full.next_owner
        while stop < len(full.owners):
            if stop % RUNS_BETWEEN_LOOKS == 0:
                keep_reading()
                if waited_for is not None and stop - start >= RUNS_IN_A_FIRST_PART and waited_for():
                    break
            owner = full.owners[stop]
            key = f"{owner.namespace or ''}/{owner.name}"
            parts = index.parts(owner)
            status = self._status(key, owner, index, kept.faults, statuses, parts)
            if status.state == "failed":  # the backoff moves with the clock: decided on every read
                kept.decisions[key] = retry_decision(index.objects(owner, kept.faults, parts), now)
                kept.failed.add(key)
            full.matchable[key] = self._matchable(key, owner, status)
            self._point_back(kept, key, owner, parts)
            full.items.append((STATE_ORDER[status.state], key, owner, status))
            stop += 1
            full.next_owner = stop
        if stop < len(full.owners):
            return self._first_part(full, now)
        self._full_read_under_way = None  # a last part stopped half way leaves nothing to go on from
        read = self._last_part(full, now, statuses, cancelled, worker_pods, keep_reading)
        read.token = self._read_token
        return read

    def _first_part(self, full: _FullRead, now: datetime) -> RunsRead:
        """The rows of the runs a full read has read so far, in order (the table shows them while
        the next read reads the others)."""
        kept = full.kept
        rows: list[Row] = []
        state_cells: dict[tuple[str, str], Text] = {}
        counts: dict[str, int] = {}
        read_rows: dict[str, RunRow] = {}
        statuses: dict[str, RunStatus] = {}
        owners: dict[str, JobView | RayJobView] = {}
        for _rank, key, owner, status in sorted(full.items, key=lambda item: (item[0], item[1])):
            assert owner is not None  # only a last part reads runs of no owner
            row = read_rows[key] = self._row(key, owner, status, now, self._kept_rows.get(key), state_cells)
            rows.append((key, row.cells))
            statuses[key] = status
            owners[key] = owner
            counts[status.state] = counts.get(status.state, 0) + 1
        self._kept_rows = {**self._kept_rows, **read_rows}  # the next part keeps these rows
        return RunsRead(rows, statuses, dict(kept.decisions), owners, {key: full.matchable[key] for key in owners},
                        counts, token=self._read_token, reading=(full.next_owner, len(full.owners)))

    def _last_part(self, full: _FullRead, now: datetime, statuses: RunStatusMemo, cancelled: Mapping[str, Any],
                   worker_pods: WorkerPods, keep_reading: Callable[[], None]) -> RunsRead:
        index, kept, owners, pods, items, job_names = full.index, full.kept, full.owners, full.pods, full.items, full.job_names
        previous = self._kept_rows
        # Cancelled Jobs whose pods still terminate on their nodes: "releasing compute" until they are gone.
        leftovers: dict[tuple[str, str], list] = {}
        for count, pod in enumerate(pods):
            if count % RUNS_BETWEEN_LOOKS == 0:
                keep_reading()
            run = pod.labels.get("job-name")
            if run and (pod.namespace or "", run) not in job_names and pod.node_name and not pod.terminal \
                    and any(k.startswith(TAU_LABEL_PREFIX) for k in pod.labels):
                leftovers.setdefault((pod.namespace or "", run), []).append(pod)
        for (ns, run), run_pods in leftovers.items():
            status = compute_run_status(RunObjects(ns, run, pods=tuple(run_pods), cancelled=f"{ns}/{run}" in cancelled))
            full.matchable[f"{ns}/{run}"] = (f"{ns}/{run} {status.state}", run_pods[0].labels)
            items.append((STATE_ORDER[status.state], f"{ns}/{run}", None, status))
        shown = {f"{o.namespace or ''}/{o.name}" for o in owners} | {f"{ns}/{run}" for ns, run in leftovers}
        released: set[str] = set()
        for key in sorted(set(cancelled) - shown):
            ns, _, run = key.partition("/")
            entry = cancelled[key]
            worker = entry.worker
            found = worker_pods(worker, ns, run) if worker else None
            # A RayJob's pods carry its Ray cluster's label, not job-name: found by that label.
            ray_pods = index.ray_cluster_pods(ns, entry.ray_cluster) if entry.ray_cluster else []
            status = compute_run_status(RunObjects(ns, run, pods=tuple(ray_pods), cancelled=True, worker=worker,
                                                   worker_pods=found))
            if worker and status.state == "cancelled":
                released.add(key)
            full.matchable[key] = (f"{key} {status.state}", {})
            items.append((STATE_ORDER[status.state], key, None, status))
        rows: list[Row] = []
        state_cells: dict[tuple[str, str], Text] = {}
        read_statuses: dict[str, RunStatus] = {}
        read_owners: dict[str, JobView | RayJobView] = {}
        read_cells: dict[str, Sequence] = {}
        for count, (rank, key, run_owner, status) in enumerate(sorted(items, key=lambda item: (item[0], item[1]))):
            if count % RUNS_BETWEEN_LOOKS == 0:
                keep_reading()
            read_statuses[key] = status
            kept.order.append((rank, key))
            if run_owner is None:
                cells: Sequence = [status_text(status.state, status.display_state), key, "Job", "—", "local", "—"]
            else:
                read_owners[key] = run_owner
                row = kept.rows[key] = self._row(key, run_owner, status, now, previous.get(key), state_cells)
                cells = row.cells
                if run_owner.creation_timestamp is not None:
                    kept.ages.append((age_changes_at(run_owner.creation_timestamp, now), key))
            read_cells[key] = cells
            rows.append((key, cells))
        heapq.heapify(kept.ages)
        statuses.retain(read_owners.keys())
        for status in read_statuses.values():
            kept.counts[status.state] = kept.counts.get(status.state, 0) + 1
        # handed over as they are: never changed again (a quick read makes their next versions)
        kept.statuses, kept.owners, kept.cells = FrozenMap(read_statuses), FrozenMap(read_owners), FrozenMap(read_cells)
        kept.matchable, kept.keys = FrozenMap(full.matchable), OrderedKeys(key for _, key in kept.order)
        self._kept_rows = kept.rows
        # a read with rows of no run (leftovers, cancelled runs) or two runs under one key is not one to go on from
        if len(kept.owners) == len(owners) == len(items) and not cancelled:
            self._kept = kept
        return RunsRead(rows, kept.statuses, dict(kept.decisions), kept.owners, kept.matchable, dict(kept.counts), released)

    def _dirty_runs(self, kept: _Kept, backend: ClusterBackend, owners_changed: Mapping[ResourceKind, set[tuple[str, str]] | None],
                    moved: list[tuple[ObjectView | None, ObjectView | None]]) -> dict[str, JobView | RayJobView] | None:
        """The runs whose objects changed since the last read, each with its owner as the cache
        holds it; None when a full read must find them."""
        dirty: dict[str, JobView | RayJobView] = {}
        for kind in OWNER_KINDS:
            changed = owners_changed[kind]
            if changed is None:
                return None
            for namespace, name in changed:
                key = f"{namespace}/{name}"
                view = backend.get(kind, name, namespace or None)
                if not isinstance(view, JobView | RayJobView):
                    return None  # gone: its pods may be left terminating (a full read's "releasing")
                if not is_tau_run(view):
                    if key in kept.owners:
                        return None  # a run no longer one
                    continue  # another Job (a RayJob's submitter): no run's row
                if key in kept.owners and type(kept.owners[key]) is not type(view):
                    return None  # a Job and a RayJob of one name: a full read's
                dirty[key] = view
        for pair in moved:
            for view in pair:
                if view is None:
                    continue
                found = self._runs_of(kept, backend, view)
                if found is None:
                    return None
                for key in found:
                    if key not in dirty:
                        dirty[key] = kept.owners[key]
        return dirty

    @staticmethod
    def _runs_of(kept: _Kept, backend: ClusterBackend, view: ObjectView) -> set[str] | None:
        """The runs an object is part of (may name a run it no longer is, never miss one), or None
        for a pod a cancelled Job left (a full read's "releasing")."""
        ns = view.namespace or ""
        if isinstance(view, WorkloadView):
            return {key for uid in (view.labels.get("kueue.x-k8s.io/job-uid"), (view.controller_owner or {}).get("uid"))
                    if uid and (key := kept.by_uid.get(uid)) and key in kept.owners}
        if isinstance(view, PodView):
            runs: set[str] = set()
            job = view.labels.get("job-name")
            if job:
                key = f"{ns}/{job}"
                if key in kept.owners:
                    runs.add(key)
                elif any(k.startswith(TAU_LABEL_PREFIX) for k in view.labels) and backend.get(ResourceKind.JOB, job, ns or None) is None:
                    return None
            cluster = view.labels.get("ray.io/cluster")
            if cluster:
                runs.update(key for key in kept.by_ray_cluster.get((ns, cluster), ()) if key in kept.owners)
            return runs
        if isinstance(view, EventView):
            return {key for key in kept.by_name.get((ns, view.involved_name), ()) if key in kept.owners}
        return set()

    def _quick_read(self, kept: _Kept, index: RunIndex, dirty: dict[str, JobView | RayJobView],
                    now: datetime, statuses: RunStatusMemo, table: TableState | None) -> RunsRead:
        stamp = now.timestamp()
        aged: set[str] = set()
        for _ in range(AGES_PER_READ):
            if not kept.ages or kept.ages[0][0] > stamp:
                break
            key = heapq.heappop(kept.ages)[1]
            aged.add(key)
            if key not in dirty:
                dirty[key] = kept.owners[key]
        changed_rows: dict[str, Sequence] = {}
        state_cells: dict[tuple[str, str], Text] = {}
        owners, run_statuses = kept.owners.draft(), kept.statuses.draft()
        matchable, cells = kept.matchable.draft(), kept.cells.draft()
        moves: list[Move] = []
        for key, owner in dirty.items():
            parts = index.parts(owner)
            status = self._status(key, owner, index, kept.faults, statuses, parts)
            self._point_back(kept, key, owner, parts)
            new_run = key not in owners
            owners[key] = owner
            before = run_statuses.get(key)
            if status is not before:
                new_order = (STATE_ORDER[status.state], key)
                old_order = None if before is None else (STATE_ORDER[before.state], key)
                if before is not None:
                    kept.counts[before.state] -= 1
                if old_order != new_order:
                    if old_order is not None:
                        del kept.order[bisect_left(kept.order, old_order)]
                        moves.append(("remove", key))
                    at = bisect_left(kept.order, new_order)
                    kept.order.insert(at, new_order)
                    moves.append(("insert", at, key))
                kept.counts[status.state] = kept.counts.get(status.state, 0) + 1
                run_statuses[key] = status
                matchable[key] = self._matchable(key, owner, status)
                if status.state == "failed":
                    kept.failed.add(key)
                else:
                    kept.failed.discard(key)
                    kept.decisions.pop(key, None)
            row = self._row(key, owner, status, now, kept.rows.get(key), state_cells)
            if row is not kept.rows.get(key):
                kept.rows[key] = row
                cells[key] = changed_rows[key] = row.cells
            if (new_run or key in aged) and owner.creation_timestamp is not None:
                heapq.heappush(kept.ages, (age_changes_at(owner.creation_timestamp, now), key))
        for key in kept.failed:  # the backoff moves with the clock: decided on every read
            owner = owners.get(key)
            kept.decisions[key] = retry_decision(index.objects(owner, kept.faults, index.parts(owner)), now)
        # the next versions of what the pane holds: each costs what this read changed
        kept.owners, kept.statuses = owners.freeze(), run_statuses.freeze()
        kept.matchable, kept.cells = matchable.freeze(), cells.freeze()
        kept.keys = kept.keys.moved(moves) if moves else kept.keys
        self._kept_rows = kept.rows
        plan = plan_changed_rows(table, kept.keys, changed_rows, (), kept.matchable) if table is not None else None
        return RunsRead(RowsView(kept.keys, kept.cells), kept.statuses, dict(kept.decisions), kept.owners,
                        kept.matchable, dict(kept.counts), plan=plan, full=False)


def type_kind(owner: JobView | RayJobView) -> ResourceKind:
    return ResourceKind.JOB if isinstance(owner, JobView) else ResourceKind.RAY_JOB
