"""What a table update will change, worked out away from the UI thread.

A pane's refresh builds its rows in a worker thread; :func:`plan_rows` compares them there with the
state the table had when the refresh started (:class:`TableState`, which every update replaces and
never changes) and lists what to do: rows to drop, rows to add, single cells to write, each with its
width already measured.  On the UI thread :meth:`KeyedTable.apply_plan` then only carries that out,
so a refresh that changes one cell of each of 20,000 rows (every "Waiting" age ticking over) costs
the UI thread a dictionary write per cell, not a comparison of every row.  A plan made against a
state that is no longer the table's (a sort or a filter came in between) is made again there.

Nothing here imports Textual: it runs in any thread."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from tau_tui.core.frozen_map import Draft, FrozenMap

Row = tuple[str, Sequence[Any]]
#: What the row filter matches a row by: its text and its labels.
Matchable = tuple[str, Mapping[str, str]]

#: Key of the single row that says why a table has no data (forbidden, not installed, loading).
NOTICE_KEY = "__notice__"


def as_cell(value: Any) -> Any:
    """What a table stores for a cell.  A printable one-line string stays a string (no Text is made
    for the 140,000 cells of 20,000 rows; the rows drawn turn theirs into Text, never markup);
    a string with control characters or line breaks becomes Text, which drops the control codes."""
    if value is None:
        return Text("—")
    if isinstance(value, str):
        return value if value.isprintable() else Text(value)
    return value


def as_text(cell: Any) -> Any:
    """A stored cell as Rich draws it: a plain string as Text (never read as markup)."""
    return Text(cell) if isinstance(cell, str) else cell


def cell_plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def cell_width(cell: Any) -> int:
    # cell_plain inlined: a new table of 20,000 rows measures 140,000 cells
    plain = cell.plain if isinstance(cell, Text) else str(cell)
    return len(plain) if plain.isascii() else cell_len(plain)


_AGE = re.compile(r"^(\d+)([smhdy])$")
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 31536000}
_NUMBER = re.compile(r"^[#~+]?(-?\d+(?:\.\d+)?)")


#: Sort keys of the texts that are not plain words: a column's ages and positions share few texts,
#: so most are a look-up.  Started over when full; a lost entry is only worked out again.
_SORT_KEYS: dict[str, tuple] = {}
_SORT_KEYS_KEPT = 65536


def sort_key(cell: Any) -> tuple:
    """Numbers, positions (``#3``, ``~3``) and ages (``5m``) sort by value; text case-insensitively;
    empty cells last."""
    text = cell_plain(cell)
    if text[:1].isalpha():  # neither an age nor a number (both start with a digit or #~+-)
        return (1, 0.0, text.rstrip().lower())
    value = _SORT_KEYS.get(text)
    if value is None:
        value = _sort_key_of(text.strip())
        if len(_SORT_KEYS) >= _SORT_KEYS_KEPT:
            _SORT_KEYS.clear()
        _SORT_KEYS[text] = value
    return value


def _sort_key_of(text: str) -> tuple:
    if not text or text == "—":
        return (2, 0.0, "")
    age = _AGE.match(text)
    if age:
        return (0, float(age.group(1)) * _AGE_UNITS[age.group(2)], text)
    number = _NUMBER.match(text)
    if number:
        return (0, float(number.group(1)), text)
    return (1, 0.0, text.lower())


@dataclass(frozen=True)
class TableState:
    """A table's rows as of one update: replaced by the next update, never changed, so a worker
    thread can read it while the UI thread goes on."""

    cells: Mapping[str, tuple] = field(default_factory=dict)
    #: key -> the cells object the pane gave (the same object next time: the row is unchanged)
    source: Mapping[str, Any] = field(default_factory=dict)
    columns: int = 0
    sort_index: int | None = None
    sort_reverse: bool = False
    #: key -> (cells object, its sort key): unchanged rows are not measured again for sorting
    sort_keys: Mapping[str, tuple[Any, tuple]] = field(default_factory=dict)
    #: every row's key in the pane's order (a sort is a stable sort of it)
    given: Sequence[str] = ()

    def blank_like(self, other: TableState) -> bool:
        """Both hold no row and sort alike: a plan made against one holds for the other."""
        return (not self.cells and not other.cells and self.sort_index == other.sort_index
                and self.sort_reverse == other.sort_reverse)


@dataclass
class TablePlan:
    state: TableState  # the state the plan was made against
    rows: Sequence[Row]  # what the pane gave (to make the plan again if the state moved)
    notice: Any
    matchable: Mapping[str, Matchable] | None
    keys: Sequence[str]  # every row, in order
    cells: Mapping[str, tuple]
    source: Mapping[str, Any]
    sort_keys: dict[str, tuple[Any, tuple]]
    stale: list[str]
    #: (key, cells, width of each cell)
    added: list[tuple[str, tuple, tuple[int, ...]]]
    #: (key, [(column index, new cell, old width, new width)])
    writes: list[tuple[str, list[tuple[int, Any, int, int]]]]
    #: per column: width -> how many more (or fewer) cells of that width than before
    width_deltas: list[dict[int, int]] = field(default_factory=list)
    #: cell widths measured to make the plan
    measured: int = 0
    given_keys: Sequence[str] = ()

    @property
    def cells_written(self) -> int:
        return sum(len(changes) for _, changes in self.writes)

    def next_state(self) -> TableState:
        return TableState(self.cells, self.source, self.state.columns, self.state.sort_index,
                          self.state.sort_reverse, self.sort_keys, self.given_keys)


def _row_sort_key(kept: Mapping[str, tuple[Any, tuple]], key: str, cells: Any, index: int) -> tuple[Any, tuple]:
    """(cells, sort key) of a row: the kept one while the row's cells are the same object."""
    hit = kept.get(key)
    if hit is not None and hit[0] is cells:
        return hit
    return cells, sort_key(cells[index]) if index < len(cells) else (3, 0.0, "")


def _sorted(state: TableState, rows: Sequence[Row]) -> tuple[Sequence[Row], dict[str, tuple[Any, tuple]]]:
    index = state.sort_index
    if index is None or not rows or rows[0][0] == NOTICE_KEY:
        return rows, {}
    kept = state.sort_keys
    fresh: dict[str, tuple[Any, tuple]] = {}

    def key_of(row: Row) -> tuple:
        key, cells = row
        hit = fresh[key] = _row_sort_key(kept, key, cells, index)
        return hit[1]

    return sorted(rows, key=key_of, reverse=state.sort_reverse), fresh


def sorted_keys(state: TableState, index: int | None, reverse: bool,
                same_column: bool) -> tuple[list[str] | None, dict[str, tuple[Any, tuple]]]:
    """The table's rows in a new sort order, from its state alone (the order :func:`plan_rows` would
    give: the pane's order, sorted stably), and their sort keys; reversing the same column reuses
    them.  (None, {}) when there is nothing to sort by (no column, or the notice row)."""
    if index is None or NOTICE_KEY in state.source:
        return None, {}
    kept = state.sort_keys if same_column else {}
    keys = {key: _row_sort_key(kept, key, cells, index) for key, cells in state.source.items()}
    values = {key: hit[1] for key, hit in keys.items()}  # a C-level key for sorted()
    return sorted(state.given, key=values.__getitem__, reverse=reverse), keys


def plan_rows(state: TableState, rows: Sequence[Row], notice: Any = None,
              matchable: Mapping[str, Matchable] | None = None,
              between: Callable[[], None] | None = None) -> TablePlan:
    """Compare ``rows`` with ``state`` (any thread).  A row whose cells are the same object as last
    time is not compared at all (panes reuse the cells of unchanged objects).  ``between`` is
    called every 512 rows (a worker's read may pause or stop there)."""
    given = rows
    if notice is not None and not rows:
        rows = [(NOTICE_KEY, [notice] + [""] * (state.columns - 1))]
        matchable = None
    wanted, sort_keys = _sorted(state, rows)
    old = state.cells
    old_source = state.source
    new_cells: dict[str, tuple] = {}
    new_source: dict[str, Any] = {}
    keys: list[str] = []
    added: list[tuple[str, tuple, tuple[int, ...]]] = []
    writes: list[tuple[str, list[tuple[int, Any, int, int]]]] = []
    for row_number, (key, cells) in enumerate(wanted):
        if between is not None and row_number % 512 == 0:
            between()
        if key in new_source:  # a duplicate key would corrupt the table; the first wins
            continue
        keys.append(key)
        new_source[key] = cells
        before = old.get(key)
        if before is not None and old_source.get(key) is cells:
            new_cells[key] = before
            continue
        _plan_row(key, cells, before, new_cells, added, writes)
    # same count and nothing added: nothing can be stale
    stale = [] if len(new_cells) == len(old) and not added else [k for k in old if k not in new_cells]
    return _finish_plan(state, given, notice, matchable, keys, new_cells, new_source, sort_keys, stale, added, writes,
                        keys if wanted is rows else list(dict.fromkeys(key for key, _ in rows)))


class RowsView(Sequence[Row]):
    """Rows as ``(key, cells)`` over a list of keys and a mapping of their cells, made when asked
    for: a read that changed a few rows of 20,000 hands over its rows without building a list."""

    def __init__(self, keys: Sequence[str], cells: Mapping[str, Sequence[Any]]) -> None:
        # not ``keys``: dict(rows) would take a ``keys`` attribute for a mapping's
        self._keys = keys
        self._cells = cells

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index):  # a slice is a list of rows
        if isinstance(index, slice):
            return [(key, self._cells[key]) for key in self._keys[index]]
        key = self._keys[index]
        return (key, self._cells[key])

    def __iter__(self):
        cells = self._cells
        return ((key, cells[key]) for key in self._keys)


