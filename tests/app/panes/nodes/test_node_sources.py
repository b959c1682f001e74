"""A node without tau-agent but with TauGrid's NPD conditions shows real health in the Nodes pane
and its drill-down, with the writer named."""

from __future__ import annotations

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_backend, make_app, settle, settle_until

NODE = "h100-node-0"


@async_test
async def test_npd_xid_condition_without_the_agent_is_unhealthy_in_the_nodes_pane(tmp_path):
    world, backend = demo_backend()
    now = format_time(world.now())

    def only_npd(node):
        conditions = [c for c in node["status"]["conditions"] if c["type"] not in ("GPUUnhealthy", "GPUDegraded")]
        conditions.append({"type": "XIDErrors", "status": "True", "reason": "XIDErrors", "message": "Xid 79 on GPU 3",
                           "lastHeartbeatTime": now, "lastTransitionTime": now})
        node["status"]["conditions"] = conditions

    world.store.update(ResourceKind.NODE.type, NODE, None, only_npd)
    app = make_app(tmp_path, backend, start_pane="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#nodes-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(NODE) is not None
                           and "XIDErrors" in " ".join(c.plain for c in table.cells_of(NODE)))
        row = " ".join(c.plain for c in table.cells_of(NODE))
        assert "unhealthy" in row and "unknown" not in row
        app.push_screen(NodeDetailScreen(NODE))
        await settle_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen)
                           and app.screen.query_one("#gpus-table", KeyedTable).cells_of("source-taugrid-npd") is not None)
        cells = app.screen.query_one("#gpus-table", KeyedTable).cells_of("source-taugrid-npd")
        assert cells[1].plain == "TauGrid node-problem-detector" and "unhealthy" in cells[2].plain
        assert "Xid 79 on GPU 3" in cells[3].plain
        await settle(pilot)
