"""A full list is diffed and its views built outside the cache's lock, then swapped in: a reader on
another thread is never held for a whole relist, and still sees the old list or the new one, whole."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tau_tui.core.cluster import cache as cache_module
from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind as R

#: Long enough never to end a healthy run; only a reader stuck behind the relist reaches it.
READER_BOUND_S = 10.0


def _workload(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a", "resourceVersion": rv},
            "spec": {"queueName": "lq"}, "status": {}}


@pytest.fixture
def counted_builds(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Wraps the Workload view builder: counts builds, and builds made while ``cache`` holds its lock."""
    seen: dict[str, Any] = {"builds": 0, "under_lock": 0, "cache": None, "during_build": None}
    builders = dict(cache_module.SIMPLE_VIEW_BUILDERS)
    build = builders[R.WORKLOAD]

    def counting(obj: Any) -> Any:
        seen["builds"] += 1
        if seen["cache"] is not None and seen["cache"]._lock._is_owned():
            seen["under_lock"] += 1
        if seen["during_build"] is not None:
            hook, seen["during_build"] = seen["during_build"], None
            hook()
        return build(obj)

    builders[R.WORKLOAD] = counting
    monkeypatch.setattr(cache_module, "SIMPLE_VIEW_BUILDERS", builders)
    return seen


def test_no_view_is_built_under_the_lock(counted_builds: dict[str, Any]) -> None:
    cache = ObjectCache()
    counted_builds["cache"] = cache
    cache.replace(R.WORKLOAD, [_workload(f"w{i}", "1") for i in range(200)])
    cache.replace(R.WORKLOAD, [_workload(f"w{i}", "2" if i % 2 else "1") for i in range(150)])
    assert counted_builds["builds"] == 200 + 75
    assert counted_builds["under_lock"] == 0


def test_a_first_list_shown_by_pages_builds_no_view_under_the_lock(counted_builds: dict[str, Any]) -> None:
    cache = ObjectCache()
    counted_builds["cache"] = cache
    cache.add_listed_page(R.WORKLOAD, [_workload(f"w{i}", "1") for i in range(100)], 100)
    cache.add_listed_page(R.WORKLOAD, [_workload(f"w{i}", "1") for i in range(100, 300)], 300)
    assert len(cache.list(R.WORKLOAD)) == 300
    assert counted_builds["builds"] == 300
    assert counted_builds["under_lock"] == 0


def test_a_reader_is_answered_while_a_relist_builds(counted_builds: dict[str, Any]) -> None:
    cache = ObjectCache()
    cache.replace(R.WORKLOAD, [_workload("old", "1")])
    answered = threading.Event()
    seen_mid_build: list[list[str]] = []

    def reader() -> None:
        cache.generation(R.WORKLOAD)
        cache.connection_state()
        seen_mid_build.append([v.name for v in cache.list(R.WORKLOAD)])
        answered.set()

    def read_on_another_thread() -> None:
        threading.Thread(target=reader, daemon=True).start()
        answered.wait(READER_BOUND_S)

    counted_builds["during_build"] = read_on_another_thread
    cache.replace(R.WORKLOAD, [_workload(f"new{i}", "1") for i in range(50)])
    assert answered.is_set(), "a reader waited for the whole relist"
    assert seen_mid_build == [["old"]]  # the old list, whole, while the new one was built
    assert [v.name for v in cache.list(R.WORKLOAD)] == sorted(f"new{i}" for i in range(50))


def test_a_write_during_the_build_is_not_lost_in_the_swap(counted_builds: dict[str, Any]) -> None:
    cache = ObjectCache()
    cache.replace(R.WORKLOAD, [_workload("a", "1"), _workload("b", "1")])
    cursor = JournalCursor(R.WORKLOAD)
    cursor.read(cache)
    counted_builds["during_build"] = lambda: cache.apply(R.WORKLOAD, "MODIFIED", _workload("b", "5"))
    cache.replace(R.WORKLOAD, [_workload("a", "2"), _workload("b", "5"), _workload("c", "1")])
    views = {v.name: v for v in cache.list(R.WORKLOAD)}
    assert {name: v.resource_version for name, v in views.items()} == {"a": "2", "b": "5", "c": "1"}
    for name, view in views.items():
        assert view.raw is cache.raw(R.WORKLOAD, name, "team-a")
    assert cursor.read(cache).keys == {("team-a", "a"), ("team-a", "b"), ("team-a", "c")}


def test_a_relist_reports_removals_and_keeps_unmoved_views() -> None:
    cache = ObjectCache()
    cache.replace(R.WORKLOAD, [_workload("a", "1"), _workload("b", "1")])
    kept = cache.get(R.WORKLOAD, "a", "team-a")
    before, keys = cache.changes(R.WORKLOAD, None)
    assert keys is None  # the journal starts here
    cache.replace(R.WORKLOAD, [_workload("a", "1"), _workload("c", "1")])
    assert cache.get(R.WORKLOAD, "a", "team-a") is kept
    assert cache.get(R.WORKLOAD, "b", "team-a") is None
    assert cache.changes(R.WORKLOAD, before) == (cache.generation(R.WORKLOAD), {("team-a", "b"), ("team-a", "c")})


def test_node_views_for_a_new_pod_list_are_built_outside_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ObjectCache()
    node = {"metadata": {"name": "", "resourceVersion": "1"},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}
    cache.replace(R.NODE, [{**node, "metadata": {"name": f"n{i}", "resourceVersion": "1"}} for i in range(20)])
    counts = {"builds": 0, "under_lock": 0}
    build = cache_module.node_view

    def counting(*args: Any) -> Any:
        counts["builds"] += 1
        counts["under_lock"] += cache._lock._is_owned()
        return build(*args)

    monkeypatch.setattr(cache_module, "node_view", counting)
    pod = {"metadata": {"name": "p", "namespace": "a", "resourceVersion": "1"},
           "spec": {"nodeName": "n3", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
           "status": {"phase": "Running"}}
    cache.replace_node_pods([pod])
    assert counts == {"builds": 20, "under_lock": 0}
    view: Any = cache.get(R.NODE, "n3")
    assert view.gpu["nvidia.com/gpu"].allocated == 2


def test_a_relist_journals_as_its_changes_one_by_one_would(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from tau_tui.core.cluster import change_journal
    from tau_tui.core.cluster.change_journal import ChangeJournals

    monkeypatch.setattr(change_journal, "JOURNAL_LEAST", 7)  # small, so relists overflow it
    rng = random.Random(36)
    for _ in range(200):
        one_by_one, at_once = ChangeJournals(), ChangeJournals()
        for journals in (one_by_one, at_once):
            journals.start(R.WORKLOAD, 0)
        generation = 0
        for _ in range(rng.randint(1, 8)):
            keys = [("", f"k{rng.randint(0, 30)}") for _ in range(rng.randint(0, 20))]
            objects = rng.randint(0, 5)
            for i, key in enumerate(keys):
                one_by_one.note(R.WORKLOAD, generation + 1 + i, key, objects)
            at_once.note_many(R.WORKLOAD, generation + 1, keys, objects)
            generation += len(keys) + rng.randint(0, 2)
            for since in range(generation + 1):
                assert one_by_one.changed_since(R.WORKLOAD, since, generation) == \
                    at_once.changed_since(R.WORKLOAD, since, generation)
