"""Queue positions read as people count: #1 is next in line (Kueue's API is 0-based)."""

from __future__ import annotations

from tau_tui.screens.queue import display_position
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_backend, make_app, settle


def test_display_position_is_one_based_and_marks_estimates():
    assert display_position(0, False) == "#1"
    assert display_position(2, True) == "~3"


@async_test
async def test_queue_pane_positions_are_one_based(tmp_path):
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "In line" in labels
        shown = {}
        for key, wl in screen.data.workloads.items():
            if wl.status_word != "pending":
                continue
            report = backend.pending_positions_local_queue(wl.namespace, wl.queue_name)
            entry = report.position_of(wl.namespace, wl.name)
            cell = table.cells_of(key)[1].plain
            assert cell == ("~" if report.estimated else "#") + str(entry.position_in_local_queue + 1)
            shown[key] = cell
        assert "#1" in shown.values(), shown  # the head of a queue reads #1, not 0
