"""Drain from the Nodes pane: plan (core.operations.drain) → preview of evictions, PDB and
budget blockers → server dry-run → confirm → Eviction-API drain → audit."""

from __future__ import annotations

import json

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.submission_kinds import PDB_TYPE
from tau_tui.core.operations.drain import ANNOTATION_DRAIN_STARTED
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_backend, make_app, of_type, settle, wait_until


def running_pods(backend, node: str) -> list[str]:
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                  for p in backend.world.store.items(ResourceKind.POD.type)
                  if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running")


async def select_node(pilot, app, name: str) -> None:
    table = app.screen.query_one("#nodes-table", KeyedTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(name))
    await pilot.pause()


@async_test
async def test_drain_preview_confirm_evict_audit_then_budget_and_pdb_block(tmp_path):
    world, backend = demo_backend()
    node = "h100-node-0"
    victims = running_pods(backend, node)
    assert victims
    # a PDB that allows no disruption, over a pod on another node (used below)
    other = "a100-node-0"
    other_pod = next(p for p in world.store.items(ResourceKind.POD.type) if p["spec"].get("nodeName") == other
                     and p["status"].get("phase") == "Running")
    job_label = other_pod["metadata"]["labels"]["job-name"]
    world.store.put(PDB_TYPE, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                               "metadata": {"name": "keep-one", "namespace": other_pod["metadata"]["namespace"]},
                               "spec": {"selector": {"matchLabels": {"job-name": job_label}}, "maxUnavailable": 0},
                               "status": {"disruptionsAllowed": 0}})
    app = make_app(tmp_path, backend, start_pane="nodes")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await select_node(pilot, app, node)
        await pilot.press("D")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="drain preview")
        previewed = of_type(messages, TauApp.MutationPreviewed)[-1]
        assert previewed.allowed and previewed.ok
        preview = str(app.screen.query_one("#confirm-preview").render())
        assert "✓ drain budget:" in preview
        for ref in victims:
            assert f"→ {ref}" in preview
        assert "already Succeeded" in preview  # finished pods stay
        assert "server dry-run passed: cordon and" in preview
        assert running_pods(backend, node) == victims  # dry-run evicted nothing
        assert not backend.get(ResourceKind.NODE, node).unschedulable
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="drain")
        applied = of_type(messages, TauApp.MutationApplied)[-1]
        assert applied.ok, applied.text
        assert running_pods(backend, node) == []
        raw = backend.world.store.read(ResourceKind.NODE.type, node)
        assert raw["spec"]["unschedulable"] is True
        assert ANNOTATION_DRAIN_STARTED in raw["metadata"]["annotations"]

        # a second drain: the budget (one GPU node out at a time here) and the PDB refuse it
        await settle(pilot)
        await select_node(pilot, app, other)
        await pilot.press("D")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="refusal")
        refused = of_type(messages, TauApp.MutationPreviewed)[-1]
        assert not refused.allowed
        text = str(app.screen.query_one("#confirm-preview").render())
        assert "✗ drain budget: 1 of" in text and node in text
        assert "PodDisruptionBudget" in text and "keep-one allows no disruption" in text
        assert not app.screen.query("#confirm-yes")  # nothing to confirm
        await pilot.press("y")  # "yes" does nothing here
        await pilot.pause()
        assert not backend.get(ResourceKind.NODE, other).unschedulable
        assert running_pods(backend, other)
        await pilot.press("n")
    all_entries = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    entries = [e for e in all_entries if e["phase"] == "outcome"]
    assert [(e["verb"], e["target"], e["ok"]) for e in entries] == [("drain", f"Node {node}", True)]
    assert {e["phase"] for e in all_entries} >= {"preview", "intent", "outcome"}
    assert all(f"evicted {ref}" in entries[0]["message"] for ref in victims)