def plan_changed_rows(state: TableState, keys: Sequence[str], changed: Mapping[str, Sequence[Any]], removed: Iterable[str],
                      matchable: Mapping[str, Matchable] | None) -> TablePlan | None:
    """:func:`plan_rows` for an update the pane knows the change of: ``changed`` rows (new or with
    new cells), ``removed`` rows, and ``keys``, every row in the pane's order.  Costs the change, not
    the table: the state's cells and sources are taken on as :class:`FrozenMap` versions (a state is
    never changed once made).  None when the table is sorted by a column or shows its notice row:
    then every row is planned with :func:`plan_rows`."""
    if state.sort_index is not None or NOTICE_KEY in state.source:
        return None
    old = state.cells
    new_cells = FrozenMap(old).draft()
    new_source = FrozenMap(state.source).draft()
    stale = [key for key in removed if key in old]
    for key in stale:
        new_cells.pop(key)
        new_source.pop(key)
    added: list[tuple[str, tuple, tuple[int, ...]]] = []
    writes: list[tuple[str, list[tuple[int, Any, int, int]]]] = []
    for key, cells in changed.items():
        if new_source.get(key) is cells:
            continue
        new_source[key] = cells
        _plan_row(key, cells, old.get(key), new_cells, added, writes)
    frozen_cells, frozen_source = new_cells.freeze(), new_source.freeze()
    return _finish_plan(state, RowsView(keys, frozen_source), None, matchable, keys, frozen_cells, frozen_source, {},
                        stale, added, writes, keys)


