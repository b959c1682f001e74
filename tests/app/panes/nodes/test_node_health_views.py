"""The Nodes pane and node detail: the health filter, a node's pod logs, and the advice for a verdict."""

from __future__ import annotations

from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, settle, wait_until


@async_test
async def test_unhealthy_filter_matches_the_verdict_not_negative_reason_text(tmp_path):
    async with demo_app(tmp_path, start_pane="nodes") as (_, _, app, pilot):
        screen = app.screen
        table = screen.query_one("#nodes-table", KeyedTable)
        everyone = list(table.keys)
        assert len(everyone) > 3
        screen.set_filter("unhealthy")
        await settle(pilot)
        assert list(table.keys) == ["h100-node-5"]  # not every node whose reason says "no unhealthy GPU"
        screen.set_filter("Xid79")  # a problem's reason is still searchable
        await settle(pilot)
        assert list(table.keys) == ["h100-node-5"]


@async_test
async def test_pod_logs_on_a_node_open_that_pods_log(tmp_path):
    from tau_tui.screens.logs import LogsScreen
    from tau_tui.screens.node_detail import NodeDetailScreen

    async with demo_app(tmp_path, start_pane="nodes") as (world, backend, app, pilot):
        node = next(n.name for n in backend.nodes()
                    if sum(1 for p in backend.pods() if p.node_name == n.name and any("gpu" in r for r in p.requests)) >= 1)
        app.push_screen(NodeDetailScreen(node))
        await settle(pilot)
        pods = app.screen.query_one("#pods-table", KeyedTable)
        await wait_until(pilot, lambda: bool(pods.keys), what="pods on the node")
        pods.focus()
        key = pods.keys[0]
        pod_name = key.rpartition("/")[2]
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.request is not None,
                         what="logs opened")
        request = app.screen.request
        assert request.pods == (pod_name,) and request.job is None and request.ray_job is None
        assert pod_name in app.screen.run_title


@async_test
async def test_node_detail_says_what_to_do_and_why_the_verdict(tmp_path):
    from tau_tui.screens.node_detail import NodeDetailScreen

    async with demo_app(tmp_path, start_pane="nodes", size=(200, 48)) as (_, _, app, pilot):
        app.push_screen(NodeDetailScreen("h100-node-5"))
        await settle(pilot)
        advice = " ".join(app.screen.data.advice)
        # Xid 79 as the catalog rates it: a reboot, latched (not "RESET_GPU" here and "NONE" elsewhere)
        assert "gpu3 Xid79 → unhealthy; do: drain and reboot the node" in advice, advice
        assert "latched: it stays until the GPU is reset or the node reboots" in advice
        await pilot.press("escape")
        await settle(pilot)
        app.push_screen(NodeDetailScreen("a100-node-3"))
        await settle(pilot)
        advice = " ".join(app.screen.data.advice)
        assert "degraded" in advice and "not latched: the health policy rates it degraded" in advice, advice
