"""The Pods and Events views read a cluster of a thousand pods once, then only the pods and events
that changed (the cache's journal), and show what a read from scratch shows.  Counted in rows
built and whole reads, never timed."""

from __future__ import annotations

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.screens.events import EventsScreen
from tau_tui.screens.object_scope import ObjectScope
from tau_tui.screens.pods import PodsScreen
from tests.app.helpers import plain_cells
from tests.app.panes.nodes.many_nodes import Host, PaneDriver, arrived
from tests.scenarios import one_queue_scenario

RUNS = 1000
NODES = 130  # 8 GPUs each: every run (1 GPU) runs
#: Rows a read may build beyond the objects that changed.
SLACK = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    path = tmp_path_factory.mktemp("many-pods") / "many-pods.yaml"
    jobs = tuple(f"{{at: -50, kind: Job, name: run-{i:04d}, namespace: team-a, queue: q, gpus: 1, durationSeconds: 36000}}"
                 for i in range(RUNS))
    path.write_text(one_queue_scenario("many-pods", seed=7, warmup_seconds=60, nodes=NODES, cpu=64 * NODES,
                                       memory=f"{512 * NODES}Gi", jobs=jobs))
    world = build_world(str(path))
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    assert backend.wait_synced(120)
    yield world, backend
    backend.close()


def shown(data) -> dict[str, list[str]]:
    return {key: plain_cells(cells) for key, cells in data.rows}


def test_the_pods_view_builds_the_changed_pods_rows_alone(cluster):
    world, backend = cluster
    driver = PaneDriver(PodsScreen(ObjectScope("team-a")), Host(backend, world.now()), "pods-table", 8)
    first = driver.read()
    assert len(first.rows) == len(backend.pods("team-a")) >= RUNS
    kept = driver.screen.kept
    assert (kept.full_reads, kept.rows_built) == (1, len(first.rows))
    for _ in range(3):  # nothing changed: nothing built
        assert shown(driver.read()) == shown(first)
    assert (kept.full_reads, kept.rows_built) == (1, len(first.rows))
    pod = backend.pods("team-a")[500]
    world.store.update(ResourceKind.POD.type, pod.name, "team-a",
                       lambda o: o["metadata"].setdefault("labels", {}).__setitem__("tau-tui.test/touched", "yes"))
    arrived(backend, lambda: backend.get(ResourceKind.POD, pod.name, "team-a").labels.get("tau-tui.test/touched"))
    moved = driver.read()
    assert kept.full_reads == 1 and kept.rows_built <= len(first.rows) + 1 + SLACK
    fresh = PaneDriver(PodsScreen(ObjectScope("team-a")), driver.host, "pods-table", 8).read()
    assert [key for key, _ in moved.rows] == [key for key, _ in fresh.rows]
    assert shown(moved) == shown(fresh)
    assert {k: plain_cells(c) for k, c in driver.table.cells.items()} == shown(fresh)


def test_the_events_view_builds_the_changed_events_rows_alone(cluster):
    world, backend = cluster
    driver = PaneDriver(EventsScreen(ObjectScope("team-a")), Host(backend, world.now()), "events-table", 7)
    first = driver.read()
    assert len(first.rows) == len(backend.events("team-a")) > 100
    kept = driver.screen.kept
    assert (kept.full_reads, kept.rows_built) == (1, len(first.rows))
    pod = backend.pods("team-a")[10]
    world.kubelet.event(pod.raw, "Warning", "BackOff", "Back-off restarting failed container main")
    # (the simulated cluster keeps its newest 1,500 events: the oldest may go as this one comes)
    arrived(backend, lambda: any(e.reason == "BackOff" for e in backend.events("team-a")))
    moved = driver.read()
    assert kept.full_reads == 1 and kept.rows_built <= len(first.rows) + 1 + SLACK
    assert shown(moved)[next(iter(shown(moved)))][2] == "BackOff"  # newest first
    fresh = PaneDriver(EventsScreen(ObjectScope("team-a")), driver.host, "events-table", 7).read()
    assert [key for key, _ in moved.rows] == [key for key, _ in fresh.rows]
    assert shown(moved) == shown(fresh)
