"""The queue pane's workloads table, kept from one read to the next.

A full read looks at every Workload: the first read, one while the first list still comes in, one
after a queue was held or released or LocalQueues came or went, after a replay's seek, after a read
that never reached the table, and when its cursors on the cache's change feed say "read everything"
(the journal no longer reaches back to the last read, or so many Workloads changed that reading each
costs more than reading all: ``journal_cursor.INCREMENTAL_COST``).  Any other read looks only at what
moved since the last one: the Workloads and the warning events the cursors name, the pending rows of each
LocalQueue whose position report came since (read on a thread of their own:
``BackgroundPositions``), and the rows whose "Waiting" age ticks over now.  The rows keep their
order by bisection, and the table's update is planned for those rows alone (``plan_changed_rows``).
At 20,000 Workloads changing 200 times a second a read costs the changes, not the table."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.text import Text

from tau_tui.core.cluster.background_positions import BackgroundPositions
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.positions import CachedPositions, LocalQueuePositions, PendingPosition
from tau_tui.core.cluster.view_types import EventView, WorkloadView
from tau_tui.core.frozen_map import FrozenMap
from tau_tui.core.ordered_keys import Move, OrderedKeys
from tau_tui.widgets.cell_text import age, age_changes_at, delta, one_line, shared
from tau_tui.widgets.keyed_table import ColumnSpec, Matchable
from tau_tui.widgets.status_text import status_text, style_of
from tau_tui.widgets.table_plan import Row, RowsView, TablePlan, TableState, plan_changed_rows

#: A read writes at most this many "Waiting" ages that ticked over, the longest due first: a world
#: whose 18,000 Workloads were created in one second ticks them all each second for a minute, and a
#: change to a row must not wait behind them (they are late by a few seconds then, never wrong
#: for longer; a full read writes every one).
AGES_PER_READ = 500
#: What the "In line" column shows while the positions are being read.
POSITION_READING = "…"
#: Row order: pending first, then by namespace, queue, place in line and name.
STATE_ORDER = {"pending": 0, "quotaReserved": 1, "admitted": 2, "finished": 3}
#: shift+letter sorts (k9s); at narrow widths the optional ones go first, so state, place in line,
#: name and why pending stay on screen at 80 columns.
WORKLOAD_COLUMNS = [
    ColumnSpec("state", "State", "S"), ColumnSpec("pos", "In line", "P"), ColumnSpec("delta", "Δ", optional=True),
    ColumnSpec("name", "Workload", "N", flexible=True, min_width=16, cut="middle"), ColumnSpec("queue", "Queue", "Q", optional=True),
    ColumnSpec("waiting", "Waiting", "A", optional=True), ColumnSpec("prio", "Prio", "O", optional=True),
    ColumnSpec("why", "Why pending", "W", flexible=True, min_width=12),
]
#: Where the cells that move without their Workload changing are in a row.
_CELL_OF = {column.key: index for index, column in enumerate(WORKLOAD_COLUMNS)}
POS_CELL, DELTA_CELL, WAITING_CELL, NAME_CELL = _CELL_OF["pos"], _CELL_OF["delta"], _CELL_OF["waiting"], _CELL_OF["name"]

_NO_TIME = datetime.min.replace(tzinfo=UTC)
_NOT_IN_LINE = 1 << 30

QueueKey = tuple[str, str]
SortKey = tuple[int, str, str, int, str]


def why_pending(wl: WorkloadView, events: list[EventView], held: set[str]) -> str:
    """One line from the conditions, admission checks and the newest warning event."""
    if wl.status_word in ("admitted", "finished"):
        return ""
    if not wl.active:
        return "deactivated (spec.active=false)"
    parts = []
    if wl.cluster_queue in held or (wl.queue_name and f"{wl.namespace}/{wl.queue_name}" in held):
        parts.append("queue is held (stopPolicy)")
    evicted = wl.condition("Evicted")
    if evicted is not None and evicted.is_true:
        parts.append(f"evicted {evicted.reason}: {evicted.message}")
    reserved = wl.condition("QuotaReserved")
    if reserved is not None and not reserved.is_true and reserved.message:
        parts.append(reserved.message)
    for check in wl.admission_checks:
        if check.state != "Ready":
            parts.append(f"check {check.name} {check.state}" + (f": {check.message}" if check.message else ""))
    if wl.status_word == "quotaReserved" and not parts:
        parts.append("quota reserved; waiting for admission checks")
    warnings = [e for e in events if e.involved_name == wl.name and e.type == "Warning"]
    if warnings:
        # An event with no timestamp at all sorts first rather than failing the comparison.
        newest = max(warnings, key=lambda e: e.last_timestamp or e.creation_timestamp or wl.creation_timestamp or _NO_TIME)
        parts.append(f"event {newest.reason}: {newest.message}")
    return one_line("; ".join(parts) or "waiting for quota", 600)  # whole: the line under the table shows it all


def display_position(position: int, estimated: bool) -> str:
    """Kueue's 0-based position as people read it: ``#1`` is next; ``~1`` when estimated."""
    return f"{'~' if estimated else '#'}{position + 1}"


