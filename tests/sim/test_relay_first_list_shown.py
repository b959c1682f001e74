"""The simulated cluster's own process relays a first list in parts; the app's cache shows a Kueue
kind's parts as they come (as a real server's pages, ``ObjectCache.add_listed_page``), each time
what came has doubled, and puts the other kinds in whole at their list's end."""

from __future__ import annotations

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.cache_relay import REPLACE, STATE, RelayReplayer

R = ResourceKind


def _obj(name: str, rv: int = 1) -> dict:
    return {"metadata": {"name": name, "namespace": "team-a", "resourceVersion": str(rv)}}


def _parts(kind: ResourceKind, names: list[str]) -> list[tuple]:
    return [(REPLACE, kind, [_obj(name)], i == len(names) - 1) for i, name in enumerate(names)]


def test_a_first_list_of_workloads_is_shown_each_time_what_came_has_doubled():
    cache = ObjectCache()
    replayer = RelayReplayer(cache)
    names = [f"wl-{i}" for i in range(9)]
    cached, messages = [], []
    for op in _parts(R.WORKLOAD, names):
        replayer.apply(op)
        cached.append(len(cache.list(R.WORKLOAD)))
        messages.append(cache.view_state(R.WORKLOAD).message)
    assert cached == [1, 2, 2, 4, 4, 4, 4, 8, 9]
    assert messages[:8] == ["1 listed so far", "2 listed so far", "2 listed so far", "4 listed so far",
                            "4 listed so far", "4 listed so far", "4 listed so far", "8 listed so far"]
    assert cache.view_state(R.WORKLOAD).status is ViewStatus.SYNCING
    replayer.apply((STATE, R.WORKLOAD, ViewStatus.READY, ""))
    assert cache.view_state(R.WORKLOAD).status is ViewStatus.READY
    assert sorted(v.name for v in cache.list(R.WORKLOAD)) == sorted(names)


def test_the_first_workloads_are_shown_but_not_jobs_nor_a_relist_until_their_lists_end():
    cache = ObjectCache()
    replayer = RelayReplayer(cache)
    replayer.apply(_parts(R.WORKLOAD, ["first", "last"])[0])
    assert [v.name for v in cache.list(R.WORKLOAD)] == ["first"]
    jobs = _parts(R.JOB, ["a", "b", "c"])
    for op in jobs[:-1]:
        replayer.apply(op)
        assert cache.list(R.JOB) == []
    replayer.apply(jobs[-1])
    assert len(cache.list(R.JOB)) == 3
    replayer.apply(_parts(R.WORKLOAD, ["x", "y"])[1])
    replayer.apply((STATE, R.WORKLOAD, ViewStatus.READY, ""))
    relist = _parts(R.WORKLOAD, ["first", "z", "w"])
    replayer.apply(relist[0])
    replayer.apply(relist[1])
    assert sorted(v.name for v in cache.list(R.WORKLOAD)) == ["first", "y"]  # shown already: never by halves
    replayer.apply(relist[2])
    assert sorted(v.name for v in cache.list(R.WORKLOAD)) == ["first", "w", "z"]
