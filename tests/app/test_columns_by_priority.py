"""Issue #43 defect 7: at 80x24 the Nodes pane hid Sched and Reason; the Queue pane showed two
different runs as the same ``taugrid-default/job-llama``; even at 160 columns "Why pending" stopped
at "couldn't assign flavors to pod set main:".

Now the state columns stay at 80 columns and the wide ones shrink or go, names are cut in the
middle (both ends kept, so two rows never read the same), and the line under the table shows the
selected row whole, the reason included."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, settle, settle_until_done


def drawn_line(table: KeyedTable, y: int) -> str:
    """Line ``y`` of the table as it is drawn (the header is line 0)."""
    return "".join(segment.text for segment in table.render_line(y))


def drawn_cell(table: KeyedTable, y: int, column: str) -> str:
    """The text of ``column`` on drawn line ``y``, from the columns' drawn widths."""
    start = 0
    for key in table.column_keys:
        width = table.column_width(key)
        drawn = width + 2 * table.cell_padding if width else 0
        if key == column:
            return drawn_line(table, y)[start:start + drawn].strip()
        start += drawn
    raise KeyError(column)


async def rows_as_drawn(pilot, table: KeyedTable, column: str) -> dict[str, str]:
    """Every row's ``column`` as drawn, reached with the cursor keys (the table scrolls)."""
    table.focus()
    await pilot.press("g")
    drawn: dict[str, str] = {}
    for index in range(table.row_count):
        if index:
            await pilot.press("down")
        await settle(pilot)
        key = table.selected_key
        assert key is not None
        drawn[key] = drawn_cell(table, table.cursor_row - int(table.scroll_offset.y) + table.header_lines, column)
    return drawn


@async_test
async def test_at_80_columns_the_nodes_pane_keeps_sched_and_reason(tmp_path):
    async with demo_app(tmp_path, size=(80, 24), start_pane="nodes") as (_, _, app, pilot):
        table = app.screen.query_one("#nodes-table", KeyedTable)
        await settle_until_done(pilot, lambda: table.row_count == 14, "the nodes")
        header = drawn_line(table, 0)
        assert len(header.rstrip()) <= 80
        for label in ("Node", "Health", "Sched", "Reason"):
            assert label in header, header
        assert table.scroll_x == 0 and table.virtual_size.width <= table.size.width, "the table does not scroll sideways"
        # the faulty node's row: cordon state and the reason's start on screen, the whole reason below
        cordon_cell = drawn_cell(table, 1 + table.keys.index("h100-node-5"), "sched")
        reason_cell = drawn_cell(table, 1 + table.keys.index("h100-node-5"), "reason")
        assert cordon_cell == "schedulable" and reason_cell.startswith("Xid79: GPU has"), (cordon_cell, reason_cell)
        table.focus()
        await pilot.press("g")
        await settle(pilot)
        detail = " ".join(app.screen.query_one("#node-detail-line").render().plain.split())
        assert detail.startswith("h100-node-5 · Reason: Xid79: GPU has fallen off the bus (Xid 79)"), detail


@async_test
async def test_at_80_columns_two_workloads_never_read_the_same_and_keep_both_ends(tmp_path):
    async with demo_app(tmp_path, size=(80, 24), start_pane="queue") as (_, backend, app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await settle_until_done(pilot, lambda: table.row_count >= 15, "the workloads")
        names = {key: f"{wl.namespace}/{wl.name}" for key, wl in app.screen.data.workloads.items()}
        assert len(names) == table.row_count
        drawn = await rows_as_drawn(pilot, table, "name")
        assert len(set(drawn.values())) == len(drawn), sorted(drawn.values())
        llama = [key for key, name in names.items() if name.startswith("taugrid-default/job-llama")]
        assert len(llama) >= 2, names  # the two runs the issue saw as one
        for key, shown in drawn.items():
            name = names[key]
            if shown != name:  # cut: in the middle, both ends kept
                head, _, tail = shown.partition("…")
                assert tail and name.startswith(head) and name.endswith(tail) and len(head) >= 6, (shown, name)
        assert backend.view_state(ResourceKind.WORKLOAD) is not None


@async_test
async def test_the_whole_reason_is_on_the_selected_rows_line_at_160_columns(tmp_path):
    async with demo_app(tmp_path, size=(160, 48), start_pane="queue") as (_, _, app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await settle_until_done(pilot, lambda: table.row_count >= 15, "the workloads")
        table.focus()
        await pilot.press("g")
        await settle(pilot)
        key = table.selected_key
        wl = app.screen.data.workloads[key]
        reserved = wl.condition("QuotaReserved")
        assert reserved is not None and reserved.message.startswith("couldn't assign flavors to pod set main:")
        whole = " ".join(reserved.message.split())
        assert len(whole) > table.column_width("why")  # the row cuts it ...
        detail = " ".join(app.screen.query_one("#workload-detail").render().plain.split())
        assert f"Why pending: {whole}" in detail, detail  # ... the line under the table shows it all
        assert detail.startswith(f"{wl.namespace}/{wl.name}")
