"""Messages a ``KeyedTable`` posts (handlers: ``on_keyed_table_row_highlighted`` and so on).

A row is named by its key (``None`` for the notice row that says why a table is empty), so a
handler reads the key it shows without asking the table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message

if TYPE_CHECKING:
    from textual.widget import Widget


@dataclass
class _TableMessage(Message):
    """What every table message carries: the table that posted it (its ``control``)."""

    table: Widget

    @property
    def control(self) -> Widget:
        return self.table


@dataclass
class _RowMessage(_TableMessage):
    cursor_row: int
    key: str | None


@dataclass
class RowHighlighted(_RowMessage, namespace="keyed_table"):
    """The cursor moved to another row."""


@dataclass
class RowSelected(_RowMessage, namespace="keyed_table"):
    """Enter on the cursor's row, or a click on the row the cursor is on."""


@dataclass
class HeaderSelected(_TableMessage, namespace="keyed_table"):
    """A click on a column's label."""

    column_key: str
    column_index: int
    label: Text
