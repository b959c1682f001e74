"""A TauGrid cluster without tau-agent still shows real GPU health (issue #14 item 5, tier 2).

A KWOK GPU node that no tau-agent reports on (no GPUNodeHealth object, no GPUUnhealthy condition)
carries TauGrid's node-problem-detector condition `XIDErrors=True`, written to `nodes/status`
with a strategic-merge patch as NPD does. Read through the real KubernetesBackend, the node is
unhealthy with the XID reason and TauGrid NPD named as the writer: in core's GPU-fault model
(`read_gpu_faults`, what `tau-tui status` marks runs with), in the Nodes pane and in its drill-down.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.rundocument import read_gpu_faults
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.widgets.keyed_table import KeyedTable
from tests.agent.harness_support import harness_app, kwok_test_nodes
from tests.agent.test_agent_tui_harness import COL_HB, COL_REASON, COL_VERDICT, wait_until
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NODE = "npd-only-gpu"
MESSAGE = "Xid 79 on GPU 3 (0000:3B:00.0): GPU has fallen off the bus"


@pytest.fixture(scope="module")
def npd_node(t2):
    """The node, with XIDErrors=True as TauGrid NPD writes it (problem polarity, fresh heartbeat)."""
    admin = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    core = k8s.CoreV1Api(admin)
    with kwok_test_nodes(admin, [NODE]):
        # KWOK initialises the node's status (Ready) first; NPD patches its own condition beside it.
        wait_for(lambda: any(c.type == "Ready" and c.status == "True" for c in core.read_node_status(NODE).status.conditions or ()),
                 f"{NODE} Ready", timeout=60)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        core.patch_node_status(NODE, {"status": {"conditions": [
            {"type": "XIDErrors", "status": "True", "reason": "XIDErrors", "message": MESSAGE,
             "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, _content_type="application/strategic-merge-patch+json")
        conditions = {c.type: c for c in core.read_node_status(NODE).status.conditions}
        assert conditions["XIDErrors"].status == "True" and conditions["Ready"].status == "True"
        assert "GPUUnhealthy" not in conditions and "GPUDegraded" not in conditions
        yield NODE
    admin.close()


def test_core_reads_the_npd_condition_as_an_unhealthy_gpu_fault(t2, npd_node):
    backend = KubernetesBackend(kubeconfig=t2.kubeconfig)
    try:
        faults = read_gpu_faults(backend, datetime.now(UTC))
    finally:
        backend.close()
    fault = faults.get(NODE)
    assert fault is not None, sorted(faults)
    assert fault.verdict == "unhealthy", fault
    described = fault.describe()
    assert "XIDErrors" in described or "Xid 79" in described, described


def test_nodes_pane_shows_unhealthy_with_the_xid_reason_and_taugrid_npd_as_source(t2, npd_node, tmp_path, monkeypatch):
    app, backend = harness_app(t2, tmp_path, monkeypatch, "nodes", [ResourceKind.NODE])

    async def drive():
        async with app.run_test(size=(220, 50)) as pilot:
            table = app.screen.query_one("#nodes-table", KeyedTable)
            cells = await wait_until(pilot, lambda: table.cells_of(NODE), f"{NODE} in the Nodes pane")
            row = [c.plain for c in cells]
            print("\nNodes pane row: " + " | ".join(row))
            assert "unhealthy" in row[COL_VERDICT] and "✗" in row[COL_VERDICT], row
            assert "XIDErrors" in row[COL_REASON], row
            assert "unknown" not in row[COL_VERDICT] and "stale" not in row[COL_VERDICT], row
            assert row[COL_HB] != "never", row  # NPD's heartbeat, as no agent reports here

            table.focus()
            table.move_cursor(row=table.keys.index(NODE))
            await pilot.press("enter")
            detail = await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and app.screen,
                                      "the node drill-down")
            gpus = detail.query_one("#gpus-table", KeyedTable)
            source = await wait_until(pilot, lambda: gpus.cells_of("source-taugrid-npd"), "the TauGrid NPD source row")
            plain = [c.plain for c in source]
            assert plain[1] == "TauGrid node-problem-detector" and "unhealthy" in plain[2], plain
            assert "Xid 79 on GPU 3" in plain[3], plain

    try:
        asyncio.run(drive())
    finally:
        backend.close()