def _plan_row(key: str, cells: Sequence[Any], before: tuple | None, new_cells: dict[str, tuple] | Draft[str, tuple],
              added: list[tuple[str, tuple, tuple[int, ...]]], writes: list[tuple[str, list[tuple[int, Any, int, int]]]]) -> None:
    """One new or changed row: what the table will hold, and the addition or the cell writes."""
    converted = tuple([as_cell(c) for c in cells])
    if before is None:
        new_cells[key] = converted
        added.append((key, converted, tuple(map(cell_width, converted))))
        return
    changes = [(index, now, cell_width(was), cell_width(now))
               for index, (was, now) in enumerate(zip(before, converted, strict=False))
               if was is not now and was != now]
    if changes and len(before) == len(converted):
        # a cell equal to the one the table holds stays that object (its rendered lines are kept)
        changed = {index for index, _, _, _ in changes}
        new_cells[key] = tuple(now if index in changed else was
                               for index, (was, now) in enumerate(zip(before, converted, strict=True)))
        writes.append((key, changes))
    elif changes:
        new_cells[key] = converted
        writes.append((key, changes))
    else:
        new_cells[key] = before  # equal: keep the cells the table holds


def _finish_plan(state: TableState, given: Sequence[Row], notice: Any, matchable: Mapping[str, Matchable] | None,
                 keys: Sequence[str], new_cells: Mapping[str, tuple], new_source: Mapping[str, Any],
                 sort_keys: dict[str, tuple[Any, tuple]], stale: list[str],
                 added: list[tuple[str, tuple, tuple[int, ...]]], writes: list[tuple[str, list[tuple[int, Any, int, int]]]],
                 given_keys: Sequence[str]) -> TablePlan:
    """The width bookkeeping of a plan: per column, how many cells of each width come and go."""
    old = state.cells
    deltas: list[dict[int, int]] = [{} for _ in range(max(state.columns, max((len(c) for _, c, _ in added), default=0)))]
    measured = 0

    def count(index: int, width: int, sign: int) -> None:
        if index < len(deltas):
            column = deltas[index]
            column[width] = column.get(width, 0) + sign

    for key in stale:
        for index, cell in enumerate(old[key]):
            count(index, cell_width(cell), -1)
            measured += 1
    # counted a column at a time (a new table adds every row: 140,000 cells for 20,000 runs)
    for index, widths_of_column in enumerate(zip_longest(*(widths for _, _, widths in added))):
        column_counts = Counter(widths_of_column)
        column_counts.pop(None, None)  # rows shorter than the longest
        for width, number in column_counts.items():
            count(index, width, number)
            measured += number
    for _, changes in writes:
        for index, _, old_width, new_width in changes:
            count(index, old_width, -1)
            count(index, new_width, +1)
            measured += 2
    return TablePlan(state, given, notice, matchable, keys, new_cells, new_source, sort_keys, stale, added, writes,
                     deltas, measured, given_keys)
