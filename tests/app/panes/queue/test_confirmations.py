"""Confirmations from the Queue pane: the verb named once, and what a hold affects."""

from __future__ import annotations

from textual.widgets import Button

from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, settle, wait_until


def _preview(app) -> str:
    return str(app.screen.query_one("#confirm-preview").render())


@async_test
async def test_cancel_dialog_names_the_verb_once_and_offers_keep(tmp_path):
    async with demo_app(tmp_path) as (_, _, app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        table.focus()
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm dialog")
        labels = [str(b.label) for b in app.screen.query(Button)]
        assert labels == ["Cancel (y)", "Keep (n)"], labels
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)


@async_test
async def test_hold_confirmation_summarises_workloads_gpus_memory_and_owners(tmp_path):
    async with demo_app(tmp_path) as (_, _, app, pilot):
        queues = app.screen.query_one("#queues-table", KeyedTable)
        queues.focus()
        key = next(k for k in queues.keys if k == "cq/jobqueue")
        queues.move_cursor(row=queues.keys.index(key))
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm dialog")
        preview = _preview(app)
        assert "affects:" in preview
        assert "admitted workload(s)" in preview and "pending" in preview
        assert "GPU(s)" in preview and "memory" in preview
        assert "owners: namespace taugrid-default" in preview
        assert [str(b.label) for b in app.screen.query(Button)] == ["Hold (y)", "Back (n)"]
