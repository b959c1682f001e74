from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import yaml

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.convert import local_queue_view, workload_view
from tau_tui.core.cluster.errors import ClusterError, describe_api_error, no_access_message
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.kubeconfig import KubeconfigSource
from tau_tui.core.cluster.positions import PositionReport, PositionSource, PositionTracker, estimate_cluster_queue_order

R = ResourceKind
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _wl(name, uid, priority=0, created=T0, queue="lq", ns="a", conditions=(), boost=None):
    ann = {"kueue.x-k8s.io/priority-boost": str(boost)} if boost is not None else {}
    return workload_view({"metadata": {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "1",
                                       "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "annotations": ann},
                          "spec": {"queueName": queue, "priority": priority},
                          "status": {"conditions": list(conditions)}})


def test_estimated_order_is_priority_then_queue_time_then_uid():
    lqs = [local_queue_view({"metadata": {"name": "lq", "namespace": "a"}, "spec": {"clusterQueue": "cq"}}),
           local_queue_view({"metadata": {"name": "lq2", "namespace": "b"}, "spec": {"clusterQueue": "cq"}})]
    evicted = {"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
               "lastTransitionTime": (T0 + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    wls = [
        _wl("old-low", "u5", 0, T0),
        _wl("new-high", "u4", 100, T0 + timedelta(hours=2)),
        _wl("tie-b", "u2", 10, T0 + timedelta(hours=1)),
        _wl("tie-a", "u1", 10, T0 + timedelta(hours=1), queue="lq2", ns="b"),
        _wl("boosted", "u9", 0, T0 + timedelta(hours=3), boost=50),
        _wl("requeued", "u3", 10, T0, conditions=[evicted]),
        _wl("admitted", "u7", 1000, T0, conditions=[{"type": "QuotaReserved", "status": "True"}]),
        _wl("finished", "u8", 1000, T0, conditions=[{"type": "Finished", "status": "True"}]),
        _wl("orphan", "u6", 1000, T0, queue="missing"),
    ]
    entries = estimate_cluster_queue_order(wls, lqs)["cq"]
    assert [e.name for e in entries] == ["new-high", "boosted", "tie-a", "tie-b", "requeued", "old-low"]
    assert [e.position_in_cluster_queue for e in entries] == list(range(6))
    by = {e.name: e for e in entries}
    assert by["tie-a"].position_in_local_queue == 0 and by["tie-b"].position_in_local_queue == 2  # behind new-high and boosted in a/lq


def test_position_history_keeps_changes():
    tracker = PositionTracker(maxlen=4)
    for minute, pos in enumerate([5, 5, 5, 3, 3, 1]):
        from tau_tui.core.cluster.positions import PendingPosition

        entry = PendingPosition("a", "w", "u", "lq", "cq", 0, pos, pos)
        tracker.record(PositionReport("LocalQueue", "lq", "a", (entry,), PositionSource.ESTIMATED, "",
                                      T0 + timedelta(minutes=minute)), {("a", "w"): T0})
    hist = tracker.history("a", "w")
    assert [s.position_in_local_queue for s in hist.samples] == [5, 5, 3, 3, 1][-4:]
    assert hist.change == -4 or hist.change == 1 - hist.samples[0].position_in_local_queue
    assert hist.time_in_queue(T0 + timedelta(minutes=10)) == 600


def test_error_messages_name_resource_verb_and_action():
    assert describe_api_error(403, verb="list", resource="workloads.kueue.x-k8s.io", namespace="x").startswith(
        "no access: list workloads.kueue.x-k8s.io in ns x.")
    msg = describe_api_error(422, verb="create", resource="jobs.batch", namespace="x", name="j", body={
        "reason": "Invalid", "message": "denied", "details": {"causes": [{"field": "spec.x", "message": "bad"}]}})
    assert msg.startswith("rejected: create jobs.batch/j in ns x") and "spec.x: bad" in msg
    assert "not found" in describe_api_error(404, verb="get", resource="pods", namespace="x", name="p",
                                             body={"details": {"name": "p"}})
    assert "not serve" in describe_api_error(404, verb="list", resource="rayjobs.ray.io", namespace="x")
    assert "already exists" in describe_api_error(409, verb="create", resource="jobs.batch", name="j", body={"reason": "AlreadyExists"})
    assert "PodDisruptionBudget" in describe_api_error(429, verb="create", resource="pods/eviction", name="p")
    assert "webhook" in describe_api_error(500, verb="create", resource="jobs.batch", body={"message": "failed calling webhook"})
    assert "cannot reach" in describe_api_error(None, verb="list", resource="pods")
    assert "Log in again" in describe_api_error(401, verb="list", resource="pods")
    assert no_access_message("list", "pods", None) == "no access: list pods"


def _obj(name, rv, value=1):
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, "value": value}


def test_the_change_feed_names_each_changed_key_once_and_drops_duplicates():
    """A reader of the cache's one change feed (a JournalCursor) is handed the keys changed since
    its last read, each once however often it changed; a duplicate event (same resourceVersion)
    changes nothing, not even the generation."""
    kind = R.WORKLOAD_PRIORITY_CLASS
    cache = ObjectCache()
    cursor = JournalCursor(kind)
    assert cursor.read(cache).everything  # the first read primes the journal
    cache.replace(kind, [_obj("a", 1), _obj("b", 1)])
    cache.set_state(kind, ViewStatus.READY)
    generation = cache.generation(kind)
    assert cache.apply(kind, "MODIFIED", _obj("a", 1)) is False  # same rv
    assert cache.generation(kind) == generation
    cache.apply(kind, "MODIFIED", _obj("a", 2, 5))
    cache.apply(kind, "MODIFIED", _obj("a", 3, 6))
    cache.apply(kind, "ADDED", _obj("c", 3))
    cache.apply(kind, "DELETED", _obj("c", 4))
    assert cache.apply(kind, "DELETED", _obj("zz", 4)) is False
    changes = cursor.read(cache)
    assert changes.keys == {("", "a"), ("", "b"), ("", "c")} and changes.generation == cache.generation(kind)
    assert cache.get(kind, "a").value == 6 and cache.get(kind, "c") is None  # c came and went: the reader finds none
    assert cursor.read(cache).keys == set()  # nothing since
    cache.replace(kind, [_obj("a", 3, 6)])
    assert cursor.read(cache).keys == {("", "b")}  # a relist names only what it changed


def test_a_reader_behind_by_more_than_a_share_of_the_kind_is_told_to_read_everything():
    """Reading each changed object costs a reader more than one object of a whole read does: past a
    ``cost_ratio``-th of the kind the feed says "read everything" (a cost, not a fixed cap), and a
    journal that no longer reaches back says so too."""
    kind = R.WORKLOAD_PRIORITY_CLASS
    cache = ObjectCache()
    cache.replace(kind, [_obj(f"w{i}", 1) for i in range(4_000)])
    cursor = JournalCursor(kind, cost_ratio=4)
    assert cursor.read(cache).everything
    for i in range(1_000):  # a quarter of the kind: still cheaper one by one
        cache.apply(kind, "MODIFIED", _obj(f"w{i}", 2))
    assert len(cursor.read(cache).keys or ()) == 1_000
    for i in range(1_001):  # more than a quarter: read everything
        cache.apply(kind, "MODIFIED", _obj(f"w{i}", 3))
    assert cursor.read(cache).everything
    for _ in range(3):  # one key changed many times is one key
        for rv in range(4, 2_000):
            cache.apply(kind, "MODIFIED", _obj("w0", rv))
        assert cursor.read(cache).keys == {("", "w0")}
    other = JournalCursor(kind)
    assert other.read(ObjectCache()).everything and other.read(cache).everything  # another cache: everything


def test_a_first_list_is_shown_page_by_page_and_its_end_replaces_the_kind():
    """Pages of a first list go into the cache while the view stays SYNCING (its message says how
    many); the list's end replaces the kind (what was deleted meanwhile goes); a relist of a kind
    already shown is never shown by halves."""
    kind = R.WORKLOAD_PRIORITY_CLASS
    cache = ObjectCache()
    cache.add_listed_page(kind, [_obj("a", 1), _obj("b", 1)], 2)
    state = cache.view_state(kind)
    assert state.status is ViewStatus.SYNCING and state.message == "2 listed so far"
    assert sorted(v.name for v in cache.list(kind)) == ["a", "b"]
    cursor = JournalCursor(kind)
    cursor.read(cache)
    generation = cache.generation(kind)
    cache.add_listed_page(kind, [_obj("b", 1), _obj("c", 2)], 1_004)  # b again, unchanged: not stored
    assert cache.view_state(kind).message == "1,004 listed so far"
    assert cache.generation(kind) == generation + 2  # c stored, and the message
    cache.replace(kind, [_obj("a", 1), _obj("c", 2)])  # the whole list: b was deleted meanwhile
    cache.set_state(kind, ViewStatus.READY)
    assert sorted(v.name for v in cache.list(kind)) == ["a", "c"]
    assert cursor.read(cache).keys == {("", "c"), ("", "b")}  # c came, b went
    cache.add_listed_page(kind, [_obj("d", 3)], 1)  # shown already: a relist's page is not shown
    assert cache.get(kind, "d") is None and cache.view_state(kind).status is ViewStatus.READY


def test_node_allocation_unknown_until_pods_readable():
    cache = ObjectCache()
    node = {"metadata": {"name": "n1", "resourceVersion": "1"},
            "status": {"capacity": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"},
                       "allocatable": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"}}}
    cache.replace(R.NODE, [node])
    assert cache.get(R.NODE, "n1").gpu["nvidia.com/gpu"].allocated is None
    pod = {"metadata": {"name": "p", "namespace": "a", "resourceVersion": "1"},
           "spec": {"nodeName": "n1", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "3"}}}]},
           "status": {"phase": "Running"}}
    cache.replace_node_pods([pod])
    assert cache.get(R.NODE, "n1").gpu["nvidia.com/gpu"].allocated == 3
    assert cache.get(R.NODE, "n1").gpu["nvidia.com/mig-1g.10gb"].allocated == 0
    cache.apply_node_pod("MODIFIED", dict(pod, status={"phase": "Succeeded"}))
    assert cache.get(R.NODE, "n1").gpu["nvidia.com/gpu"].allocated == 0


