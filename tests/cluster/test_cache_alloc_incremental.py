"""One pod's change re-sums the GPUs of the node or two it touched, not every bound pod's."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.kinds import ResourceKind as R

NODES = 500
PODS_PER_NODE = 4


class CountedAllocation(tuple[str, dict[str, float]]):
    """A pod's allocation that counts every time it is read (unpacked or indexed)."""

    reads = 0

    def __iter__(self) -> Any:
        CountedAllocation.reads += 1
        return super().__iter__()

    def __getitem__(self, index: Any) -> Any:
        CountedAllocation.reads += 1
        return super().__getitem__(index)


def _node(name: str) -> dict[str, Any]:
    capacity = {"nvidia.com/gpu": "8"}
    return {"metadata": {"name": name, "resourceVersion": "1"},
            "status": {"capacity": capacity, "allocatable": dict(capacity)}}


def _pod(name: str, node: str, gpus: int, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a", "resourceVersion": "1"},
            "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": phase}}


def _allocated(cache: ObjectCache, node: str) -> float | None:
    view: Any = cache.get(R.NODE, node)
    return view.gpu["nvidia.com/gpu"].allocated


def test_a_pod_change_reads_only_the_pods_on_its_nodes() -> None:
    cache = ObjectCache()
    cache.replace(R.NODE, [_node(f"n{i}") for i in range(NODES)])
    cache.replace_pod_allocations({
        ("team-a", f"p{i}-{j}"): CountedAllocation((f"n{i}", {"nvidia.com/gpu": 1.0}))
        for i in range(NODES) for j in range(PODS_PER_NODE)})
    assert _allocated(cache, "n0") == PODS_PER_NODE

    CountedAllocation.reads = 0
    cache.apply_node_pod("MODIFIED", _pod("p0-0", "n0", 2))  # one pod more on n0
    cache.apply_node_pod("MODIFIED", _pod("p1-0", "n2", 1))  # one pod moves from n1 to n2
    cache.apply_node_pod("MODIFIED", _pod("p3-0", "n3", 1, phase="Succeeded"))  # one pod ends
    # the pods on the two or three nodes touched, a few times each: never all NODES * PODS_PER_NODE
    assert CountedAllocation.reads <= 3 * 2 * (PODS_PER_NODE + 2) * 2
    assert _allocated(cache, "n0") == PODS_PER_NODE + 1
    assert _allocated(cache, "n1") == PODS_PER_NODE - 1
    assert _allocated(cache, "n2") == PODS_PER_NODE + 1
    assert _allocated(cache, "n3") == PODS_PER_NODE - 1
    assert _allocated(cache, "n4") == PODS_PER_NODE


def test_sums_follow_pods_through_replace_and_unknown() -> None:
    cache = ObjectCache()
    cache.replace(R.NODE, [_node("n0"), _node("n1")])
    cache.replace_node_pods([_pod("a", "n0", 3), _pod("b", "n0", 2), _pod("c", "n1", 1), _pod("d", "n1", 4, "Failed")])
    assert (_allocated(cache, "n0"), _allocated(cache, "n1")) == (5, 1)
    cache.apply_node_pod("DELETED", _pod("a", "n0", 3))
    cache.set_pod_allocation(("team-a", "c"), None)
    assert (_allocated(cache, "n0"), _allocated(cache, "n1")) == (2, 0)
    cache.set_node_pods_unknown()
    assert (_allocated(cache, "n0"), _allocated(cache, "n1")) == (None, None)
    cache.replace_node_pods([_pod("e", "n1", 8)])
    assert (_allocated(cache, "n0"), _allocated(cache, "n1")) == (0, 8)