def queue_of(wl: WorkloadView) -> QueueKey:
    return (wl.namespace or "", wl.queue_name or "")


def newer_warning(have: EventView | None, event: EventView) -> bool:
    """Whether ``event`` is a newer warning for its Workload than ``have``."""
    if have is None:
        return True
    stamp = event.last_timestamp or event.creation_timestamp
    have_stamp = have.last_timestamp or have.creation_timestamp
    return stamp is not None and (have_stamp is None or stamp > have_stamp)


@dataclass
class WorkloadsRead:
    """One read's workloads: the rows in order, and what the pane keeps of them."""

    rows: Sequence[Row]
    views: Mapping[str, WorkloadView]
    matchable: Mapping[str, Matchable]
    counts: dict[str, int]
    estimated: bool
    problems: list[str]
    #: The table's update when the read knew its change (a quick read), else None: plan every row.
    plan: TablePlan | None = None
    #: Rows shown before their positions were read (a large first read, or the first list still coming in).
    waiting_for_positions: bool = False
    #: Whether it read every Workload (tests and benchmarks count the full reads).
    full: bool = True
    #: Handed back through :meth:`WorkloadRows.applied` once the table shows this read.
    token: int = 0


@dataclass
class _Kept:
    """What the last read left, for the next one to start from (worker thread only)."""

    backend: Any
    place: tuple
    held: frozenset[str]
    queues: frozenset[QueueKey]
    #: handed to the pane with each read: versions that are never changed (FrozenMap, OrderedKeys)
    views: FrozenMap[str, WorkloadView]
    warnings: dict[tuple[str, str], EventView]
    #: event key -> the Workload it is the newest warning of
    warning_events: dict[tuple[str, str], tuple[str, str]]
    pending: dict[QueueKey, dict[str, WorkloadView]]
    members: dict[QueueKey, tuple[WorkloadView, ...]]
    reports: dict[QueueKey, CachedPositions]
    #: the rows' order, for bisection (this reader's own: changed in place)
    order: list[tuple[SortKey, str]]
    #: the keys of ``order``, in its order; a read's moves make the next version
    keys: OrderedKeys
    #: key -> the row's cells
    cells: FrozenMap[str, Sequence]
    sort_of: dict[str, SortKey]
    counts: dict[str, int]
    matchable: FrozenMap[str, Matchable]
    #: (when a row's "Waiting" age next reads otherwise, key): a heap; and the time each row's entry
    #: holds, so a row that changed without its age moving adds no entry (entries a row no longer
    #: holds are dropped when they come up)
    ages: list[tuple[float, str]] = field(default_factory=list)
    age_due: dict[str, float] = field(default_factory=dict)


