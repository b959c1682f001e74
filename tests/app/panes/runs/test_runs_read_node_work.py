"""The Runs pane's read on a cluster of 10,000 nodes looks at the nodes that changed to know every
node's GPU fault, not at every node, and shows what a read from scratch shows (counts, never time)."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.screens.runs import RunsScreen
from tests.app.helpers import plain_cells
from tests.app.panes.nodes.many_nodes import Host, PaneDriver, cluster_of, cordon, counting

NODES = 10_000
#: Nodes a read may look at beyond those that changed.
SLACK = 4


cluster = cluster_of(NODES)


def runs_driver(backend, now) -> PaneDriver:
    return PaneDriver(RunsScreen(), Host(backend, now), "runs-table", 6)


def test_a_runs_read_after_a_few_node_changes_looks_at_those_nodes_alone(cluster, monkeypatch):
    world, backend = cluster
    driver = runs_driver(backend, world.now())
    first = driver.read()
    assert len(first.rows) == 4
    judged = counting(monkeypatch, NodeHealthMemo, "_judged")

    driver.read()  # nothing changed: no node looked at
    assert judged[0] == 0, f"{judged[0]} nodes looked at with none changed"

    hit_node = next(p.node_name for p in backend.pods() if p.node_name)
    for name in ("gpu-9000", "gpu-4321", "gpu-17"):
        cordon(world, backend, name)
    world.gpu_fault(hit_node, kill_pods=False)
    assert backend.cache.wait_for(lambda: backend.get(ResourceKind.NODE, hit_node).gpu_health.status["verdict"] == "unhealthy", 10)
    judged[0] = 0
    data = driver.read()
    assert judged[0] <= 4 + SLACK, f"{judged[0]} nodes looked at for 4 changed"

    fresh = runs_driver(backend, driver.host.now()).read()
    assert {k: plain_cells(c) for k, c in data.rows} == {k: plain_cells(c) for k, c in fresh.rows}
    assert data.statuses == fresh.statuses
    hit = [status for status in data.statuses.values() if status.gpu_hits]
    assert len(hit) == 1 and hit[0].gpu_hits[0].fault.node == hit_node
