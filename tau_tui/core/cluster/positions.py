"""Queue positions: Kueue's pending order, visibility API parsing, history.

When the visibility API (``visibility.kueue.x-k8s.io``) is absent or
forbidden, positions are computed from Kueue's documented order
(``pkg/cache/queue/cluster_queue.go``): effective priority descending, then
queue-order timestamp ascending, then UID ascending.  Such positions are
*estimated*: the hidden "sticky head", admission fair sharing and in-flight
admissions cannot be seen from outside."""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.view_types import LocalQueueView, WorkloadView


class PositionSource(str, enum.Enum):
    VISIBILITY_API = "visibility-api"
    #: Computed from Kueue's documented order (priority, queue-order time,
    #: UID).  Must be displayed as estimated.
    ESTIMATED = "estimated"


@dataclass(frozen=True, slots=True)
class PendingPosition:
    """A pending workload's place in line, counted from 0 like Kueue."""

    namespace: str
    name: str
    uid: str
    local_queue: str | None
    cluster_queue: str | None
    priority: int
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    creation_timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class PositionReport:
    """Positions for one queue.  ``estimated`` is True unless every entry came
    from the visibility API.  ``message`` says why it is estimated (API
    absent, forbidden, ...), plain text."""

    queue_kind: Literal["ClusterQueue", "LocalQueue"]
    queue: str
    namespace: str | None
    entries: tuple[PendingPosition, ...]
    source: PositionSource
    message: str = ""
    at: datetime | None = None

    @property
    def estimated(self) -> bool:
        return self.source is not PositionSource.VISIBILITY_API

    def position_of(self, namespace: str, name: str) -> PendingPosition | None:
        for entry in self.entries:
            if entry.namespace == namespace and entry.name == name:
                return entry
        return None


@dataclass(frozen=True, slots=True)
class PositionSample:
    at: datetime
    position_in_local_queue: int | None
    position_in_cluster_queue: int | None
    source: PositionSource


@dataclass(frozen=True, slots=True)
class PositionHistory:
    """Short history of one workload's place in line."""

    namespace: str
    name: str
    samples: tuple[PositionSample, ...]
    pending_since: datetime | None  # queue-order timestamp

    def time_in_queue(self, now: datetime) -> float | None:
        if self.pending_since is None:
            return None
        return max(0.0, (now - self.pending_since).total_seconds())

    @property
    def change(self) -> int | None:
        """Change in local-queue position from the oldest kept sample to the
        newest (negative = moved forward)."""
        positions = [s.position_in_local_queue for s in self.samples if s.position_in_local_queue is not None]
        if len(positions) < 2:
            return None
        return positions[-1] - positions[0]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_pending(wl: WorkloadView) -> bool:
    """In a queue, no quota reserved, not finished, not deactivated."""
    if not wl.queue_name or not wl.active:
        return False
    if wl.status_word != "pending":
        return False
    return True


def kueue_order_key(wl: WorkloadView) -> tuple[int, datetime, str]:
    return (-wl.effective_priority, wl.queue_order_timestamp or _EPOCH, wl.uid)


def cluster_queue_of(wl: WorkloadView, lq_to_cq: Mapping[tuple[str, str], str]) -> str | None:
    return lq_to_cq.get((wl.namespace or "", wl.queue_name or ""))


def estimate_cluster_queue_order(
    workloads: Iterable[WorkloadView], local_queues: Iterable[LocalQueueView]
) -> dict[str, list[PendingPosition]]:
    """Pending workloads of every ClusterQueue in Kueue order, with positions
    in the ClusterQueue and in their (namespace, LocalQueue)."""
    lq_to_cq = {(lq.namespace or "", lq.name): lq.cluster_queue for lq in local_queues}
    by_cq: dict[str, list[WorkloadView]] = {}
    for wl in workloads:
        if not is_pending(wl):
            continue
        cq = cluster_queue_of(wl, lq_to_cq)
        if cq is None:
            continue  # LocalQueue missing: Kueue keeps it inadmissible outside any CQ heap
        by_cq.setdefault(cq, []).append(wl)
    out: dict[str, list[PendingPosition]] = {}
    for cq, items in by_cq.items():
        items.sort(key=kueue_order_key)
        per_lq: dict[tuple[str, str], int] = {}
        entries = []
        for index, wl in enumerate(items):
            lq_key = (wl.namespace or "", wl.queue_name or "")
            lq_pos = per_lq.get(lq_key, 0)
            per_lq[lq_key] = lq_pos + 1
            entries.append(
                PendingPosition(
                    namespace=wl.namespace or "",
                    name=wl.name,
                    uid=wl.uid,
                    local_queue=wl.queue_name,
                    cluster_queue=cq,
                    priority=wl.effective_priority,
                    position_in_cluster_queue=index,
                    position_in_local_queue=lq_pos,
                    creation_timestamp=wl.creation_timestamp,
                )
            )
        out[cq] = entries
    return out


