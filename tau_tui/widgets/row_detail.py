"""The line under a table that shows the selected row whole: its name, then every cell the table
cuts at this width (``Why pending: couldn't assign flavors to pod set main: insufficient unused
quota …``), then the cells of the columns it hides, wrapped.  It costs the one row, on each cursor
move, read and resize."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tau_tui.widgets.keyed_table import KeyedTable


class RowDetail(Static):
    DEFAULT_CSS = """
    RowDetail { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, name_column: int = 0, **kwargs) -> None:
        """``name_column``: the cell that names the row (always shown first, whole)."""
        super().__init__(Text(""), **kwargs)
        self.name_column = name_column

    def show(self, table: KeyedTable) -> None:
        """The selected row of ``table`` (nothing when none is selected)."""
        key = table.selected_key
        self.update(row_detail(table, key, self.name_column) if key is not None else Text(""))


def row_detail(table: KeyedTable, key: str, name_column: int = 0) -> Text:
    """Row ``key``'s name whole, then ``Label: cell`` for each cell cut to its column, then for each
    cell of a hidden column."""
    line = Text()
    cells = table.cells_of(key)
    if cells and name_column < len(cells):
        line.append_text(cells[name_column])
    not_whole = [(index, label, cell) for index, label, cell in table.cells_not_whole(key) if index != name_column]
    hidden = set(table.hidden_column_indexes())
    for _, label, cell in sorted(not_whole, key=lambda item: item[0] in hidden):
        line.append(" · " if line else "")
        line.append(f"{label}: ", style="bold")
        line.append_text(cell if isinstance(cell, Text) else Text(str(cell)))
    return line
