"""The ``xl`` scenario (``tau-tui --demo xl``): five times ``large``, counted from the world built.
Counts only: how long building or showing it takes is benchmarks/app_keys_tmux.py's (``--scenario xl``)."""

from __future__ import annotations

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.scenario import build_world, scenario_names

R = ResourceKind


@pytest.fixture(scope="module")
def xl():
    return build_world("xl")


def test_xl_is_a_packaged_scenario():
    assert "xl" in scenario_names()


def test_xl_holds_five_times_the_large_cluster(xl):
    store = xl.store
    nodes = store.items(R.NODE.type)
    assert len(store.items(R.WORKLOAD.type)) == 100_000
    assert len(store.items(R.JOB.type)) == 100_000
    assert len(nodes) == 10_000
    assert sum(int(n["status"]["capacity"]["nvidia.com/gpu"]) for n in nodes) == 80_000
    assert len(store.items(R.LOCAL_QUEUE.type)) == 500
    assert len(store.items(R.CLUSTER_QUEUE.type)) == 50


def test_xl_queues_spread_over_every_cluster_queue_and_some_are_admitted(xl):
    store = xl.store
    cluster_queues = {lq["spec"]["clusterQueue"] for lq in store.items(R.LOCAL_QUEUE.type)}
    assert cluster_queues == {cq["metadata"]["name"] for cq in store.items(R.CLUSTER_QUEUE.type)}
    admitted = [w for w in store.items(R.WORKLOAD.type) if (w.get("status") or {}).get("admission")]
    assert 0 < len(admitted) < 100_000


def test_the_demo_option_names_xl():
    from tau_tui.commands.app_command import build_app_parser

    demo = next(action for action in build_app_parser()._actions if "--demo" in action.option_strings)
    assert "xl" in str(demo.help).split("scenario:")[1]
