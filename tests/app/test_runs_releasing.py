"""The Runs pane after a cancel: "releasing compute" while the pods still hold GPUs, then gone, or
"cancelled" when this pane cancelled it (#14 item 2)."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_backend, make_app, settle_until

KEY = "taugrid-default/llama-70b-sft"


@async_test
async def test_a_cancelled_run_reads_releasing_compute_until_its_pods_are_gone(tmp_path):
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None)
        assert "running" in table.cells_of(KEY)[0].plain
        assert backend.cancel(ResourceKind.JOB, "taugrid-default", "llama-70b-sft").ok
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "releasing" in table.cells_of(KEY)[0].plain)
        assert table.cells_of(KEY)[0].plain.endswith("releasing compute")
        world.advance(35)  # the pods' grace period ends
        await settle_until(pilot, lambda: table.cells_of(KEY) is None)
        assert table.cells_of(KEY) is None


@async_test
async def test_a_run_cancelled_from_the_pane_reads_releasing_then_cancelled(tmp_path):
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None)
        table.focus()
        table.move_cursor(row=table.keys.index(KEY))
        await pilot.press("ctrl+d")
        await settle_until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "releasing" in table.cells_of(KEY)[0].plain)
        assert table.cells_of(KEY)[0].plain == "◑ releasing compute"
        world.advance(35)  # the pods' grace period ends
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "cancelled" in table.cells_of(KEY)[0].plain)
        assert table.cells_of(KEY)[0].plain == "■ cancelled"
        release = app.screen.data.statuses[KEY].phase("Compute release")
        assert release is not None and release.status == "done" and "every pod is gone" in release.detail
