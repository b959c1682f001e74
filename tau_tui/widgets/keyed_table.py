"""A DataTable updated by keyed diff: only changed rows and cells are touched.

Rows are ``(key, cells)``.  :meth:`KeyedTable.apply_rows` compares the new
rows with the last ones by key in one pass (linear, never quadratic): stale
rows are dropped in one batch, changed cells updated, new rows added, and a
change of order re-indexes the rows without re-adding or re-measuring them.
The cursor stays on the same key.  A table given each row's text and
labels filters itself (:meth:`KeyedTable.set_row_filter`): every row stays
stored, the filter only chooses which are indexed, and typing one more
character looks only at the rows still shown.  Plain ``str`` cells are
stored as they are and become ``rich.text.Text`` when a row is drawn, so
cluster data is never parsed as markup.

Column widths are kept here, not by DataTable's auto width: each column's
width is the widest cell now in it (so a "loading" notice does not leave a
column 60 characters wide once data arrives) and is tracked incrementally
from the cells that changed.  At narrow widths the columns the pane marks
optional are hidden first and the widest flexible column shrinks, so the key
columns stay on screen.

Sorting is k9s style: each sortable column has a letter; ``shift+letter``
sorts by it, again reverses; the header shows ``↑``/``↓``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets._data_table import Column, ColumnKey, RowKey, SegmentLines

from tau_tui.widgets.row_filter import RowFilter, folded_texts, kept_rows, plain_needle
from tau_tui.widgets.row_strips import RowLook, RowStrips, plain_text_line, text_cell_segments
from tau_tui.widgets.table_plan import (
    NOTICE_KEY,
    Matchable,
    Row,
    TablePlan,
    TableState,
    as_text,
    plan_rows,
    sort_key,
    sorted_keys,
)
from tau_tui.widgets.unit_row_views import KeyLocations, OrderedRowsView, StateCells, StateRows, UnitLineOffsets

__all__ = ["NOTICE_KEY", "ColumnSpec", "KeyedTable", "Matchable", "Row", "sort_key"]

#: Flexible columns are cut to this width before any optional column is hidden.
COMFORTABLE_WIDTH = 24
#: Rendered cells kept (a few screens' worth at 200 columns); the cache starts over when full.
CELL_LINES_KEPT = 4096


@dataclass(frozen=True)
class ColumnSpec:
    """``key``/``label``; ``sort_letter`` (upper case, shift+letter sorts); ``optional`` columns
    are hidden first when the table is narrow; ``flexible`` ones shrink (with an ellipsis)."""

    key: str
    label: str
    sort_letter: str = ""
    optional: bool = False
    flexible: bool = False
    min_width: int = 4


class FitColumn(Column):
    """A column hidden at width 0 takes no space (DataTable would still draw its padding)."""

    def get_render_width(self, data_table: DataTable[Any]) -> int:
        if not self.auto_width and self.width == 0:
            return 0
        return super().get_render_width(data_table)


def as_spec(column: ColumnSpec | tuple) -> ColumnSpec:
    if isinstance(column, ColumnSpec):
        return column
    return ColumnSpec(*column)


class KeyedTable(DataTable):
    """DataTable with keyed diff updates (see module docstring)."""

    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    def __init__(self, columns: Sequence[ColumnSpec | tuple], *, sortable: bool = True, **kwargs: Any):
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", False)
        super().__init__(**kwargs)
        self._column_spec: list[ColumnSpec] = [as_spec(c) for c in columns]
        #: False for tables whose order means something (a tree of queues and their flavors).
        self.sortable = sortable
        self._state = TableState(columns=len(self._column_spec))
        self._order: list[str] = []  # the rows shown, in order (DataTable's row index)
        self._all: list[str] = []  # every row, shown or filtered out, in order
        self._matchable: Mapping[str, Matchable] | None = None
        #: (the matchable rows, their texts in lower case) for plain filters.
        self._folded: tuple[Mapping[str, Matchable], Mapping[str, str | None]] | None = None
        self._kept: set[str] = set()
        self.row_filter = RowFilter("")
        self._rows_in: Sequence[Row] = []
        self._notice_in: Any = None
        self._widths: list[Counter[int]] = [Counter() for _ in self._column_spec]
        self._hidden: set[str] = set()
        self.sort_column: str | None = None
        self.sort_reverse = False
        #: What the updates did, counted (tests bound work by these).
        #: (row, index, column, style, width, cursor...) -> (the cell object, its rendered lines)
        self._cell_lines: dict[tuple, tuple[Any, SegmentLines]] = {}
        self.row_strips = RowStrips()
        self._row_look_parts: tuple[tuple[int, ...], Style, int] | None = None
        self._data = StateCells(self)  # type: ignore[assignment]  # views of self._state
        self._row_locations = KeyLocations([])  # type: ignore[assignment]
        self.rows = StateRows(self)  # type: ignore[assignment]
        self.stats = {"added": 0, "removed": 0, "updated": 0, "moved": 0, "rebuilt": 0, "measured": 0, "matched": 0,
                      "replanned": 0, "cells_rendered": 0, "cells_reused": 0, "sorted": 0,
                      "width_checks_skipped": 0, "folded": 0, "layouts_spared": 0}
        self.rows_inserted = 0
        self.cells_written = 0

    def on_mount(self) -> None:
        self._add_columns()

    # -- every row is one line high: answer DataTable's row geometry from the index ---------
    # (DataTable rebuilds lists of all rows after each change and sums the rows above the cursor.)

    @property
    def row_count(self) -> int:
        """Rows shown (rows the filter hides stay stored, not shown)."""
        return len(self._row_locations)

    def is_valid_row_index(self, row_index: int) -> bool:
        return 0 <= row_index < len(self._row_locations)

    @property
    def ordered_rows(self) -> OrderedRowsView:  # type: ignore[override]  # a view, not a copy
        return OrderedRowsView(self)

    @property
    def _y_offsets(self) -> UnitLineOffsets:  # type: ignore[override]  # a view, not a copy
        return UnitLineOffsets(self)

    def _get_row_region(self, row_index: int) -> Region:
        if not self.is_valid_row_index(row_index):
            return Region(0, 0, 0, 0)
        row_width = sum(column.get_render_width(self) for column in self.columns.values()) + self._row_label_column_width
        return Region(0, row_index + self._header_lines(), max(self.size.width, row_width), 1)

    def _get_cell_region(self, coordinate: Coordinate) -> Region:
        if not self.is_valid_coordinate(coordinate):
            return Region(0, 0, 0, 0)
        row_index, column_index = coordinate
        x = sum(column.get_render_width(self) for column in self.ordered_columns[:column_index]) + self._row_label_column_width
        column_key = self._column_locations.get_key(column_index)
        width = self.columns[column_key].get_render_width(self) if column_key is not None else 0
        return Region(x, row_index + self._header_lines(), width, 1)

    # -- a cell is rendered again only when it changed ---------------------------------------
    # (DataTable keys its cell cache by an update counter: any change re-renders every visible
    # cell.  Here a cell object kept by an update is the same object, so its lines are kept too.)

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> SegmentLines:
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        name = str(row_key.value) if row_key is not None else ""
        cells = self._state.cells.get(name)
        if cells is None or column_index >= len(cells):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        cell = cells[column_index]
        key = (name, row_index, column_index, base_style, width, cursor, hover, self._show_hover_cursor,
               self._pseudo_class_state, self.show_cursor, self.cursor_type)
        hit = self._cell_lines.get(key)
        if hit is not None and hit[0] is cell:
            self.stats["cells_reused"] += 1
            return hit[1]
        lines = self._draw_text_cell(cell, row_index, column_index, base_style, width, cursor, hover)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if len(self._cell_lines) >= CELL_LINES_KEPT:
            self._cell_lines.clear()
        self._cell_lines[key] = (cell, lines)
        self.stats["cells_rendered"] += 1
        return lines

    def _draw_text_cell(self, cell: Any, row_index: int, column_index: int, base_style: Style, width: int,
                        cursor: bool, hover: bool) -> SegmentLines | None:
        """A one-line Text cell drawn straight from its segments: the lines DataTable's Rich pipeline
        (Padding in Styled, through ``console.render_lines``) makes, at a fifth of its cost.  None
        for anything else, which DataTable draws."""
        text = plain_text_line(cell)
        if text is None or width <= 2 * self.cell_padding:
            return None
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, row_index < self.fixed_rows or column_index < self.fixed_columns, hover, cursor,
            self.show_cursor, self._show_hover_cursor, self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css")
        pre_style = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style
        return [text_cell_segments(self.app.console, text, width, self.cell_padding, pre_style, post_style)]

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._cell_lines.clear()
        self.row_strips.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cell_lines.clear()  # row strips are kept by the styles they were drawn in (RowLook)

    # -- a data row is drawn from a strip kept by its key and cells (row_strips) ------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._row_look_parts = (tuple(column.get_render_width(self) for column in self.ordered_columns),
                                self.rich_style, self.size.width)
        try:
            return super().render_lines(crop)
        finally:
            self._row_look_parts = None

    def render_line(self, y: int) -> Strip:
        strip = self._kept_row_line(y)
        return strip if strip is not None else super().render_line(y)

    def _kept_row_line(self, y: int) -> Strip | None:
        parts = self._row_look_parts
        header = self._header_lines()
        if (parts is None or y < header or self.cursor_type != "row" or self.zebra_stripes or self.fixed_rows
                or self.fixed_columns or (self._labelled_row_exists and self.show_row_labels)):
            return None
        scroll_x, scroll_y = self.scroll_offset
        row_index = y - header + scroll_y
        if not 0 <= row_index < len(self._row_locations):
            return None
        row_key = self._row_locations.get_key(row_index)
        name = str(row_key.value) if row_key is not None else ""
        cells = self._state.cells.get(name)
        if cells is None:
            return None
        widths, base_style, width = parts
        cursor = self.show_cursor and row_index == self.cursor_row
        hover = self.show_cursor and self._show_hover_cursor and row_index == self.hover_row
        look = RowLook(widths, base_style, width, self._row_cell_styles(cursor, hover))
        strip = self.row_strips.strip(name, cells, look, row_index, self.app.console, self.cell_padding)
        if strip is None:
            return None
        if scroll_x or strip.cell_length != width:  # the strip's cells carry their own metadata
            strip = strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, base_style)
        return strip

    def _row_cell_styles(self, cursor: bool, hover: bool) -> tuple[Style, Style]:
        return self._get_styles_to_render_cell(
            False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")

    def _header_lines(self) -> int:
        return self.header_height if self.show_header else 0

    def _add_columns(self) -> None:
        for spec in self._column_spec:
            key = self.add_column(self._label_of(spec), key=spec.key, width=len(spec.label))
            self.columns[key].__class__ = FitColumn
        self._fit_columns()

    @property
    def column_key_objects(self) -> list[ColumnKey]:
        return [ColumnKey(spec.key) for spec in self._column_spec]

    def clear(self, columns: bool = False) -> KeyedTable:
        super().clear(columns)
        self._row_locations = KeyLocations([])  # type: ignore[assignment]
        self._state = TableState(columns=len(self._column_spec), sort_index=self._sort_index(),
                                 sort_reverse=self.sort_reverse)
        self._order = []
        self._all = []
        self._kept = set()
        self._widths = [Counter() for _ in self._column_spec]
        return self

    def set_columns(self, columns: Sequence[ColumnSpec | tuple]) -> None:
        """Replace the columns (rows are re-added on the next :meth:`apply_rows`)."""
        self._column_spec = [as_spec(c) for c in columns]
        if self.sort_column not in {c.key for c in self._column_spec}:
            self.sort_column = None
        self.clear(columns=True)
        self._add_columns()
        self.stats["rebuilt"] += 1

    # -- reading --------------------------------------------------------------------------

    @property
    def selected_key(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        try:
            row_key = self._row_locations.get_key(self.cursor_row)
        except Exception:
            return None
        if row_key is None:
            return None
        return None if row_key.value == NOTICE_KEY else row_key.value

    @property
    def state(self) -> TableState:
        """The rows as of the last update, for a plan made in a worker (:func:`plan_rows`)."""
        return self._state

    @property
    def _cells(self) -> Mapping[str, tuple]:
        return self._state.cells

    def cells_of(self, key: str) -> tuple | None:
        """The row's cells as drawn (a plain string cell as Text)."""
        cells = self._state.cells.get(key)
        return None if cells is None else tuple(map(as_text, cells))

    @property
    def keys(self) -> list[str]:
        """The rows shown, in order."""
        return list(self._order)

    @property
    def all_keys(self) -> list[str]:
        """Every row, the ones the filter hides too, in order."""
        return list(self._all)

    @property
    def column_keys(self) -> list[str]:
        return [c.key for c in self._column_spec]

    @property
    def visible_column_keys(self) -> list[str]:
        return [c.key for c in self._column_spec if c.key not in self._hidden]

    def column_width(self, key: str) -> int:
        """The width the column is drawn with (0 when hidden)."""
        column = self.columns.get(ColumnKey(key))
        return column.width if column is not None else 0

    # -- the diff -------------------------------------------------------------------------

    def apply_rows(self, rows: Sequence[Row], notice: Text | str | None = None,
                   matchable: Mapping[str, Matchable] | None = None) -> None:
        """Diff ``rows`` into the table.  Call inside ``app.batch_update()``.

        ``notice``: why the data could not be read; shown as the table's only
        row when there are no rows, so an unreadable view never looks empty.

        ``matchable``: each row's text and labels for the row filter; given, the table filters
        itself (:meth:`set_row_filter`) and keeps every row, shown or not, so a keystroke in the
        filter line costs a look at the rows, never a re-read of the cluster.

        A row whose cells are the same object as last time is not compared at
        all (panes reuse the cells of unchanged objects), so a tick costs one
        dictionary look-up per row plus the work for what changed."""
        self.apply_plan(plan_rows(self._state, rows, notice, matchable))

    def apply_plan(self, plan: TablePlan) -> None:
        """Carry out a plan (UI thread): drop, write and add what it lists.  A plan made against a
        state that is no longer the table's (a sort or filter came in between) is made again."""
        if plan.state is not self._state:
            if plan.state.blank_like(self._state) and NOTICE_KEY not in plan.source:
                # planned before this table existed (a pane read before it opened); a notice row is
                # sized by the state's columns, so a plan holding one is made again
                plan = replace(plan, state=self._state)
            else:
                self.stats["replanned"] += 1
                plan = plan_rows(self._state, plan.rows, plan.notice, plan.matchable)
        self._rows_in, self._notice_in, self._matchable = plan.rows, plan.notice, plan.matchable
        selected = self.selected_key
        old = self._state
        # DataTable's rows and cells are views of the state (unit_row_views): swapping it is the update
        self._state = plan.next_state()
        self._apply_width_deltas(plan.width_deltas)
        self.stats["measured"] += plan.measured
        if plan.stale:
            self._drop_rows(plan.stale)
        if plan.added:
            self._insert_rows(plan.added)
        written = plan.cells_written
        if written:
            self.stats["updated"] += written
            self.cells_written += written
            self._update_count += 1
            self.refresh()
        self._all = plan.keys
        self._kept = self._verdicts(plan.keys, old.source, plan.source)
        self._show(self._visible(plan.keys), selected, rebuilt=bool(plan.stale))

    def _verdicts(self, keys: list[str], old_source: Mapping[str, Any], new_source: Mapping[str, Any]) -> set[str]:
        """The rows the filter keeps: an unchanged row keeps its verdict, a changed one is matched."""
        matchable = self._matchable
        if matchable is None or not self.row_filter.active:
            return set()
        kept = self._kept
        matches = self.row_filter.matches_row
        out: set[str] = set()
        looked = 0
        for key in keys:
            if old_source.get(key) is new_source[key]:
                if key in kept:
                    out.add(key)
                continue
            looked += 1
            if matches(*matchable.get(key, ("", {}))):
                out.add(key)
        self.stats["matched"] += looked
        return out

    def _visible(self, keys: list[str]) -> list[str]:
        if self._matchable is None or not self.row_filter.active:
            return keys
        kept = self._kept
        return [k for k in keys if k in kept]

    def _show(self, visible: list[str], selected: str | None, rebuilt: bool = False) -> None:
        """Make ``visible`` the table's rows in order: rows only appended are indexed on their own;
        any other change re-indexes once.  The cursor stays on the same key when it is shown."""
        located = self._order
        if rebuilt or visible[:len(located)] != located:
            self._reorder(visible)
        elif len(visible) > len(located):
            cast(KeyLocations, self._row_locations).append(visible[len(located):])
            self._update_count += 1
            self.cursor_coordinate = self.cursor_coordinate
            self.refresh()
        self._order = visible
        self._set_virtual_size()
        self._fit_columns()
        if selected is not None and selected in self._cells:
            row_index = self._row_locations.get(RowKey(selected))
            if row_index is not None and row_index != self.cursor_row:
                self.move_cursor(row=row_index, animate=False, scroll=False)

    # -- the row filter (tables given matchable rows) ----------------------------------------

    @property
    def filters_itself(self) -> bool:
        return self._matchable is not None

    def set_row_filter(self, row_filter: RowFilter) -> None:
        """Filter the rows on the UI thread: a filter that extends the last plain one looks at the
        rows shown only; any other at every row.  Without matchable rows the pane filters."""
        previous, self.row_filter = self.row_filter, row_filter
        if self._matchable is None or row_filter.text == previous.text:
            return
        selected = self.selected_key
        if row_filter.active:
            candidates = self._order if row_filter.narrows(previous) else self._all
            folded = self._folded_texts() if plain_needle(row_filter) is not None else None
            self._kept = kept_rows(row_filter, candidates, self._matchable, NOTICE_KEY, folded)
            self.stats["matched"] += len(candidates)
        else:
            self._kept = set()
        visible = self._visible(self._all)
        self._show(visible, selected, rebuilt=True)
        if selected is None or (row_filter.active and selected not in self._kept):
            self.move_cursor(row=0, animate=False, scroll=True)

    def _folded_texts(self) -> Mapping[str, str | None]:
        """The rows' texts in lower case, made once per set of matchable rows (on the first filter)."""
        matchable = self._matchable
        if matchable is None:
            return {}
        if self._folded is None or self._folded[0] is not matchable:
            self._folded = (matchable, folded_texts(matchable))
            self.stats["folded"] += len(matchable)
        return self._folded[1]

    @property
    def match_count(self) -> tuple[int, int]:
        """(rows shown, rows in all) for the filter line's ``N/M match``."""
        return len(self._order), len(self._all)

    def _insert_rows(self, rows: list[tuple[str, tuple, tuple[int, ...]]]) -> None:
        """Rows added by an update (already in the state; which are shown, in what order, is
        :meth:`_show`'s): DataTable's once-per-batch bookkeeping of ``add_row``."""
        self.stats["added"] += len(rows)
        self.rows_inserted += len(rows)
        self._update_count += 1
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        self.check_idle()
        self.refresh()

    def _drop_rows(self, stale: list[str]) -> None:
        """Rows gone in an update (already out of the state): the caller re-indexes the rows shown."""
        self.stats["removed"] += len(stale)

    def _reorder(self, keys: list[str]) -> None:
        """Put rows in ``keys`` order by re-indexing: no row is re-added or re-measured."""
        self._row_locations = KeyLocations(keys)  # type: ignore[assignment]
        self.stats["moved"] += 1
        self._update_count += 1
        self.cursor_coordinate = self.cursor_coordinate
        self.refresh()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Widths come from the plans' width deltas (:meth:`_apply_width_deltas`); skip DataTable's per-cell measuring
        (all rows here are one line high), keep the virtual size right."""
        self._new_rows.clear()
        self._fit_columns(force=True)

    def _update_column_widths(self, updated_cells: set) -> None:
        """Skip DataTable's measuring of updated cells: a cell narrower than its column's label makes
        it measure every cell of the column, and adding a column marks every row's cell updated, so
        a table given its rows before its columns were added measured the column once per row (20,000
        squared on the UI thread).  Widths here come from the plans (:meth:`_apply_width_deltas`)."""
        self.stats["width_checks_skipped"] += len(updated_cells)

    # -- sorting --------------------------------------------------------------------------

    def _sort_index(self) -> int | None:
        if self.sort_column is None or self.sort_column not in self.column_keys:
            return None
        return self.column_keys.index(self.sort_column)

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort by ``column``; the same column again reverses (k9s)."""
        if reverse is None:
            reverse = (not self.sort_reverse) if column == self.sort_column else False
        same_column = column == self.sort_column
        self.sort_column = column
        self.sort_reverse = reverse
        state = self._state
        # a sort changes the order only: the rows are put in it without a new plan (no cell is
        # compared); the same column reversed keeps the rows' sort keys
        order, sort_keys = sorted_keys(state, self._sort_index(), reverse, same_column)
        self._state = replace(state, sort_index=self._sort_index(), sort_reverse=reverse, sort_keys=sort_keys)
        for spec in self._column_spec:
            col = self.columns.get(ColumnKey(spec.key))
            if col is not None:
                col.label = self._label_of(spec)
        if order is not None:
            self.stats["sorted"] += 1
            self._all = order
            self._show(self._visible(order), self.selected_key, rebuilt=True)
        elif self._rows_in or self._notice_in is not None:
            self.apply_rows(self._rows_in, self._notice_in, self._matchable)
        else:
            self.refresh()
        self._fit_columns(force=True)

    def sort_letters(self) -> dict[str, str]:
        """Upper-case letter -> column.  Columns without a letter of their own get the first free
        letter of their label; letters the pane binds (``H`` hold+drain) are never used for sorting."""
        if not self.sortable:
            return {}
        taken: set[str] = set()
        try:
            taken = {key for key in self.screen._bindings.key_to_bindings if len(key) == 1}
        except Exception:
            pass
        taken |= {key for key in self._bindings.key_to_bindings if len(key) == 1}
        out: dict[str, str] = {}
        for spec in self._column_spec:
            if spec.sort_letter and spec.sort_letter not in taken:
                out[spec.sort_letter] = spec.key
        for spec in self._column_spec:
            if spec.sort_letter or spec.key in out.values():
                continue
            for char in spec.label.upper():
                if char.isalpha() and char.isascii() and char not in out and char not in taken:
                    out[char] = spec.key
                    break
        return out

    def sort_column_for_letter(self, letter: str) -> str | None:
        return self.sort_letters().get(letter)

    def sort_help(self) -> list[tuple[str, str]]:
        labels = {s.key: s.label for s in self._column_spec}
        return [(f"shift+{letter.lower()}", f"sort by {labels[key]} (again: reverse)")
                for letter, key in self.sort_letters().items()]

    def _label_of(self, spec: ColumnSpec) -> Text:
        label = Text(spec.label)
        if spec.key == self.sort_column:
            label.append("↓" if self.sort_reverse else "↑", style="bold")
        return label

    def on_key(self, event) -> None:
        letter = event.character
        if letter and len(letter) == 1 and letter.isupper() and event.key == letter:
            column = self.sort_column_for_letter(letter)
            if column is not None:
                event.stop()
                event.prevent_default()
                self.sort_by(column)

    # -- widths ---------------------------------------------------------------------------

    def _apply_width_deltas(self, deltas: list[dict[int, int]]) -> None:
        for counter, delta in zip(self._widths, deltas, strict=False):
            for width, change in delta.items():
                counter[width] += change
                if counter[width] <= 0:
                    del counter[width]

    def _content_widths(self) -> list[int]:
        out = []
        for spec, counter in zip(self._column_spec, self._widths, strict=False):
            label = len(spec.label) + (1 if spec.key == self.sort_column else 0)
            out.append(max(max(counter, default=0), label))
        return out

    def on_resize(self) -> None:
        self._fit_columns(force=True)

    def _fit_columns(self, force: bool = False) -> None:
        """Column widths from content; at narrow widths hide optional columns, then shrink
        flexible ones, so the other columns stay whole."""
        if not self.columns:
            return
        widths = self._content_widths()
        available = self._available_width()
        hidden: set[str] = set()
        if available > 0:
            # 1. shrink flexible columns to a comfortable width; 2. hide optional columns from the
            # right until that fits; 3. shrink flexible columns down to their minimum.
            optional = [s.key for s in reversed(self._column_spec) if s.optional]
            fitted = None
            for count in range(len(optional) + 1):
                hidden = set(optional[:count])
                fitted = self._shrink(widths, hidden, available, comfortable=True)
                if fitted is not None:
                    break
            if fitted is None:
                fitted = self._shrink(widths, hidden, available, comfortable=False) or widths
            widths = fitted
        changed = hidden != self._hidden
        self._hidden = hidden
        for spec, width in zip(self._column_spec, widths, strict=False):
            column: Column | None = self.columns.get(ColumnKey(spec.key))
            if column is None:
                continue
            target = 0 if spec.key in hidden else width
            if column.width != target or column.auto_width:
                column.width = target
                column.auto_width = False
                changed = True
        if changed or force:
            self._set_virtual_size()
            if changed:
                self._clear_caches()
                self.refresh()

    def _available_width(self) -> int:
        """Columns' room: the widget's width less the vertical scrollbar when the rows will need one
        (measured before it appears, so a first fit does not come out two columns too wide)."""
        if not self.is_mounted or self.size.width <= 0:
            return 0
        width = self.size.width
        header = self.header_height if self.show_header else 0
        if self.show_vertical_scrollbar or len(self._row_locations) + header > self.size.height:
            width = min(width, self.scrollable_content_region.width) if self.show_vertical_scrollbar else \
                width - self.styles.scrollbar_size_vertical
        return max(width, 0)

    def _shrink(self, content: list[int], hidden: set[str], available: int, comfortable: bool) -> list[int] | None:
        """Widths with the flexible columns cut (widest first, water-filling) so the visible
        columns fit ``available``, or None when they cannot without going under the floor."""
        pad = 2 * self.cell_padding
        widths = list(content)
        specs = self._column_spec
        floors = [max(s.min_width, COMFORTABLE_WIDTH) if comfortable else s.min_width for s in specs]
        over = sum(w + pad for s, w in zip(specs, widths, strict=False) if s.key not in hidden) - available
        flexible = [i for i, s in enumerate(specs) if s.flexible and s.key not in hidden and widths[i] > floors[i]]
        while over > 0 and flexible:
            top = max(widths[i] for i in flexible)
            widest = [i for i in flexible if widths[i] == top]
            next_width = max([widths[i] for i in flexible if widths[i] < top], default=0)
            floor = max([floors[i] for i in widest] + [next_width])
            step = min(top - floor, -(-over // len(widest)))
            if step <= 0:
                break
            for i in widest:
                cut = min(step, over)
                if cut <= 0:
                    break
                widths[i] -= cut
                over -= cut
            flexible = [i for i in flexible if widths[i] > floors[i]]
        return widths if over <= 0 else None

    def _set_virtual_size(self) -> None:
        pad = 2 * self.cell_padding
        width = sum(0 if c.width == 0 else c.width + pad for c in self.columns.values())
        header = self.header_height if self.show_header else 0
        size = Size(width, len(self._row_locations) + header)
        if size == self.virtual_size:
            return
        if not self.is_mounted or self.styles.height is None or self.styles.height.is_auto:
            self.virtual_size = size  # a height from the content: the screen is laid out again
            return
        # A table with a height of its own (1fr) needs no new layout when only its row count
        # changed (a filter, rows arriving): its scrollbars are updated, and they lay the screen
        # out themselves should one appear or go.  A layout re-renders every widget on screen.
        self.set_reactive(Widget.virtual_size, size)
        self._scroll_update(size)
        self.stats["layouts_spared"] += 1
        self.refresh()
