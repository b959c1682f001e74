"""A DataTable updated by keyed diff: only changed cells are touched.

Rows are ``(key, cells)``.  On :meth:`KeyedTable.apply_rows` stale keys are
removed (or the table cleared when most are stale: ``remove_row`` is O(n)),
changed cells updated, new rows added; a change of order rebuilds once.  The
cursor stays on the same key.  Plain ``str`` cells become ``rich.text.Text``
so cluster data is never parsed as markup."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

Row = tuple[str, Sequence[Any]]

#: Key of the single row that says why a table has no data (forbidden, not installed, loading).
NOTICE_KEY = "__notice__"


def as_cell(value: Any) -> Any:
    if value is None:
        return Text("—")
    if isinstance(value, str):
        return Text(value)
    return value


class KeyedTable(DataTable):
    """DataTable with keyed diff updates (see module docstring)."""

    DEFAULT_CSS = """
    KeyedTable { height: 1fr; }
    """

    def __init__(self, columns: Sequence[tuple[str, str]], **kwargs: Any):
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", False)
        super().__init__(**kwargs)
        self._column_spec = list(columns)
        self._cells: dict[str, tuple] = {}
        self._order: list[str] = []
        self.stats = {"added": 0, "removed": 0, "updated": 0, "rebuilt": 0}

    def on_mount(self) -> None:
        for key, label in self._column_spec:
            self.add_column(label, key=key)

    @property
    def selected_key(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0))
        except Exception:
            return None
        return None if row_key.value == NOTICE_KEY else row_key.value

    def apply_rows(self, rows: Sequence[Row], notice: Text | str | None = None) -> None:
        """Diff ``rows`` into the table.  Call inside ``app.batch_update()``.

        ``notice``: why the data could not be read; shown as the table's only
        row when there are no rows, so an unreadable view never looks empty."""
        if notice is not None and not rows:
            rows = [(NOTICE_KEY, [notice] + [""] * (len(self._column_spec) - 1))]
        wanted = [(key, tuple(as_cell(c) for c in cells)) for key, cells in rows]
        keys = [key for key, _ in wanted]
        selected = self.selected_key
        stale = [k for k in self._order if k not in set(keys)]
        existing = [k for k in self._order if k not in set(stale)]
        new_keys = [k for k in keys if k not in self._cells]
        # Order change among surviving rows, or new rows not at the end: rebuild once.
        survivors_in_new_order = [k for k in keys if k in self._cells]
        order_changed = survivors_in_new_order != existing or (new_keys and keys[: len(existing)] != existing)
        if order_changed or (self._order and len(stale) > len(self._order) // 2):
            self.clear()
            self._cells.clear()
            for key, cells in wanted:
                self.add_row(*cells, key=key)
                self._cells[key] = cells
            self._order = keys
            self.stats["rebuilt"] += 1
        else:
            for key in stale:
                try:
                    self.remove_row(key)
                except RowDoesNotExist:
                    pass
                self._cells.pop(key, None)
                self.stats["removed"] += 1
            column_keys = [c for c, _ in self._column_spec]
            for key, cells in wanted:
                old = self._cells.get(key)
                if old is None:
                    self.add_row(*cells, key=key)
                    self.stats["added"] += 1
                elif old != cells:
                    for index, (before, after) in enumerate(zip(old, cells, strict=False)):
                        if before != after:
                            self.update_cell(key, column_keys[index], after, update_width=True)
                            self.stats["updated"] += 1
                self._cells[key] = cells
            self._order = keys
        if selected is not None and selected in self._cells:
            try:
                self.move_cursor(row=self.get_row_index(selected), animate=False)
            except Exception:
                pass

    def cells_of(self, key: str) -> tuple | None:
        return self._cells.get(key)

    @property
    def keys(self) -> list[str]:
        return list(self._order)