def test_kubeconfig_merges_several_files_like_kubectl(tmp_path, monkeypatch):
    def write(path, ctx, cluster, ns=None, current=None, exec_user=False):
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin", "args": ["get-token"]}} \
            if exec_user else {"token": "abc"}
        doc = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": cluster, "cluster": {"server": f"https://{cluster}.example:6443"}}],
               "users": [{"name": f"u-{ctx}", "user": user}],
               "contexts": [{"name": ctx, "context": {"cluster": cluster, "user": f"u-{ctx}", **({"namespace": ns} if ns else {})}}]}
        if current:
            doc["current-context"] = current
        path.write_text(yaml.safe_dump(doc))

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    write(first, "prod", "prod-cluster", ns="team-a", current="prod")
    write(second, "aks-dev", "dev-cluster", exec_user=True)
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}:{tmp_path / 'missing.yaml'}")
    source = KubeconfigSource()
    assert [c.name for c in source.contexts()] == ["prod", "aks-dev"]
    assert source.current_context() == "prod"
    assert source.namespace_of("prod") == "team-a"
    client = source.api_client("prod")
    assert client.configuration.host == "https://prod-cluster.example:6443"
    # The client runs the exec plugin while loading; one that cannot run is named, not a later 401.
    with pytest.raises(ClusterError, match="exec plugin kubelogin could not start"):
        source.api_client("aks-dev")
    # Both files name a current-context: kubectl takes the first file's (the client's merger took the last).
    write(second, "aks-dev", "dev-cluster", current="aks-dev")
    assert KubeconfigSource().current_context() == "prod"
    assert KubeconfigSource(f"{second}:{first}").current_context() == "aks-dev"


