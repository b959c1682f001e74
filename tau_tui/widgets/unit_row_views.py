"""DataTable's rows, cells, row order and line offsets as views, for tables whose rows are all one
line high and whose cells live in one state object (``KeyedTable``).

DataTable rebuilds two lists of every row (``ordered_rows`` and ``_y_offsets``) on the first
frame after any change, and sums the heights of all rows above the cursor on every cursor move.
At 20,000 rows that is the cost of a one-cell change.  With every row one line high, line ``y``
is row ``y``: these views answer each look-up from the row index directly, so a change costs
what changed and a cursor move costs one look-up.  DataTable's ``rows`` and ``_data`` are views of
the table's state too, so an update stores nothing per row: it swaps the state."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from textual.widgets._data_table import Row, RowKey

from tau_tui.widgets.table_plan import as_text

if TYPE_CHECKING:
    from textual.widgets import DataTable


class OrderedRowsView(Sequence["Row"]):
    """``DataTable.ordered_rows`` without the copy: row ``i`` is looked up when asked for."""

    def __init__(self, table: DataTable[Any], indices: range | None = None) -> None:
        self._table = table
        self._indices = indices

    def _range(self) -> range:
        return self._indices if self._indices is not None else range(self._table.row_count)

    def __len__(self) -> int:
        return len(self._range())

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> OrderedRowsView: ...

    def __getitem__(self, index: int | slice) -> Row | OrderedRowsView:
        if isinstance(index, slice):
            return OrderedRowsView(self._table, self._range()[index])
        row_index = self._range()[index]
        key = self._table._row_locations.get_key(row_index)
        if key is None:
            raise IndexError(row_index)
        return self._table.rows[key]

    def __iter__(self) -> Iterator[Row]:
        rows = self._table.rows
        key_at = self._table._row_locations.get_key
        for row_index in self._range():
            key = key_at(row_index)
            if key is not None:
                yield rows[key]


class UnitLineOffsets(Sequence[tuple["RowKey", int]]):
    """``DataTable._y_offsets`` for one-line rows: line ``y`` is ``(key of row y, 0)``."""

    def __init__(self, table: DataTable[Any]) -> None:
        self._table = table

    def __len__(self) -> int:
        return self._table.row_count

    @overload
    def __getitem__(self, index: int) -> tuple[RowKey, int]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[RowKey, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[RowKey, int] | list[tuple[RowKey, int]]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        row_index = range(len(self))[index]
        key = self._table._row_locations.get_key(row_index)
        if key is None:
            raise IndexError(row_index)
        return (key, 0)

    def clear(self) -> None:
        """DataTable.clear() empties the old list; a view has nothing to empty."""


class StateRows(Mapping["RowKey", "Row"]):
    """``DataTable.rows`` as a view of a keyed table's state: every row is one line high, so a
    row's metadata is made when asked instead of stored for each of 20,000 rows.  Its length and
    order are the rows shown (the filter's); membership is every stored row."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def __getitem__(self, row_key: RowKey) -> Row:
        if row_key.value not in self._table.state.cells:
            raise KeyError(row_key)
        return Row(row_key, 1)

    def __contains__(self, row_key: object) -> bool:
        return getattr(row_key, "value", None) in self._table.state.cells

    def __len__(self) -> int:
        return self._table.row_count

    def __iter__(self) -> Iterator[RowKey]:
        key_at = self._table._row_locations.get_key
        for index in range(self._table.row_count):
            yield key_at(index)

    def clear(self) -> None:
        """DataTable.clear() empties its dict; the table's state is reset by the table."""


class StateCells(StateRows):
    """``DataTable._data`` as a view of a keyed table's state: a row's ``{column: cell}`` is
    made when a frame draws it (DataTable reads only the rows it renders)."""

    def __getitem__(self, row_key: RowKey) -> dict[Any, Any]:  # type: ignore[override]
        cells = self._table.state.cells.get(row_key.value)
        if cells is None:
            raise KeyError(row_key)
        # a plain string cell as Text: DataTable would read a string as markup
        return dict(zip(self._table.column_key_objects, map(as_text, cells), strict=False))


class KeyLocations:
    """``DataTable._row_locations`` (a ``TwoWayDict`` of RowKey ↔ index) over the list of row keys
    shown: positions come from a plain ``{str: int}`` dict built in one C call, and a ``RowKey`` is
    made when asked.  Building a TwoWayDict of 20,000 RowKeys hashed each of them twice in Python
    on every re-order."""

    def __init__(self, keys: Sequence[str]) -> None:
        self._keys = list(keys)
        self._index = dict(zip(self._keys, range(len(self._keys)), strict=True))

    def append(self, keys: Sequence[str]) -> None:
        start = len(self._keys)
        self._keys.extend(keys)
        self._index.update(zip(keys, range(start, start + len(keys)), strict=True))

    def __setitem__(self, row_key: RowKey, index: int) -> None:
        key = str(row_key.value)
        if index == len(self._keys):
            self.append([key])
            return
        self._index.pop(self._keys[index], None)
        self._keys[index] = key
        self._index[key] = index

    def get(self, row_key: RowKey | str) -> int | None:
        return self._index.get(str(row_key.value) if isinstance(row_key, RowKey) else row_key)

    def get_key(self, index: int) -> RowKey | None:
        if 0 <= index < len(self._keys):
            return RowKey(self._keys[index])
        return None

    def contains_value(self, index: int) -> bool:
        return 0 <= index < len(self._keys)

    def __contains__(self, row_key: object) -> bool:
        return getattr(row_key, "value", row_key) in self._index

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[RowKey]:
        return (RowKey(key) for key in self._keys)