def parse_pending_workloads_summary(
    body: Mapping[str, Any], cluster_queue: str | None, default_namespace: str | None = None
) -> list[PendingPosition]:
    """Items of a visibility ``PendingWorkloadsSummary`` (positions from 0)."""
    out = []
    for item in body.get("items") or ():
        meta = item.get("metadata") or {}
        out.append(
            PendingPosition(
                namespace=meta.get("namespace") or default_namespace or "",
                name=meta.get("name", ""),
                uid=meta.get("uid", ""),
                local_queue=item.get("localQueueName"),
                cluster_queue=cluster_queue,
                priority=int(item.get("priority") or 0),
                position_in_cluster_queue=item.get("positionInClusterQueue"),
                position_in_local_queue=item.get("positionInLocalQueue"),
                creation_timestamp=parse_time(meta.get("creationTimestamp")),
            )
        )
    out.sort(key=lambda p: (p.position_in_cluster_queue if p.position_in_cluster_queue is not None else 1 << 30))
    return out


class PositionTracker:
    """A short per-workload history of positions (``maxlen`` samples; only
    changes are kept, plus the latest time each position was confirmed).  Each history is a tuple,
    not a deque: 20,000 pending Workloads hold one or two samples each, and an empty deque alone
    takes 760 bytes."""

    def __init__(self, maxlen: int = 32, max_workloads: int = 50_000):
        self.maxlen = maxlen
        self.max_workloads = max_workloads
        self._lock = threading.Lock()
        self._samples: dict[tuple[str, str], tuple[PositionSample, ...]] = {}
        self._pending_since: dict[tuple[str, str], datetime | None] = {}

    def record(self, report: PositionReport, pending_since: Mapping[tuple[str, str], datetime | None]) -> None:
        at = report.at or datetime.now(UTC)
        with self._lock:
            for entry in report.entries:
                key = (entry.namespace, entry.name)
                sample = PositionSample(at, entry.position_in_local_queue, entry.position_in_cluster_queue, report.source)
                samples = self._samples.get(key)
                if samples is None:
                    if len(self._samples) >= self.max_workloads:
                        self._samples.pop(next(iter(self._samples)))
                    samples = ()
                if samples and (
                    samples[-1].position_in_local_queue,
                    samples[-1].position_in_cluster_queue,
                    samples[-1].source,
                ) == (sample.position_in_local_queue, sample.position_in_cluster_queue, sample.source) and len(samples) > 1 and (
                    samples[-2].position_in_local_queue,
                    samples[-2].position_in_cluster_queue,
                ) == (sample.position_in_local_queue, sample.position_in_cluster_queue):
                    samples = (*samples[:-1], sample)  # same position again: just move its time
                else:
                    samples = (*samples, sample)[-self.maxlen:]
                self._samples[key] = samples
                self._pending_since[key] = pending_since.get(key, self._pending_since.get(key))

    def history(self, namespace: str, name: str) -> PositionHistory | None:
        with self._lock:
            samples = self._samples.get((namespace, name))
            if samples is None:
                return None
            return PositionHistory(namespace, name, samples, self._pending_since.get((namespace, name)))

    def export(self) -> dict[tuple[str, str], tuple[list[PositionSample], datetime | None]]:
        """Every history (a session recording's keyframe keeps them: :meth:`restore` puts them back)."""
        with self._lock:
            return {key: (list(samples), self._pending_since.get(key)) for key, samples in self._samples.items()}

    def restore(self, histories: Mapping[tuple[str, str], tuple[list[PositionSample], datetime | None]]) -> None:
        with self._lock:
            self._samples = {key: tuple(samples)[-self.maxlen:] for key, (samples, _) in histories.items()}
            self._pending_since = {key: since for key, (_, since) in histories.items()}

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._samples.pop((namespace, name), None)
            self._pending_since.pop((namespace, name), None)


@dataclass(frozen=True)
class CachedPositions:
    """One LocalQueue's report with its entries by workload name (a look-up per row, not a scan)."""

    report: PositionReport
    by_name: Mapping[str, PendingPosition]
    #: The pending workloads the report was read for (compared by identity: the cache builds a new view per change).
    members: tuple[WorkloadView, ...]
    read_at: float


