"""A node's drill-down and the MultiKueue pane read the cluster's lists once, then only the objects
that changed (the cache's journal), not every pod, event and Workload on each read.  Counted in
objects listed, never timed."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.multikueue import MultiKueueScreen
from tau_tui.screens.node_detail import NodeDetailScreen
from tau_tui.screens.pane_reader import ReadRequest
from tests.app.helpers import plain_cells
from tests.app.panes.nodes.many_nodes import Host, cluster_of
from tests.scenarios import demo_backend

READS = 4

cluster = cluster_of(300)


def objects_listed(monkeypatch: Any, backend: Any, kinds: set[ResourceKind]) -> list[int]:
    """Counts the objects of ``kinds`` the backend hands out in whole lists (the count is the list's one item)."""
    listed = [0]
    list_kind = backend.list

    def counted_list(kind, namespace=None):
        views = list_kind(kind, namespace)
        if kind in kinds:
            listed[0] += len(views)
        return views

    monkeypatch.setattr(backend, "list", counted_list)  # pods(), events() and workloads() list through it
    return listed


def rows_of(data: Any, name: str) -> list:
    return [(key, plain_cells(cells)) for key, cells in getattr(data, name)]


def test_a_nodes_drill_down_lists_pods_and_events_once_then_reads_what_changed(cluster, monkeypatch):
    world, backend = cluster
    node = next(pod.node_name for pod in backend.pods() if pod.node_name)  # a node a run's pods are on
    every = len(backend.pods()) + len(backend.events())
    listed = objects_listed(monkeypatch, backend, {ResourceKind.POD, ResourceKind.EVENT})
    screen = NodeDetailScreen(node)
    screen._host = Host(backend, world.now())
    first = screen.collect(ReadRequest())
    assert first.pod_rows
    for _ in range(READS - 1):
        data = screen.collect(ReadRequest())
        assert rows_of(data, "pod_rows") == rows_of(first, "pod_rows")
        assert rows_of(data, "event_rows") == rows_of(first, "event_rows")
    assert listed[0] <= every, f"{READS} reads listed {listed[0]} pods and events of {every}"


def test_the_multikueue_pane_lists_the_workloads_once_then_reads_what_changed(monkeypatch):
    world, backend = demo_backend()
    try:
        every = len(backend.workloads())
        listed = objects_listed(monkeypatch, backend, {ResourceKind.WORKLOAD})
        screen = MultiKueueScreen()
        screen._host = Host(backend, world.now())
        first = screen.collect(ReadRequest())
        assert first.workload_rows  # the demo places Workloads on its workers
        for _ in range(READS - 1):
            data = screen.collect(ReadRequest())
            assert rows_of(data, "workload_rows") == rows_of(first, "workload_rows")
        assert listed[0] <= every, f"{READS} reads listed {listed[0]} Workloads of {every}"
        # the demo moves on: the changed Workloads read show what a read from scratch shows
        before = backend.generation(ResourceKind.WORKLOAD)
        world.advance(1800)  # the in-process cache holds what it did at once
        assert backend.generation(ResourceKind.WORKLOAD) != before
        listed[0] = 0
        moved = screen.collect(ReadRequest())
        assert listed[0] == 0
        fresh = MultiKueueScreen()
        fresh._host = screen._host
        assert rows_of(moved, "workload_rows") == rows_of(fresh.collect(ReadRequest()), "workload_rows")
    finally:
        backend.close()
