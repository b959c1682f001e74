"""A simulated cluster of many 8-GPU nodes (and a few runs on them), and a pane read driven as the
app drives it: the host's clock, memo and backend, the table's state carried from plan to plan."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tau_tui.core.operations.run_status_memo import RunStatusMemo
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.world import SimulatedCluster
from tau_tui.screens.freshness import Freshness
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.table_plan import TableState, plan_rows
from tests.scenarios import one_queue_scenario

#: Runs of a node's 8 GPUs each, on the first nodes (the "runs hit" a fault names).
RUNS = tuple(f"{{at: -50, kind: Job, name: run-{i}, namespace: team-a, queue: q, gpus: 8, durationSeconds: 36000}}"
             for i in range(4))


def many_nodes(directory: Path, nodes: int) -> tuple[SimulatedCluster, SimulatedBackend]:
    """``nodes`` nodes, four of them running a run; a started, synced backend (the caller closes it)."""
    path = directory / "many-nodes.yaml"
    path.write_text(one_queue_scenario("many-nodes", seed=5, warmup_seconds=60, nodes=nodes, cpu=64 * nodes,
                                       memory=f"{512 * nodes}Gi", jobs=RUNS))
    world = build_world(str(path))
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    assert backend.wait_synced(120)
    return world, backend


def cluster_of(nodes: int) -> Any:
    """A module's fixture: a cluster of ``nodes`` nodes (``many_nodes``), closed after the module."""

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory):
        world, backend = many_nodes(tmp_path_factory.mktemp("many-nodes"), nodes)
        yield world, backend
        backend.close()

    return cluster


def arrived(backend: SimulatedBackend, predicate: Any) -> None:
    """Wait until the backend's cache shows a change made in the world."""
    assert backend.cache.wait_for(predicate, 10)


def cordon(world: SimulatedCluster, backend: SimulatedBackend, name: str) -> None:
    world.store.update(ResourceKind.NODE.value, name, None, lambda o: o["spec"].__setitem__("unschedulable", True))
    arrived(backend, lambda: getattr(backend.get(ResourceKind.NODE, name), "unschedulable", False))


class Host:
    """What a pane's read uses of the app."""

    def __init__(self, backend: SimulatedBackend, now: datetime) -> None:
        self.backend = backend
        self.clock = now
        self.node_health = NodeHealthMemo()
        self.run_statuses = RunStatusMemo()
        self.readonly = False

    def now(self) -> datetime:
        return self.clock


class PaneDriver:
    """A pane's collect as the pane reader calls it, each plan carried out on a table state."""

    def __init__(self, screen: Any, host: Host, table_id: str, columns: int) -> None:
        self.screen, self.host, self.table_id = screen, host, table_id
        screen._host = host
        self.table = TableState(columns=columns)

    def read(self) -> Any:
        request = ReadRequest(freshness=Freshness.read(self.host.backend, self.screen.VIEW_KINDS),
                              table_states={self.table_id: self.table})
        data = self.screen.collect(request)
        plan = data.plan if data.plan.state is self.table else plan_rows(self.table, data.plan.rows, data.plan.notice,
                                                                         data.plan.matchable)
        self.table = plan.next_state()
        return data


def counting(monkeypatch: Any, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a function or method); the count is the list's one item."""
    calls = [0]
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
