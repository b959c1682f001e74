"""Each run's status, kept while none of its objects changed: shared by the evidence recorder and
the Runs pane, so the status the recorder worked out when the app started (it looks at every run)
is the one the Runs pane shows when it first opens, and neither works it out again.

A run's inputs are the cache's views of its owner, Workloads, pods and events (a changed object is a
new view, so identity says "unchanged") and the GPU faults of its pods' nodes (compared by value).
Reads and writes are single dictionary operations, safe from the recorder's and the pane's threads."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from operator import is_
from typing import TYPE_CHECKING

from tau_tui.core.cluster.view_types import EventView, JobView, PodView, RayJobView, WorkloadView

if TYPE_CHECKING:  # types only: the app makes this memo before its first frame, the statuses come later
    from tau_tui.core.operations.gpufaults import NodeGpuFault
    from tau_tui.core.operations.run_status_types import RunStatus


@dataclass(frozen=True)
class RunInputs:
    owner: JobView | RayJobView
    workloads: tuple[WorkloadView, ...]
    pods: tuple[PodView, ...]
    events: tuple[EventView, ...]
    faults: tuple[NodeGpuFault | None, ...]

    @classmethod
    def of(cls, owner: JobView | RayJobView, workloads: Sequence[WorkloadView], pods: Sequence[PodView],
           events: Sequence[EventView], gpu_faults: Mapping[str, NodeGpuFault]) -> RunInputs:
        return cls(owner, tuple(workloads), tuple(pods), tuple(events),
                   tuple(gpu_faults.get(p.node_name or "") for p in pods))

    def same_as(self, other: RunInputs) -> bool:
        return (self.owner is other.owner and _same_objects(self.workloads, other.workloads)
                and _same_objects(self.pods, other.pods) and _same_objects(self.events, other.events)
                and self.faults == other.faults)


def _same_objects(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))  # C-level: a Runs read compares 60,000 of these


class RunStatusMemo:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[RunInputs, RunStatus]] = {}
        #: Statuses worked out (tests bound the work of a refresh by it).
        self.computed = 0

    def status(self, key: str, inputs: RunInputs, compute: Callable[[], RunStatus]) -> tuple[RunStatus, bool]:
        """The run's status and whether it had to be worked out (``compute``) now."""
        hit = self._entries.get(key)
        if hit is not None and hit[0].same_as(inputs):
            return hit[1], False
        status = compute()
        self._entries[key] = (inputs, status)
        self.computed += 1
        return status, True

    def retain(self, keys: Collection[str]) -> None:
        """Forget the runs that are gone (the caller saw every run there is)."""
        for key in list(self._entries):  # one C-level copy: the recorder's thread may add meanwhile
            if key not in keys:
                self._entries.pop(key, None)
