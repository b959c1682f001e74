"""The Nodes pane's read on a cluster of 10,000 nodes costs the nodes that changed, not the node
count, and shows exactly what a read from scratch shows (counts, never time)."""

from __future__ import annotations

import sys
import tracemalloc
from datetime import timedelta

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.screens.nodes import NodesScreen
from tau_tui.widgets import node_cells
from tests.app.helpers import plain_cells
from tests.app.panes.nodes.many_nodes import Host, PaneDriver, cluster_of, cordon, counting

NODES = 10_000
#: Enough nodes for the ages and removals, whose checks read every node from scratch several times.
FEW_NODES = 300
#: Work a read may do beyond the nodes that changed.
SLACK = 4


cluster = cluster_of(NODES)
small_cluster = cluster_of(FEW_NODES)


def nodes_driver(backend, now) -> PaneDriver:
    return PaneDriver(NodesScreen(), Host(backend, now), "nodes-table", 11)


def count_work(monkeypatch) -> tuple[list[int], list[int]]:
    """(nodes judged or looked up in the health memo, rows whose cells were built: one GPU summary each)."""
    judged = counting(monkeypatch, NodeHealthMemo, "_judged")
    rows = [0]
    summary = node_cells.gpu_summary

    def counted(node):
        rows[0] += 1
        return summary(node)

    for module in [m for name, m in sys.modules.items() if name.startswith("tau_tui.screens")]:
        if getattr(module, "gpu_summary", None) is summary:  # wherever the pane builds its rows
            monkeypatch.setattr(module, "gpu_summary", counted)
    return judged, rows


def assert_same_as_a_read_from_scratch(driver: PaneDriver, data) -> None:
    fresh_driver = nodes_driver(driver.host.backend, driver.host.now())
    fresh = fresh_driver.read()
    assert [key for key, _ in data.rows] == [key for key, _ in fresh.rows]
    assert {key: plain_cells(cells) for key, cells in data.rows} == {key: plain_cells(cells) for key, cells in fresh.rows}
    assert data.matchable == fresh.matchable
    assert data.status == fresh.status
    assert list(driver.table.given) == list(fresh_driver.table.given)
    assert {k: plain_cells(c) for k, c in driver.table.cells.items()} == \
        {k: plain_cells(c) for k, c in fresh_driver.table.cells.items()}


def test_a_read_after_a_few_node_changes_builds_those_rows_alone_and_shows_what_a_fresh_read_shows(cluster, monkeypatch):
    world, backend = cluster
    driver = nodes_driver(backend, world.now())
    first = driver.read()
    assert len(first.rows) == NODES
    judged, rows = count_work(monkeypatch)

    quiet = driver.read()  # nothing changed: no node looked at, no row built
    assert (judged[0], rows[0]) == (0, 0)
    assert quiet.status == first.status

    hit_node = next(p.node_name for p in backend.pods() if p.node_name)  # a node a run runs on
    changed = ["gpu-9000", "gpu-4321", "gpu-17"]
    for name in changed:
        cordon(world, backend, name)
    world.gpu_fault(hit_node, kill_pods=False)
    assert backend.cache.wait_for(lambda: backend.get(ResourceKind.NODE, hit_node).gpu_health.status["verdict"] == "unhealthy", 10)
    judged[0] = rows[0] = 0
    data = driver.read()
    k = len(changed) + 1
    # Nodes read: 10,000 nodes judged and 10,000 rows built per refresh before, whatever changed
    assert judged[0] <= k + SLACK, f"{judged[0]} nodes looked at for {k} changed"
    assert rows[0] <= k + SLACK, f"{rows[0]} rows built for {k} changed"
    row = dict(data.rows)
    assert all("cordoned" in plain_cells(row[name])[9] for name in changed), [plain_cells(row[n]) for n in changed]
    assert plain_cells(row[hit_node])[1].startswith("✗") and plain_cells(row[hit_node])[2].startswith("✗ 1: team-a/run-")
    assert data.rows[0][0] == hit_node  # worst first
    assert_same_as_a_read_from_scratch(driver, data)


def test_heartbeat_ages_and_deadlines_build_again_only_the_rows_whose_text_moved(small_cluster, monkeypatch):
    world, backend = small_cluster
    driver = nodes_driver(backend, world.now())
    before = driver.read()
    judged, rows = count_work(monkeypatch)
    for seconds in (0.5, 1, 61, 3600):  # the same age; every age a second on; a minute on; heartbeats gone stale
        driver.host.clock = world.now() + timedelta(seconds=seconds)
        judged[0] = rows[0] = 0
        data = driver.read()
        was = {key: plain_cells(cells) for key, cells in before.rows}
        moved = sum(1 for key, cells in data.rows if plain_cells(cells) != was.get(key))
        assert rows[0] <= moved + SLACK, (seconds, rows[0], moved)
        assert_same_as_a_read_from_scratch(driver, data)
        before = data
    assert moved == FEW_NODES  # an hour on, every heartbeat is stale: no node reads healthy


def test_a_node_gone_leaves_the_table_and_only_its_row_moves(small_cluster, monkeypatch):
    world, backend = small_cluster
    driver = nodes_driver(backend, world.now())
    driver.read()
    judged, rows = count_work(monkeypatch)
    world.store.remove(ResourceKind.NODE.value, "gpu-155")
    assert backend.cache.wait_for(lambda: backend.get(ResourceKind.NODE, "gpu-155") is None, 10)
    data = driver.read()
    assert len(data.rows) == FEW_NODES - 1 and "gpu-155" not in dict(data.rows)
    assert judged[0] <= 1 + SLACK and rows[0] <= SLACK
    assert_same_as_a_read_from_scratch(driver, data)


def test_a_read_after_a_few_changes_copies_nothing_of_the_node_count_and_leaves_the_last_read_as_it_was(cluster):
    """The read hands the UI thread its rows, filter texts and nodes, and the next read changes none of
    them: it makes their next versions from its changes, allocating memory bounded by the changes
    (a copy of 10,000 names alone is 80 KB; of the cells' and nodes' mappings, 300 KB each)."""
    world, backend = cluster
    driver = nodes_driver(backend, world.now())
    driver.read()
    before = driver.read()
    rows_before = [(key, plain_cells(cells)) for key, cells in before.rows]
    matchable_before, nodes_before = dict(before.matchable), dict(before.nodes)
    for name in ("gpu-9001", "gpu-4322"):
        cordon(world, backend, name)
    tracemalloc.start()
    try:
        data = driver.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 60_000, f"a read of 2 changed nodes of {NODES:,} allocated {peak:,} bytes at its peak"
    assert "cordoned" in {key: plain_cells(cells) for key, cells in data.rows}["gpu-9001"][9]
    # what the last read handed over is as it was (the UI thread may still be drawing from it)
    assert [(key, plain_cells(cells)) for key, cells in before.rows] == rows_before
    assert dict(before.matchable) == matchable_before and dict(before.nodes) == nodes_before
    assert before.nodes["gpu-9001"] is not data.nodes["gpu-9001"]
    assert_same_as_a_read_from_scratch(driver, data)
