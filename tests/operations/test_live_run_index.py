"""The live run index equals an index built from the lists, after every kind of change, and reads
only the objects changed since its last look (counts, not time)."""

from __future__ import annotations

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.live_run_index import LiveRunIndex
from tau_tui.core.operations.run_index import RunIndex, _as_mapping
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world


@pytest.fixture
def demo():
    world = build_world("demo")
    backend = SimulatedBackend(world)
    backend.start()
    assert backend.wait_synced(10)
    yield world, backend
    backend.close()


def buckets(index: RunIndex) -> list[dict]:
    """Every bucket of the index, with the views in it (what is held, and nothing else)."""
    return [{bucket: dict(_as_mapping(held)) for bucket, held in by.items()}
            for by in (index._workloads_by_uid, index._pods_by_label, index._events_by_name)]


def assert_same_as_a_fresh_index(backend, live: RunIndex) -> int:
    """The live index holds the very view objects the cache holds now, in the same buckets, and
    nothing more (a view left over from before a change or a delete would show here)."""
    fresh = RunIndex(backend.workloads(), backend.pods(), backend.events())
    for live_by, fresh_by in zip(buckets(live), buckets(fresh), strict=True):
        assert live_by.keys() == fresh_by.keys()
        for bucket, held in fresh_by.items():
            assert live_by[bucket].keys() == held.keys(), bucket
            assert all(live_by[bucket][key] is view for key, view in held.items()), bucket
    owners = [*backend.jobs(tau_managed_only=False), *backend.ray_jobs(tau_managed_only=False)]
    for owner in owners:
        assert live.parts(owner) == fresh.parts(owner), f"{owner.namespace}/{owner.name}"
    return len(owners)


def settled(world, backend, seconds: float) -> None:
    """The world moves on (the in-process cache holds what it did at once)."""
    world.advance(seconds)


def test_the_live_index_follows_the_cluster_as_a_fresh_index_would(demo):
    world, backend = demo
    live = LiveRunIndex(backend)
    assert assert_same_as_a_fresh_index(backend, live.current()) >= 5
    assert live.full_reads == 3
    changed_objects = 0
    for _ in range(6):  # pods start and end, Workloads are admitted and finish, events come
        before = {kind: backend.generation(kind) for kind in (ResourceKind.WORKLOAD, ResourceKind.POD, ResourceKind.EVENT)}
        settled(world, backend, 30)
        changed_objects += sum(len(backend.changes(kind, generation)[1] or ()) for kind, generation in before.items())
        assert_same_as_a_fresh_index(backend, live.current())
    assert live.full_reads == 3  # never the lists again
    assert 0 < live.objects_read <= changed_objects + 3 * 6  # what moved (and a change made as it read)


def test_a_deleted_object_leaves_the_index(demo):
    world, backend = demo
    live = LiveRunIndex(backend)
    index = live.current()
    pod = next(p for p in backend.pods() if p.labels.get("job-name"))
    owner = next(j for j in backend.jobs(tau_managed_only=False)
                 if j.name == pod.labels["job-name"] and j.namespace == pod.namespace)
    assert pod in index.parts(owner)[1]
    backend.cache.apply(ResourceKind.POD, "DELETED", dict(pod.raw))
    assert pod not in live.current().parts(owner)[1]
    assert_same_as_a_fresh_index(backend, live.current())


def test_a_journal_that_does_not_reach_back_reads_the_kind_whole(demo, monkeypatch):
    world, backend = demo
    live = LiveRunIndex(backend)
    live.current()
    monkeypatch.setattr(backend, "changes", lambda kind, since, cost_ratio=1: (backend.generation(kind), None))
    settled(world, backend, 30)
    assert_same_as_a_fresh_index(backend, live.current())
    assert live.full_reads == 6


def test_a_kind_cleared_and_listed_again_is_followed_through_the_journal(demo):
    """A context or namespace change clears a kind and lists it again (``clear`` then ``replace``):
    the journal names every key, so the index follows without reading the lists."""
    world, backend = demo
    live = LiveRunIndex(backend)
    live.current()
    pods = [dict(p.raw) for p in backend.pods()]
    assert len(pods) >= 2
    backend.cache.clear(ResourceKind.POD)
    backend.cache.replace(ResourceKind.POD, pods[: len(pods) // 2])
    assert_same_as_a_fresh_index(backend, live.current())
    assert live.full_reads == 3
