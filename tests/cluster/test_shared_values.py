"""Equal parts of many objects are held once: in the copies SharedValues makes, and in the view
parts built from them."""

from __future__ import annotations

import pickle
from typing import Any

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.kinds import ResourceKind as R
from tau_tui.core.cluster.shared_values import SharedValues
from tau_tui.core.sim.cache_relay import REPLACE, RelayReplayer, relay_messages


def _workload(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"w{i}", "namespace": "team-a", "uid": f"u{i}", "resourceVersion": "1",
                         "labels": {"team": "a"}},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                       "lastTransitionTime": "2025-03-05T12:00:00Z"}]}}


def test_copies_share_equal_parts_and_keep_their_own_metadata() -> None:
    shared = SharedValues()
    first, second = (shared.copy(pickle.loads(pickle.dumps(_workload(i)))) for i in range(2))
    assert first == _workload(0) and second == _workload(1)
    assert first["spec"] is second["spec"] and first["status"] is second["status"]
    assert first["metadata"] is not second["metadata"]
    assert first["metadata"]["labels"] is not second["metadata"]["labels"]  # an object's own, never shared
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]  # one string


def test_the_copy_leaves_the_object_copied_alone() -> None:
    obj = _workload(0)
    before = pickle.dumps(obj)
    SharedValues().copy(obj)
    assert pickle.dumps(obj) == before


def test_a_relayed_full_list_builds_shared_view_parts() -> None:
    """One message (as the serving process sends it) into the app's cache: the Workloads' pod sets
    and conditions are one object each, as their raw parts are."""
    items = [_workload(i) for i in range(50)]
    (message,) = relay_messages([(REPLACE, R.WORKLOAD, items, True)], SharedValues())
    cache = ObjectCache()
    replayer = RelayReplayer(cache)
    for op in pickle.loads(pickle.dumps(message)):
        replayer.apply(op)
    views: list[Any] = cache.list(R.WORKLOAD)
    assert len(views) == 50
    assert len({id(v.raw["spec"]) for v in views}) == 1
    assert len({id(v.pod_sets) for v in views}) == 1
    assert len({id(v.conditions) for v in views}) == 1
    assert views[0].pod_sets[0].requests == {"nvidia.com/gpu": 8.0}
    assert views[0].conditions[0].reason == "Pending"
