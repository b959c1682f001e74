"""A declined confirmation leaves its trace in the audit log."""

from __future__ import annotations

import json

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import verify
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, wait_until


@async_test
async def test_a_declined_cordon_is_audited_as_preview_then_declined(tmp_path):
    async with demo_app(tmp_path, start_pane="nodes") as (world, backend, app, pilot):
        table = app.screen.query_one("#nodes-table", KeyedTable)
        table.focus()
        node = table.keys[0]
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm")
        await pilot.press("n")
        await wait_until(pilot, lambda: (tmp_path / "audit.jsonl").exists()
                         and len((tmp_path / "audit.jsonl").read_text().splitlines()) == 2, what="declined entry")
    entries = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["phase"], e["verb"], e["target"], e["ok"]) for e in entries] == [
        ("preview", "cordon", f"Node {node}", True), ("declined", "cordon", f"Node {node}", False)]
    assert entries[0]["dry_run"] is True and entries[1]["identity"]["username"] == "kubernetes-admin"
    assert verify(tmp_path / "audit.jsonl").ok
    assert not backend.get(ResourceKind.NODE, node).unschedulable
