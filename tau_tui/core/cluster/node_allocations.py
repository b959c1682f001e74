"""The GPUs each node has allocated: the GPU requests of the pods bound to it, kept per pod and summed
per node, so that one pod's change re-sums only the node or two it touched (the pods on a node are
indexed), never every pod in the cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_tui.core.cluster.convert import pod_requests
from tau_tui.core.cluster.names import is_gpu_resource

Key = tuple[str, str]
#: A pod's GPU requests on the node it is bound to, as the node views count them.
PodAllocation = tuple[str, dict[str, float]]


def pod_allocation(obj: Mapping[str, Any]) -> PodAllocation | None:
    """A pod's GPU requests on its node; None when it is unbound, finished or asks for no GPU."""
    spec = obj.get("spec") or {}
    node = spec.get("nodeName")
    phase = (obj.get("status") or {}).get("phase")
    if not node or phase in ("Succeeded", "Failed"):
        return None
    gpus = {k: v for k, v in pod_requests(spec).items() if is_gpu_resource(k) and v}
    return (node, gpus) if gpus else None


class NodeAllocations:
    """Every bound pod's GPU requests and their sum per node.

    A node's sum is a new dict whenever it changes, never one changed in place, so a reader that
    holds one (a view being built outside the cache's lock) never sees it change under it."""

    def __init__(self) -> None:
        self.pods: dict[Key, PodAllocation] = {}
        self.by_node: dict[str, dict[str, float]] = {}
        self._pods_on: dict[str, dict[Key, None]] = {}
        #: How many node sums were computed (a test counts the work one change costs).
        self.sums_computed = 0

    def replace(self, allocations: Mapping[Key, PodAllocation]) -> None:
        self.pods = dict(allocations)
        self._pods_on = {}
        for key, (node, _) in self.pods.items():
            self._pods_on.setdefault(node, {})[key] = None
        self.by_node = {}
        for node in self._pods_on:
            self._sum(node)

    def clear(self) -> None:
        self.replace({})

    def set(self, key: Key, allocation: PodAllocation | None) -> set[str]:
        """Set one pod's allocation (None: it holds none); the nodes whose sums changed."""
        before = self.pods.get(key)
        if before == allocation:
            return set()
        if before is not None:
            on_node = self._pods_on.get(before[0], {})
            on_node.pop(key, None)
            if not on_node:
                self._pods_on.pop(before[0], None)
        if allocation is None:
            self.pods.pop(key, None)
        else:
            self.pods[key] = allocation
            self._pods_on.setdefault(allocation[0], {})[key] = None
        touched = {n for n in ((before or ("",))[0], (allocation or ("",))[0]) if n}
        for node in touched:
            self._sum(node)
        return touched

    def _sum(self, node: str) -> None:
        self.sums_computed += 1
        keys = self._pods_on.get(node)
        if not keys:
            self.by_node.pop(node, None)
            return
        slot: dict[str, float] = {}
        for key in keys:
            for res, value in self.pods[key][1].items():
                slot[res] = slot.get(res, 0.0) + value
        self.by_node[node] = slot