class WorkloadRows:
    """The workloads table's rows, kept between the queue pane's reads (one worker at a time)."""

    def __init__(self, positions: LocalQueuePositions) -> None:
        self.positions = positions
        #: After the first full read, positions are read on a thread of their own.
        self.background = BackgroundPositions(positions)
        #: key -> (what the row was built from, its cells, its filter text): unchanged workloads keep
        #: their cells object, so the table neither compares nor redraws them.
        self.row_cache: dict[str, tuple[tuple, list, str]] = {}
        self._kept: _Kept | None = None
        #: This reader's places in the change feed of Workloads and of events.
        self._workload_changes = JournalCursor(ResourceKind.WORKLOAD)
        self._event_changes = JournalCursor(ResourceKind.EVENT)
        self._status_cells: dict[tuple[str, str], Text] = {}
        #: The last read's token, and the last one the table was seen to show: a read that never
        #: reached the table (dropped, stopped, failed) leaves the next read to be a full one.
        self._read_token = 0
        self._applied_token = -1
        self.full_reads = 0
        self.quick_reads = 0

    def applied(self, token: int) -> None:
        """UI thread: the table shows the read of ``token`` (the next read can go on from it)."""
        self._applied_token = token

    def close(self) -> None:
        """The pane is gone: stop reading positions."""
        self.background.close()

    def forget(self) -> None:
        """The next read is a full one (a replay's seek)."""
        self._kept = None

    # -- one row ---------------------------------------------------------------------------------

    def _row(self, key: str, wl: WorkloadView, report: CachedPositions | None, held: set[str],
             warning: EventView | None, now: datetime, waiting_for_positions: bool,
             backend: ClusterBackend) -> tuple[list, str]:
        entry: PendingPosition | None = report.by_name.get(wl.name) if report is not None else None
        pos = ""
        change = ""
        if entry is not None and entry.position_in_local_queue is not None:
            pos = display_position(entry.position_in_local_queue, bool(report and report.report.estimated))
            history = backend.position_history(wl.namespace or "", wl.name)
            change = delta(history.change if history else None)
        elif waiting_for_positions and wl.status_word == "pending":
            pos = POSITION_READING
        waiting = ""
        if wl.status_word in ("pending", "quotaReserved") and wl.queue_order_timestamp is not None:
            waiting = age((now - wl.queue_order_timestamp).total_seconds())
        is_held = wl.cluster_queue in held or bool(wl.queue_name and f"{wl.namespace}/{wl.queue_name}" in held)
        inputs = (wl, pos, change, waiting, is_held, warning)
        hit = self.row_cache.get(key)
        if hit is not None and hit[0][0] is wl and hit[0][5] is warning and hit[0][4] == is_held:
            cells, row_text = hit[1], hit[2]
            if hit[0][1:4] != inputs[1:4]:
                # only the place in line or the time waited moved (every pending row's age, once a
                # minute): those cells are new, the others the same objects
                cells = list(cells)
                cells[POS_CELL], cells[DELTA_CELL], cells[WAITING_CELL] = pos, change, waiting
        else:
            row_text = f"{wl.namespace}/{wl.name} {wl.queue_name} {wl.status_word} {wl.owner_name or ''}"
            prio = shared(f"{wl.effective_priority}" + (f" {wl.priority_class}" if wl.priority_class else ""))
            cells = [self._status_cell(wl.status_word), pos, change, key, wl.queue_name or "—",
                     waiting, prio, why_pending(wl, [warning] if warning else [], held)]
        self.row_cache[key] = (inputs, cells, row_text)
        return cells, row_text

    def _moved_in_line(self, pending: dict[str, WorkloadView], before: CachedPositions | None,
                       now: CachedPositions, backend: ClusterBackend) -> Iterable[str]:
        """The pending rows of a queue whose report was read again that it moves: those whose place
        in line changed, or whose "Δ" (the place seen twice reads "="); every one when the report's
        source did ("#" and "~" read otherwise)."""
        if before is None or before.report.source is not now.report.source:
            return pending.keys()
        was, ahead, shown = before.by_name, now.by_name, self.row_cache
        moved = []
        for key, wl in pending.items():
            if was.get(wl.name) != ahead.get(wl.name):
                moved.append(key)
                continue
            row = shown.get(key)
            history = backend.position_history(wl.namespace or "", wl.name)
            if row is None or row[0][2] != delta(history.change if history else None):
                moved.append(key)
        return moved

    def _status_cell(self, word: str) -> Text:
        """One status cell per word and theme style, shared by the rows (never changed once made)."""
        style = style_of(word)
        cell = self._status_cells.get((word, style))
        if cell is None:
            cell = self._status_cells[(word, style)] = status_text(word)
        return cell

    @staticmethod
    def _sort_key(wl: WorkloadView, report: CachedPositions | None) -> SortKey:
        entry = report.by_name.get(wl.name) if report is not None else None
        position = entry.position_in_local_queue if entry and entry.position_in_local_queue is not None else _NOT_IN_LINE
        return (STATE_ORDER.get(wl.status_word, 9), wl.namespace or "", wl.queue_name or "", position, wl.name)

    # -- reads -----------------------------------------------------------------------------------

    def read(self, backend: ClusterBackend, place: tuple, now: datetime, held: set[str], queues: frozenset[QueueKey],
             listing: bool, rows_before_positions_over: int | None, table: TableState | None,
             keep_reading: Callable[[], None]) -> WorkloadsRead:
        """The workloads' rows.  ``rows_before_positions_over``: a first read with more pending
        Workloads shows its rows before reading their positions (None: not a first read)."""
        # what changed, taken before the data is read: a change in between is read again next time
        changed = self._workload_changes.read(backend).keys
        events = self._event_changes.read(backend).keys
        kept = self._kept
        self._read_token += 1
        if kept is not None and not listing and kept.backend is backend and kept.place == place \
                and kept.held == frozenset(held) and kept.queues == queues and self._applied_token == self._read_token - 1 \
                and changed is not None and events is not None:
            try:
                quick = self._quick_read(kept, backend, changed, events, now, held, table)
            except BaseException:
                self._kept = None  # a quick read stopped half way changed what was kept
                raise
            if quick is not None:
                self.quick_reads += 1
                quick.token = self._read_token
                return quick
        self.full_reads += 1
        read = self._full_read(backend, place, now, held, queues, listing, rows_before_positions_over, keep_reading)
        read.token = self._read_token
        return read

    def _full_read(self, backend: ClusterBackend, place: tuple, now: datetime, held: set[str], queues: frozenset[QueueKey], listing: bool, rows_before_positions_over: int | None,
                   keep_reading: Callable[[], None]) -> WorkloadsRead:
        workloads = backend.workloads()
        pending: dict[QueueKey, dict[str, WorkloadView]] = {}
        counts = {word: 0 for word in STATE_ORDER}
        views: dict[str, WorkloadView] = {}  # one key string per Workload, shared by every map below
        for w in workloads:
            key = f"{w.namespace}/{w.name}"
            views[key] = w
            if w.status_word in counts:
                counts[w.status_word] += 1
            if w.status_word == "pending":
                queue = queue_of(w)
                if queue in queues:
                    pending.setdefault(queue, {})[key] = w
        waiting_for_positions = (listing and bool(workloads)) or (rows_before_positions_over is not None and sum(
            len(queued) for queued in pending.values()) > rows_before_positions_over)
        members = {queue: tuple(queued.values()) for queue, queued in pending.items()}
        reports: dict[QueueKey, CachedPositions] = {}
        problems: list[str] = []
        if not waiting_for_positions:
            reports, problems = self.positions.update(members, backend.pending_positions_local_queue)
            if self.background.started:  # its thread reads these queues from now on
                self.background.want(members, backend.pending_positions_local_queue)
        warnings: dict[tuple[str, str], EventView] = {}
        warning_events: dict[tuple[str, str], tuple[str, str]] = {}
        for e in backend.events():
            if e.involved_kind == "Workload" and e.type == "Warning":
                warning_key = (e.namespace or "", e.involved_name)
                if newer_warning(warnings.get(warning_key), e):
                    warnings[warning_key] = e  # the newest warning per workload
                    warning_events[(e.namespace or "", e.name)] = warning_key
        sort_of: dict[str, SortKey] = {}
        for key, w in views.items():
            sort_of[key] = self._sort_key(w, reports.get(queue_of(w)))
        order = sorted((sort_key, key) for key, sort_key in sort_of.items())
        previous = self.row_cache
        self.row_cache = {}
        rows: list[Row] = []
        matchable: dict[str, Matchable] = {}
        ages: list[tuple[float, str]] = []
        self._kept = None  # until this read is done: one stopped half way keeps nothing
        for index, (_, key) in enumerate(order):
            if index % 512 == 0:
                keep_reading()
            wl = views[key]
            if key in previous:
                self.row_cache[key] = previous[key]
            cells, row_text = self._row(key, wl, reports.get(queue_of(wl)), held,
                                        warnings.get((wl.namespace or "", wl.name)), now, waiting_for_positions, backend)
            rows.append((key, cells))
            matchable[key] = (row_text, wl.labels)
            if wl.status_word in ("pending", "quotaReserved") and wl.queue_order_timestamp is not None:
                ages.append((age_changes_at(wl.queue_order_timestamp, now), key))
        heapq.heapify(ages)
        age_due = {key: due for due, key in ages}
        estimated = any(r.report.estimated for r in reports.values())
        # a read made before its positions (or while the list comes in) is not one to go on from
        frozen_views, frozen_matchable = FrozenMap(views), FrozenMap(matchable)
        self._kept = None if waiting_for_positions else _Kept(
            backend, place, frozenset(held), queues, frozen_views, warnings, warning_events, pending, members,
            reports, order, OrderedKeys(key for _, key in order), FrozenMap(dict(rows)), sort_of, dict(counts),
            frozen_matchable, ages, age_due)
        return WorkloadsRead(rows, frozen_views, frozen_matchable, counts, estimated, problems,
                             waiting_for_positions=waiting_for_positions)

    def _quick_read(self, kept: _Kept, backend: ClusterBackend, changed: set[tuple[str, str]],
                    events: set[tuple[str, str]], now: datetime, held: set[str],
                    table: TableState | None) -> WorkloadsRead | None:
        dirty: set[str] = {f"{namespace}/{name}" for namespace, name in changed}
        for event_key in events:
            event = backend.get(ResourceKind.EVENT, event_key[1], event_key[0])
            if not isinstance(event, EventView):
                if event_key in kept.warning_events:
                    return None  # the newest warning of a Workload is gone: which is newest now is a full read's
                continue
            if event.involved_kind == "Workload" and event.type == "Warning":
                warning_key = (event.namespace or "", event.involved_name)
                current = kept.warnings.get(warning_key)
                # a newer warning, or the newest one again (its count and time moved)
                if newer_warning(current, event) or (current is not None and kept.warning_events.get(event_key) == warning_key):
                    kept.warnings[warning_key] = event
                    kept.warning_events[event_key] = warning_key
                    dirty.add(f"{warning_key[0]}/{warning_key[1]}")
        views = kept.views.draft()
        # the Workloads that changed: their queue's pending set, the counts, the views
        moved_queues: set[QueueKey] = set()
        for key in dirty:
            namespace, _, name = key.partition("/")
            view = backend.get(ResourceKind.WORKLOAD, name, namespace)
            now_view = view if isinstance(view, WorkloadView) else None
            before = views.get(key)
            if now_view is before:
                continue
            for wl, sign in ((before, -1), (now_view, 1)):
                if wl is None:
                    continue
                if wl.status_word in kept.counts:
                    kept.counts[wl.status_word] += sign
                queue = queue_of(wl)
                if wl.status_word == "pending" and queue in kept.queues:
                    moved_queues.add(queue)
                    if sign < 0:
                        kept.pending.get(queue, {}).pop(key, None)
                    else:
                        kept.pending.setdefault(queue, {})[key] = wl
            if now_view is None:
                views.pop(key)
            else:
                views[key] = now_view
        for queue in moved_queues:
            queued = kept.pending.get(queue)
            if queued:
                kept.members[queue] = tuple(queued.values())
            else:
                kept.pending.pop(queue, None)
                kept.members.pop(queue, None)
        # positions are read on their own thread: a read shows the reports that came so far, and the
        # pane reads again when another comes (its signature holds the generation)
        self.background.want(kept.members, backend.pending_positions_local_queue)
        reports = self.background.reports(kept.members)
        problems = list(self.background.problems)
        for queue, report in reports.items():
            report_held = kept.reports.get(queue)
            if report_held is not report:
                dirty.update(self._moved_in_line(kept.pending.get(queue, {}), report_held, report, backend))
        kept.reports = reports
        stamp = now.timestamp()
        taken = 0
        while taken < AGES_PER_READ and kept.ages and kept.ages[0][0] <= stamp:
            due, key = heapq.heappop(kept.ages)
            if kept.age_due.get(key) == due:  # the entry the row holds (not one left by a change)
                del kept.age_due[key]
                dirty.add(key)
                taken += 1
        changed_rows: dict[str, list] = {}
        removed: list[str] = []
        moves: list[Move] = []
        cells, matchable = kept.cells.draft(), kept.matchable.draft()
        for key in dirty:
            wl = views.get(key)
            old_sort = kept.sort_of.get(key)
            new_sort = self._sort_key(wl, reports.get(queue_of(wl))) if wl is not None else None
            if old_sort is not None and new_sort != old_sort:
                del kept.order[bisect_left(kept.order, (old_sort, key))]
                moves.append(("remove", key))
            if wl is None or new_sort is None:
                kept.sort_of.pop(key, None)
                kept.age_due.pop(key, None)
                cells.pop(key)
                if matchable.pop(key) is not None:
                    removed.append(key)
                self.row_cache.pop(key, None)
                continue
            if new_sort != old_sort:
                kept.sort_of[key] = new_sort
                at = bisect_left(kept.order, (new_sort, key))
                kept.order.insert(at, (new_sort, key))
                moves.append(("insert", at, key))
            row_cells, row_text = self._row(key, wl, reports.get(queue_of(wl)), held,
                                            kept.warnings.get((wl.namespace or "", wl.name)), now, False, backend)
            cells[key] = changed_rows[key] = row_cells
            matchable[key] = (row_text, wl.labels)
            if wl.status_word in ("pending", "quotaReserved") and wl.queue_order_timestamp is not None:
                due = age_changes_at(wl.queue_order_timestamp, now)
                if kept.age_due.get(key) != due:
                    kept.age_due[key] = due
                    heapq.heappush(kept.ages, (due, key))
        # the next versions of what the pane holds: each costs what this read changed
        kept.views, kept.cells, kept.matchable = views.freeze(), cells.freeze(), matchable.freeze()
        kept.keys = kept.keys.moved(moves) if moves else kept.keys
        plan = plan_changed_rows(table, kept.keys, changed_rows, removed, kept.matchable) if table is not None else None
        estimated = any(r.report.estimated for r in reports.values())
        return WorkloadsRead(RowsView(kept.keys, kept.cells), kept.views, kept.matchable, dict(kept.counts), estimated,
                             problems, plan, full=False)