def test_share_strings_keeps_the_object_and_shares_its_short_strings():
    import json

    from tau_tui.core.cluster.convert import SHARED_STRING_MAX, share_strings

    text = json.dumps({"status": {"conditions": [{"type": "Admitted", "status": "True"}], "tags": ["a100", 3, None, True]},
                       "long": "x" * (SHARED_STRING_MAX + 1), "n": 1})
    first, second = json.loads(text), json.loads(text)
    share_strings(first)
    share_strings(second)
    assert first == second == json.loads(text)  # the same content
    assert first["status"]["conditions"][0]["type"] is second["status"]["conditions"][0]["type"]
    assert first["status"]["tags"][0] is second["status"]["tags"][0]
    assert first["long"] is not second["long"]  # long strings (messages) stay each object's own


def test_position_reads_are_bounded_per_update_new_then_changed_then_old_queues_first():
    from tau_tui.core.cluster.positions import LocalQueuePositions

    clock = [0.0]
    positions = LocalQueuePositions(max_age_s=30.0, clock=lambda: clock[0])
    asked: list[str] = []

    def read(namespace, queue):
        asked.append(queue)
        return PositionReport("LocalQueue", queue, namespace, (), PositionSource.VISIBILITY_API)

    queues = {("a", name): (_wl(f"w-{name}", name, queue=name),) for name in ("q1", "q2", "q3")}
    reports, _ = positions.update(queues, read)  # no bound: all three
    assert sorted(asked) == ["q1", "q2", "q3"]
    asked.clear()
    clock[0] = 40.0  # all three old now
    queues[("a", "q2")] = (_wl("w-q2b", "q2b", queue="q2"),)  # q2's pending set changed
    queues[("a", "q4")] = (_wl("w-q4", "q4", queue="q4"),)  # q4 never read
    reports, _ = positions.update(queues, read, reads_at_most=2)
    assert asked == ["q4", "q2"]  # new first, then changed; the old ones keep their reports meanwhile
    assert set(reports) == {("a", "q1"), ("a", "q2"), ("a", "q3"), ("a", "q4")}
    asked.clear()
    positions.update(queues, read, reads_at_most=1)
    assert asked == ["q1"]  # then the old ones, the longest unread first


def test_position_reports_are_read_on_their_own_thread_and_say_when_one_came():
    import threading

    from tau_tui.core.cluster.background_positions import BackgroundPositions
    from tau_tui.core.cluster.positions import LocalQueuePositions

    gate = threading.Event()
    asked: list[str] = []

    def read(namespace, queue):  # a visibility call that takes until the gate opens
        gate.wait(30)
        asked.append(queue)
        return PositionReport("LocalQueue", queue, namespace, (), PositionSource.VISIBILITY_API)

    background = BackgroundPositions(LocalQueuePositions())
    queues = {("a", name): (_wl(f"w-{name}", name, queue=name),) for name in ("q1", "q2")}
    try:
        background.want(queues, read)  # returns at once: nothing is read on the caller's thread
        assert background.reports(queues) == {} and background.generation == 0
        gate.set()
        assert background.idle.wait(30)  # both read, one at a time, then it rests
        assert sorted(asked) == ["q1", "q2"] and background.generation == 2
        assert set(background.reports(queues)) == set(queues)
        background.want(queues, read)  # the same pending Workloads: nothing to read again
        assert background.idle.wait(30) and len(asked) == 2 and background.generation == 2
    finally:
        background.close()