class LocalQueuePositions:
    """Position reports per LocalQueue, re-read only when that queue's pending
    workloads changed (or after ``max_age_s``), not on every tick: each read can
    be a visibility API call.  Updates are one at a time (a refresh worker, or
    :class:`~tau_tui.core.cluster.background_positions.BackgroundPositions`)."""

    def __init__(self, max_age_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.max_age_s = max_age_s
        self._clock = clock
        self._cached: dict[tuple[str, str], CachedPositions] = {}
        #: When each queue's report was last read, its report kept when it came back the same.
        self._checked_at: dict[tuple[str, str], float] = {}
        self._updating = threading.Lock()
        #: How many reports were read (tests bound work by it).
        self.reads = 0

    @property
    def clock(self) -> Callable[[], float]:
        """The clock reports are aged by."""
        return self._clock

    def current(self, queues: Iterable[tuple[str, str]]) -> dict[tuple[str, str], CachedPositions]:
        """The reports held now for ``queues`` (no read; a queue never read has none)."""
        cached = self._cached
        return {queue: cached[queue] for queue in queues if queue in cached}

    def update(
        self,
        pending_by_queue: Mapping[tuple[str, str], Sequence[WorkloadView]],
        read: Callable[[str, str], PositionReport],
        reads_at_most: int | None = None,
    ) -> tuple[dict[tuple[str, str], CachedPositions], list[str]]:
        """Reports for every queue in ``pending_by_queue`` and the problems met (one line each).
        ``reads_at_most``: ask for this many reports at most (one visibility API call each): first
        the queues never read, then those whose pending Workloads changed, then those only older
        than ``max_age_s``, the longest unread first; the others keep their last report until a
        later call (fifty calls in one refresh held a change up for seconds)."""
        with self._updating:
            return self._update(pending_by_queue, read, reads_at_most)

    def _update(
        self,
        pending_by_queue: Mapping[tuple[str, str], Sequence[WorkloadView]],
        read: Callable[[str, str], PositionReport],
        reads_at_most: int | None,
    ) -> tuple[dict[tuple[str, str], CachedPositions], list[str]]:
        problems: list[str] = []
        fresh: dict[tuple[str, str], CachedPositions] = {}
        now = self._clock()
        due: list[tuple[int, float, tuple[str, str], tuple[WorkloadView, ...]]] = []
        for queue, pending in pending_by_queue.items():
            members = pending if isinstance(pending, tuple) else tuple(pending)
            cached = self._cached.get(queue)
            if cached is None:
                due.append((0, 0.0, queue, members))
                continue
            same = same_members(cached.members, members)
            if same and cached.members is not members:
                # held with the caller's tuple from now on: the next look is one comparison
                cached = self._cached[queue] = replace(cached, members=members)
            checked_at = self._checked_at.get(queue, cached.read_at)
            if same and now - checked_at < self.max_age_s:
                fresh[queue] = cached
            else:
                due.append((2 if same else 1, checked_at, queue, members))
        due.sort(key=lambda item: item[:2])
        for index, (_, _, queue, members) in enumerate(due):
            cached = self._cached.get(queue)
            if reads_at_most is not None and index >= reads_at_most:
                if cached is not None:
                    fresh[queue] = cached  # read in a later call; its last report meanwhile
                continue
            try:
                report = read(queue[0], queue[1])
            except Exception as err:  # keep the last report; say why it is not current
                problems.append(f"positions unavailable for {queue[0]}/{queue[1]}: {err}")
                if cached is not None:
                    fresh[queue] = cached
                continue
            self.reads += 1
            fresh[queue] = self._keep(queue, cached, report, members)
        self._cached = fresh
        self._checked_at = {queue: at for queue, at in self._checked_at.items() if queue in fresh}
        return fresh, problems

    def read_queue(self, queue: tuple[str, str], members: tuple[WorkloadView, ...],
                   read: Callable[[str, str], PositionReport]) -> tuple[bool, str | None]:
        """Reads one queue's report for ``members`` (a background reader's step).  Returns whether
        the report held for it changed (one that came back the same is kept, for these members, so
        its rows need no new look) and the problem met, if any (the last report is then kept)."""
        with self._updating:
            cached = self._cached.get(queue)
            try:
                report = read(queue[0], queue[1])
            except Exception as err:
                return False, f"positions unavailable for {queue[0]}/{queue[1]}: {err}"
            self.reads += 1
            kept = self._cached[queue] = self._keep(queue, cached, report, members)
            return cached is None or kept.report is not cached.report, None

    def holds(self, queue: tuple[str, str]) -> CachedPositions | None:
        """The report held for ``queue`` (no read)."""
        return self._cached.get(queue)

    def checked_at(self, queue: tuple[str, str]) -> float | None:
        """When ``queue``'s report was last read (on this clock), None when it never was."""
        cached = self._cached.get(queue)
        return None if cached is None else self._checked_at.get(queue, cached.read_at)

    def _keep(self, queue: tuple[str, str], cached: CachedPositions | None, report: PositionReport,
              members: tuple[WorkloadView, ...]) -> CachedPositions:
        # aged from when the read finished: on a loaded machine a round of reads can outlast max_age_s
        now = self._clock()
        self._checked_at[queue] = now
        if cached is not None and same_report(cached.report, report):
            # the same places in line: the report held stays (a reader compares it by identity), now
            # for these members
            return cached if cached.members is members else replace(cached, members=members)
        return CachedPositions(report, {e.name: e for e in report.entries if e.namespace == queue[0]}, members, now)

    def invalidate(self) -> None:
        self._cached = {}
        self._checked_at = {}


def same_members(before: Sequence[WorkloadView], now: Sequence[WorkloadView]) -> bool:
    """The same tuple (a reader that keeps each queue's members until one changes) or the same views
    (compared by identity: the cache builds a new view per change)."""
    return before is now or (len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True)))


def same_report(before: PositionReport, now: PositionReport) -> bool:
    """The same places in line, from the same source, for the same reason (its time aside)."""
    return before.entries == now.entries and before.source is now.source and before.message == now.message
