"""One kind's rows (pods, events) kept between a pane's reads, so that a read costs what changed.

The first read (or one after the journal no longer reaches back, or the picks changed) builds a
row for every object the pane picks; a later read asks its cursor on the cache's change feed
(``JournalCursor``) which objects changed since and builds their rows alone, plus the rows whose age column reads
otherwise now (a heap of the moments each next ticks over, at most ``AGES_PER_READ`` a read).  The
order is kept by bisection, and the table's update covers those rows alone (``plan_changed_rows``),
as the Nodes pane's rows are kept (``node_rows.py``)."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView
from tau_tui.widgets.cell_text import age_changes_at
from tau_tui.widgets.keyed_table import Matchable
from tau_tui.widgets.table_plan import Row, RowsView, TablePlan, TableState, plan_changed_rows

Key = tuple[str, str]
#: Rows built again in one read because their age ticked over (the rest wait for the next read).
AGES_PER_READ = 500


@dataclass(frozen=True)
class BuiltRow:
    """What the pane makes of one object: its place (sorted ascending), cells, what ``/`` matches,
    and the moment its age column counts from (None: no age shown)."""

    order: tuple
    cells: list[Any]
    matchable: Matchable
    age_from: datetime | None = None


@dataclass
class KeptRead:
    rows: Sequence[Row]
    views: dict[str, ObjectView]
    matchable: dict[str, Matchable]
    plan: TablePlan | None
    full: bool


def row_key(view: ObjectView) -> str:
    return f"{view.namespace}/{view.name}" if view.namespace else view.name


class KeptRows:
    def __init__(self, kind: ResourceKind, picks: Callable[[ObjectView], bool],
                 build: Callable[[Any, datetime], BuiltRow]) -> None:
        """``build`` is called only for the views ``picks`` took (of the pane's own view type)."""
        self.kind = kind
        self.picks = picks
        self.build = build
        self._changes = JournalCursor(kind)
        self._order: list[tuple[tuple, str]] = []  # (order, key), sorted
        self._keys: list[str] = []
        self._place: dict[str, tuple] = {}
        self._cells: dict[str, list[Any]] = {}
        self._matchable: dict[str, Matchable] = {}
        self._views: dict[str, ObjectView] = {}
        self._age_due: dict[str, float] = {}
        self._ages: list[tuple[float, str]] = []
        self._planned_source: Any = None
        #: Rows built and whole reads (tests bound a read's work by them).
        self.rows_built = 0
        self.full_reads = 0

    def reset(self) -> None:
        """The picks changed (another scope): the next read builds every row again."""
        self._changes.forget()

    def read(self, backend: ClusterBackend, now: datetime, table: TableState | None, notice: Any,
             keep_reading: Callable[[], None]) -> KeptRead:
        planned_source, self._planned_source = self._planned_source, None
        # what changed, taken before the data is read: a change in between is read again next time
        changed_keys = self._changes.read(backend).keys
        try:
            return self._read(backend, changed_keys, now, table, notice, planned_source, keep_reading)
        except BaseException:
            self._changes.forget()  # a read stopped half way changed what was kept
            raise

    def _read(self, backend: ClusterBackend, changed_keys: set[Key] | None, now: datetime, table: TableState | None,
              notice: Any, planned_source: Any, keep_reading: Callable[[], None]) -> KeptRead:
        kind = self.kind
        changed: dict[str, list[Any]] = {}
        removed: list[str] = []
        full = changed_keys is None
        if changed_keys is None:
            self.full_reads += 1
            self._forget()
            for count, view in enumerate(backend.views(kind)):
                if count % 256 == 255:
                    keep_reading()
                if self.picks(view):
                    self._put(view, now, placed=False)
            self._order.sort()
            self._keys = [key for _, key in self._order]
        else:
            dirty: dict[str, ObjectView | None] = {}
            for namespace, name in changed_keys:
                got = backend.get(kind, name, namespace or None)
                dirty[f"{namespace}/{name}" if namespace else name] = got if got is not None and self.picks(got) else None
            now_ts = now.timestamp()
            aged = 0
            while self._ages and self._ages[0][0] <= now_ts and aged < AGES_PER_READ:
                due, key = heapq.heappop(self._ages)
                if self._age_due.get(key) == due and key not in dirty:
                    dirty[key] = self._views.get(key)
                    aged += 1
            for count, (key, picked) in enumerate(dirty.items()):
                if count % 256 == 255:
                    keep_reading()
                self._drop(key)
                if picked is not None:
                    changed[key] = self._put(picked, now, placed=True)
                else:
                    removed.append(key)
        plan = None
        if not full and notice is None and table is not None and table.source is planned_source:
            plan = plan_changed_rows(table, list(self._keys), changed, removed, dict(self._matchable))
        return KeptRead(RowsView(list(self._keys), dict(self._cells)), dict(self._views), dict(self._matchable), plan, full)

    def planned(self, plan: TablePlan) -> None:
        """The read's table update (the next read plans only its changed rows when the table took it)."""
        self._planned_source = plan.source

    def _forget(self) -> None:
        self._order, self._keys, self._ages = [], [], []
        self._place, self._cells, self._matchable, self._views, self._age_due = {}, {}, {}, {}, {}

    def _drop(self, key: str) -> None:
        place = self._place.pop(key, None)
        if place is None:
            return
        index = bisect_left(self._order, (place, key))
        del self._order[index]
        del self._keys[index]
        del self._cells[key], self._matchable[key], self._views[key]
        self._age_due.pop(key, None)

    def _put(self, view: ObjectView, now: datetime, placed: bool) -> list[Any]:
        self.rows_built += 1
        key = row_key(view)
        built = self.build(view, now)
        self._place[key] = built.order
        self._cells[key], self._matchable[key], self._views[key] = built.cells, built.matchable, view
        if built.age_from is not None:
            due = self._age_due[key] = age_changes_at(built.age_from, now)
            heapq.heappush(self._ages, (due, key))
        if placed:
            index = bisect_left(self._order, (built.order, key))
            self._order.insert(index, (built.order, key))
            self._keys.insert(index, key)
        else:
            self._order.append((built.order, key))
        return built.cells
