"""A table updated by keyed diff: only changed rows and cells are touched.

Rows are ``(key, cells)``.  :meth:`KeyedTable.apply_rows` compares the new
rows with the last ones by key in one pass (linear, never quadratic): stale
rows are dropped in one batch, changed cells updated, new rows added, and a
change of order re-indexes the rows without re-adding or re-measuring them.
The cursor stays on the same key.  A table given each row's text and
labels filters itself (:meth:`KeyedTable.set_row_filter`): every row stays
stored, the filter only chooses which are indexed, and typing one more
character looks only at the rows still shown.  Plain ``str`` cells are
stored as they are and become ``rich.text.Text`` when a row is drawn, so
cluster data is never parsed as markup.  Drawing, the cursor and the keys are
:class:`~tau_tui.widgets.line_table.LineTable`'s.

Each column's width is the widest cell now in it (so a "loading" notice does
not leave a column 60 characters wide once data arrives), tracked
incrementally from the cells that changed; a narrow table hides and cuts
columns as ``table_columns`` says.

Sorting is k9s style: each sortable column has a letter; ``shift+letter``
sorts by it, again reverses; the header shows ``↑``/``↓``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.widget import Widget

from tau_tui.core.frozen_map import flat
from tau_tui.core.ordered_keys import OrderedKeys
from tau_tui.textual_compat.table import update_scrollbars
from tau_tui.widgets.line_table import LineTable
from tau_tui.widgets.row_filter import RowFilter, folded_texts, kept_rows, plain_needle
from tau_tui.widgets.row_index import RowIndex
from tau_tui.widgets.table_columns import ColumnSpec, TableColumn, as_spec, fitted_widths
from tau_tui.widgets.table_messages import HeaderSelected, RowHighlighted, RowSelected
from tau_tui.widgets.table_plan import (
    NOTICE_KEY,
    Matchable,
    Row,
    TablePlan,
    TableState,
    as_text,
    cell_width,
    plan_rows,
    sort_key,
    sorted_keys,
)

__all__ = ["NOTICE_KEY", "ColumnSpec", "KeyedTable", "Matchable", "Row", "sort_key"]


def single_key_bindings(node: object) -> set[str]:
    """The one-character keys a widget's or screen's class binds (its own and inherited)."""
    keys: set[str] = set()
    for cls in type(node).__mro__:
        bindings: list[BindingType] = vars(cls).get("BINDINGS", [])
        keys.update(binding.key for binding in Binding.make_bindings(bindings) if len(binding.key) == 1)
    return keys


class KeyedTable(LineTable):
    """A table with keyed diff updates (see module docstring)."""

    RowHighlighted = RowHighlighted
    RowSelected = RowSelected
    HeaderSelected = HeaderSelected

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
        super().__init__(**kwargs)
        self._column_spec: list[ColumnSpec] = [as_spec(c) for c in columns]
        #: The columns as drawn, by key, in the specs' order (added on mount).
        self.columns: dict[str, TableColumn] = {}
        #: False for tables whose order means something (a tree of queues and their flavors).
        self.sortable = sortable
        self._state = TableState(columns=len(self._column_spec))
        self._rows = RowIndex()  # the rows shown, in order, with their positions
        self._order: Sequence[str] = []  # the rows shown, in order
        self._all: Sequence[str] = []  # every row, shown or filtered out, in order
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
        self.stats = {"added": 0, "removed": 0, "updated": 0, "moved": 0, "rebuilt": 0, "measured": 0, "matched": 0,
                      "replanned": 0, "sorted": 0, "folded": 0, "layouts_spared": 0, "swapped": 0}
        self.rows_inserted = 0
        self.cells_written = 0

    def on_mount(self) -> None:
        self._add_columns()

    def on_idle(self) -> None:
        if self._sizes_pending:
            self._sizes_pending = False
            self._fit_columns(force=True)

    # -- the rows the drawing asks for ------------------------------------------------------

    @property
    def row_count(self) -> int:
        """Rows shown (rows the filter hides stay stored, not shown)."""
        return len(self._rows)

    def row_key_at(self, row_index: int) -> str | None:
        return self._rows.key_at(row_index)

    def row_cells(self, key: str) -> Sequence[Any] | None:
        return self._state.cells.get(key)

    @property
    def table_columns(self) -> list[TableColumn]:
        columns = self.columns
        return [columns[spec.key] for spec in self._column_spec if spec.key in columns]

    def get_row_index(self, key: str) -> int:
        index = self._rows.position(key)
        if index is None:
            raise KeyError(key)
        return index

    def _add_columns(self) -> None:
        for spec in self._column_spec:
            self.columns[spec.key] = TableColumn(spec.key, self._label_of(spec), len(spec.label), spec.cut == "middle")
        self.columns_changed()
        self._sizes_pending = True
        self.check_idle()
        self.refresh()
        self._fit_columns()

    def clear(self, columns: bool = False) -> KeyedTable:
        """Forget every row (and with ``columns`` the columns): cursor and scroll back at the top."""
        self._rows = RowIndex()
        if columns:
            self.columns.clear()
        self.columns_changed()
        self._state = TableState(columns=len(self._column_spec), sort_index=self._sort_index(),
                                 sort_reverse=self.sort_reverse)
        self._order = []
        self._all = []
        self._kept = set()
        self._widths = [Counter() for _ in self._column_spec]
        self._sizes_pending = True
        self.set_cursor(0, 0)
        self._move_hover(0, 0)
        self.refresh()
        self.scroll_x = 0
        self.scroll_y = 0
        self.scroll_target_x = 0
        self.scroll_target_y = 0
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
        key = self._rows.key_at(self.cursor_row)
        return None if key is None or key == NOTICE_KEY else key

    @property
    def state(self) -> TableState:
        """The rows as of the last update, for a plan made in a worker (:func:`plan_rows`)."""
        return self._state

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

    def cells_not_whole(self, key: str) -> list[tuple[int, str, Any]]:
        """(column index, label, cell) of each cell of row ``key`` the table does not show whole (cut to its column,
        or its column hidden at this width), in the columns' order; blank and "—" cells count as shown."""
        cells = self._state.cells.get(key)
        if cells is None:
            return []
        out = []
        for index, (spec, cell) in enumerate(zip(self._column_spec, cells, strict=False)):
            column = self.columns.get(spec.key)
            plain = cell.plain if isinstance(cell, Text) else str(cell)
            if column is None or not plain.strip() or plain == "—":
                continue
            if column.width == 0 or cell_width(cell) > column.width:
                out.append((index, spec.label, cell))
        return out

    def hidden_column_indexes(self) -> list[int]:
        """The columns hidden at this width, by index."""
        return [index for index, spec in enumerate(self._column_spec) if spec.key in self._hidden]

    def column_width(self, key: str) -> int:
        """The width the column is drawn with (0 when hidden)."""
        column = self.columns.get(key)
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
        # the rows drawn are read from the state: swapping it is the update
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
            self.refresh()
        self._all = plan.keys
        self._kept = self._verdicts(plan.keys, old.source, plan.source)
        self._show(self._visible(plan.keys), selected, rebuilt=bool(plan.stale))

    def _verdicts(self, keys: Sequence[str], old_source: Mapping[str, Any], new_source: Mapping[str, Any]) -> set[str]:
        """The rows the filter keeps: an unchanged row keeps its verdict, a changed one is matched."""
        matchable = self._matchable
        if matchable is None or not self.row_filter.active:
            return set()
        kept = self._kept
        matches = self.row_filter.matches_row
        out: set[str] = set()
        looked = 0
        old_source, new_source = flat(old_source), flat(new_source)  # every row is looked up below
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

    def _visible(self, keys: Sequence[str]) -> Sequence[str]:
        if self._matchable is None or not self.row_filter.active:
            return keys
        kept = self._kept
        return [k for k in keys if k in kept]

    def _show(self, visible: Sequence[str], selected: str | None, rebuilt: bool = False) -> None:
        """Make ``visible`` the table's rows in order: the pane's OrderedKeys are swapped in (its
        rows' moves made them: nothing is indexed); rows only appended are indexed on their own;
        any other change re-indexes once.  The cursor stays on the same key when it is shown."""
        located = self._order
        if isinstance(visible, OrderedKeys):
            if visible is not located:
                self._rows = RowIndex(visible)
                self.stats["swapped"] += 1
                self.keep_cursor()
                self.refresh()
        elif rebuilt or isinstance(located, OrderedKeys) or visible[:len(located)] != located:
            self._reorder(visible)
        elif len(visible) > len(located):
            self._rows.append(visible[len(located):])
            self.keep_cursor()
            self.refresh()
        self._order = visible
        self._set_virtual_size()
        self._fit_columns()
        if selected is not None and selected in self._state.cells:
            row_index = self._rows.position(selected)
            if row_index is not None and row_index != self.cursor_row:
                self.move_cursor(row=row_index, animate=False, scroll=False)

    def _insert_rows(self, rows: list[tuple[str, tuple, tuple[int, ...]]]) -> None:
        """Rows added by an update (already in the state; which are shown, in what order, is
        :meth:`_show`'s): their widths are fitted once the update is done (on idle)."""
        self.stats["added"] += len(rows)
        self.rows_inserted += len(rows)
        self._sizes_pending = True
        self.keep_cursor()
        self.check_idle()
        self.refresh()

    def _drop_rows(self, stale: list[str]) -> None:
        """Rows gone in an update (already out of the state): the caller re-indexes the rows shown."""
        self.stats["removed"] += len(stale)

    def _reorder(self, keys: Sequence[str]) -> None:
        """Put rows in ``keys`` order by re-indexing: no row is re-added or re-measured."""
        self._rows = RowIndex(keys)
        self.stats["moved"] += 1
        self.keep_cursor()
        self.refresh()

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
            drawn = self.columns.get(spec.key)
            if drawn is not None:
                drawn.label = self._label_of(spec)
        self.labels_changed()
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
            taken = single_key_bindings(self.screen)
        except Exception:
            pass
        taken |= single_key_bindings(self)
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

    def on_key(self, event: events.Key) -> None:
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
        widths, hidden = fitted_widths(self._column_spec, self._content_widths(), self._available_width(),
                                       self.cell_padding)
        changed = hidden != self._hidden
        self._hidden = hidden
        for spec, width in zip(self._column_spec, widths, strict=False):
            column = self.columns.get(spec.key)
            if column is None:
                continue
            target = 0 if spec.key in hidden else width
            if column.width != target:
                column.width = target
                changed = True
        if changed or force:
            self._set_virtual_size()
            if changed:
                self.columns_changed()
                self.refresh()

    def _available_width(self) -> int:
        """Columns' room: the widget's width less the vertical scrollbar when the rows will need one
        (measured before it appears, so a first fit does not come out two columns too wide)."""
        if not self.is_mounted or self.size.width <= 0:
            return 0
        width = self.size.width
        if self.show_vertical_scrollbar or len(self._rows) + self.header_lines > self.size.height:
            width = min(width, self.scrollable_content_region.width) if self.show_vertical_scrollbar else \
                width - self.styles.scrollbar_size_vertical
        return max(width, 0)

    def _set_virtual_size(self) -> None:
        width = sum(column.render_width(self.cell_padding) for column in self.columns.values())
        size = Size(width, len(self._rows) + self.header_lines)
        if size == self.virtual_size:
            return
        if not self.is_mounted or self.styles.height is None or self.styles.height.is_auto:
            self.virtual_size = size  # a height from the content: the screen is laid out again
            return
        # A table with a height of its own (1fr) needs no new layout when only its row count
        # changed (a filter, rows arriving): its scrollbars are updated, and they lay the screen
        # out themselves should one appear or go.  A layout re-renders every widget on screen.
        self.set_reactive(Widget.virtual_size, size)
        update_scrollbars(self, size)
        self.stats["layouts_spared"] += 1
        self.refresh()
