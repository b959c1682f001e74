"""KeyedTable's keys and mouse answer as Textual's DataTable does.

KeyedTable draws and moves its own cursor since it left DataTable for a Line-API ScrollView; the
oracle here is a real ``textual.widgets.DataTable`` with the same 200 rows, driven by the same keys
and clicks: the cursor row, the scroll offset and the highlight/select messages must match.
(j/k/g/G are KeyedTable's own keys and are not compared.)"""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable

ROWS = [(f"r{i:03}", [f"row-{i:03}", f"{i}m"]) for i in range(200)]
KEY_RUNS = [("down", "down", "down"), ("pagedown",), ("pagedown",), ("pageup",), ("ctrl+end",), ("up",),
            ("ctrl+home",), ("enter",), ("end",), ("home",)]


class TableApp(App):
    def __init__(self, oracle: bool) -> None:
        super().__init__()
        self.oracle = oracle
        self.seen: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        if self.oracle:
            yield DataTable(cursor_type="row", id="t")
        else:
            yield KeyedTable([ColumnSpec("name", "Name"), ColumnSpec("age", "Age")], sortable=False, id="t")

    def on_mount(self) -> None:
        table = self.query_one("#t")
        if isinstance(table, DataTable):
            table.add_column("Name", key="name", width=7)
            table.add_column("Age", key="age", width=4)
            for key, cells in ROWS:
                table.add_row(*cells, key=key)
        else:
            table.apply_rows(ROWS)
        table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.seen.append(("highlighted", event.cursor_row))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.seen.append(("selected", event.cursor_row))

    def on_keyed_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        self.seen.append(("highlighted", event.cursor_row))

    def on_keyed_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        self.seen.append(("selected", event.cursor_row))


async def _walk(oracle: bool) -> list[tuple[object, int, int, list[tuple[str, int]]]]:
    app = TableApp(oracle)
    steps: list[tuple[object, int, int, list[tuple[str, int]]]] = []
    async with app.run_test(size=(40, 15)) as pilot:
        await pilot.pause()
        table = app.query_one("#t")
        for keys in KEY_RUNS:
            app.seen.clear()
            await pilot.press(*keys)
            await pilot.pause()
            steps.append((keys, table.cursor_row, round(table.scroll_y), list(app.seen)))
        for what in ("click", "click on the cursor row"):
            app.seen.clear()
            await pilot.click("#t", offset=(3, 4))
            await pilot.pause()
            steps.append((what, table.cursor_row, round(table.scroll_y), list(app.seen)))
    return steps


def test_keys_and_clicks_move_the_cursor_and_scroll_as_datatable_does() -> None:
    expected = asyncio.run(_walk(oracle=True))
    actual = asyncio.run(_walk(oracle=False))
    assert len(actual) == len(expected) == len(KEY_RUNS) + 2
    for mine, datatable in zip(actual, expected, strict=True):
        assert mine == datatable, f"after {datatable[0]}: KeyedTable {mine[1:]} != DataTable {datatable[1:]}"
