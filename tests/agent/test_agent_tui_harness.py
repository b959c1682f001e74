"""The agent's reports, written to a real control plane, as the TUI's Nodes pane shows them (tier 2).

Two KWOK GPU nodes get an agent each (fake NVML, the real agent loop, the real KubernetesWriter
with the node's own pod-bound agent token): one loses GPU 3 with XID 79 (unhealthy), one has
GPU 5 in thermal slowdown (degraded). A third KWOK GPU node has no agent. The Textual app runs on
a KubernetesBackend pointed at the tier's kubeconfig; its Nodes pane must show unhealthy and
degraded with the agent's reasons, per-GPU detail read from the GPUNodeHealth objects, and
unknown (never healthy) for the node nobody reported on.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from kubernetes import client as k8s

from tau_gpuhealth.names import API_GROUP, API_VERSION, HEALTH_PLURAL
from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.nodes import NodesScreen
from tau_tui.widgets.keyed_table import KeyedTable

from .fake_nvml import h100_node
from .harness_support import (
    EVENTS_NAMESPACE,
    SimulatedTimeWriter,
    agent_client,
    agent_manifests_applied,
    conditions_of,
    harness_app,
)
from .sim import FakeClock, SimNode, fast_config

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NODE_UNHEALTHY = "agent-tui-gpu-xid79"
NODE_DEGRADED = "agent-tui-gpu-thermal"
NODE_SILENT = "agent-tui-gpu-no-agent"
LOST_GPU = 3
HOT_GPU = 5
# Nodes-pane columns (tau_tui/screens/nodes.py): node, verdict, runs hit, gpus, temp, util, ecc, xid, hb, sched, reason.
COL_VERDICT, COL_TEMP, COL_XID, COL_HB, COL_REASON = 1, 4, 7, 8, 10
# Simulated agent time ends close to the wall clock, so the app judges the heartbeats fresh.
SIMULATED_SECONDS = 240


def settle_reports(node: SimNode, verdict: Verdict, limit_s: float) -> None:
    """Step the agent until `verdict` is evaluated and written (the write budget decides when)."""
    end = node.clock.now + limit_s
    while node.clock.now < end:
        node.step(5)
        if (node.agent.health is not None and node.health.verdict is verdict
                and node.agent.scheduler.written_fingerprint == node.health.fingerprint()):
            return
    raise AssertionError(f"{node.agent.node_name}: {verdict.value} not written within {limit_s:.0f} simulated s "
                         f"(evaluated {node.agent.health.verdict.value if node.agent.health else None})")


@pytest.fixture(scope="module")
def plane(t2):
    return t2


@pytest.fixture(scope="module")
def reported(t2, admin):
    """Agents on two KWOK GPU nodes have reported unhealthy and degraded; a third node has no agent."""
    with agent_manifests_applied(t2, admin, [NODE_UNHEALTHY, NODE_DEGRADED, NODE_SILENT]):
        start = time.time() - SIMULATED_SECONDS
        agents = {}
        for name in (NODE_UNHEALTHY, NODE_DEGRADED):
            writer = SimulatedTimeWriter(agent_client(t2, admin, name), name, EVENTS_NAMESPACE)
            agents[name] = SimNode(h100_node(8), node_name=name, writer=writer, clock=FakeClock(start),
                                   config=fast_config(events_namespace=EVENTS_NAMESPACE))
        for node in agents.values():
            settle_reports(node, Verdict.HEALTHY, 60)

        lost = agents[NODE_UNHEALTHY]
        lost.nvml.emit_xid(LOST_GPU, 79)
        lost.nvml.gpus[LOST_GPU].lost = True
        hot = agents[NODE_DEGRADED]
        hot.nvml.gpus[HOT_GPU].clock_reasons = 0x40 | 0x20  # HwThermalSlowdown + SwThermalSlowdown
        hot.nvml.gpus[HOT_GPU].temperature = 91  # slowdown threshold 90
        settle_reports(lost, Verdict.UNHEALTHY, SIMULATED_SECONDS - 70)
        settle_reports(hot, Verdict.DEGRADED, SIMULATED_SECONDS - 70)
        yield agents


def test_agent_conditions_and_health_objects_are_on_the_kwok_nodes(admin, reported):
    unhealthy = conditions_of(admin, NODE_UNHEALTHY)
    assert unhealthy["GPUUnhealthy"].status == "True" and unhealthy["GPUUnhealthy"].reason == "XID79"
    assert f"gpu{LOST_GPU}" in unhealthy["GPUUnhealthy"].message
    degraded = conditions_of(admin, NODE_DEGRADED)
    assert degraded["GPUUnhealthy"].status == "False" and degraded["GPUDegraded"].status == "True"
    assert f"gpu{HOT_GPU}" in degraded["GPUDegraded"].message
    assert "GPUUnhealthy" not in conditions_of(admin, NODE_SILENT)
    custom = k8s.CustomObjectsApi(admin)
    assert custom.get_cluster_custom_object(API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_UNHEALTHY)["status"]["verdict"] == "unhealthy"
    assert custom.get_cluster_custom_object(API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_DEGRADED)["status"]["verdict"] == "degraded"


async def wait_until(pilot, predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def test_nodes_pane_shows_agent_verdicts_reasons_and_unknown_for_unreported(t2, reported, tmp_path, monkeypatch):
    app, backend = harness_app(t2, tmp_path, monkeypatch, "nodes", [ResourceKind.NODE, ResourceKind.GPU_HEALTH])
    expected = {NODE_UNHEALTHY, NODE_DEGRADED, NODE_SILENT}

    async def drive():
        async with app.run_test(size=(220, 50)) as pilot:
            assert isinstance(app.screen, NodesScreen)
            table = app.screen.query_one("#nodes-table", KeyedTable)

            def rows():
                cells = {key: table.cells_of(key) for key in expected}
                return cells if all(cells.values()) else None

            def reported_rows():
                cells = rows()
                if not cells:
                    return None
                # The health objects (per-GPU detail) arrive on their own watch; wait for both.
                if "79" not in cells[NODE_UNHEALTHY][COL_XID].plain or cells[NODE_DEGRADED][COL_TEMP].plain == "—":
                    return None
                return cells

            cells = await wait_until(pilot, reported_rows, "the three agent-test nodes with their health detail")
            plain = {name: [c.plain for c in row] for name, row in cells.items()}
            print("\nNodes pane rows:\n" + "\n".join(" | ".join(row) for row in plain.values()))

            lost = plain[NODE_UNHEALTHY]
            assert "unhealthy" in lost[COL_VERDICT] and "✗" in lost[COL_VERDICT], lost
            assert lost[COL_REASON].startswith("XID79") and f"gpu{LOST_GPU}" in lost[COL_REASON], lost
            assert "79" in lost[COL_XID].split(","), lost
            assert lost[COL_HB] != "never", lost

            hot = plain[NODE_DEGRADED]
            assert "degraded" in hot[COL_VERDICT] and "▲" in hot[COL_VERDICT], hot
            assert f"gpu{HOT_GPU}" in hot[COL_REASON] and "Thermal" in hot[COL_REASON], hot
            assert hot[COL_TEMP] == "91°C", hot

            silent = plain[NODE_SILENT]
            assert "unknown" in silent[COL_VERDICT] and "healthy" not in silent[COL_VERDICT].replace("unhealthy", ""), silent
            assert silent[COL_REASON].startswith("NoAgentReport"), silent
            assert silent[COL_HB] == "never", silent

            # Fresh data from a connected backend: no verdict is marked stale.
            assert not any("stale" in row[COL_VERDICT] for row in plain.values()), plain

            # Worst first: the unhealthy node sorts above the degraded one.
            assert table.keys.index(NODE_UNHEALTHY) < table.keys.index(NODE_DEGRADED)

            # Drill down: the per-GPU rows come from the node's GPUNodeHealth object.
            table.focus()
            table.move_cursor(row=table.keys.index(NODE_UNHEALTHY))
            await pilot.press("enter")
            detail = await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and app.screen,
                                      "the node drill-down")
            assert detail.node_name == NODE_UNHEALTHY
            gpus = detail.query_one("#gpus-table", KeyedTable)
            gpu_row = await wait_until(pilot, lambda: gpus.cells_of(str(LOST_GPU)), "per-GPU rows")
            assert "unhealthy" in gpu_row[2].plain, [c.plain for c in gpu_row]
            healthy_row = gpus.cells_of("0")
            assert healthy_row is not None and "healthy" in healthy_row[2].plain and "unhealthy" not in healthy_row[2].plain
            # ... and the agent's Events about the node (XID and transition) are listed under it.
            events = detail.query_one("#events-table", KeyedTable)

            def event_reasons():
                reasons = {row[1].plain for row in (events.cells_of(key) for key in events.keys) if row}
                return reasons if {"GpuXid79", "GPUUnhealthy"} <= reasons else None

            await wait_until(pilot, event_reasons, "the agent's GpuXid79 and GPUUnhealthy events")

    try:
        asyncio.run(drive())
    finally:
        backend.close()
