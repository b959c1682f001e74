"""Positions of one ClusterQueue's pending Workloads, as the simulated visibility API serves them.

Worked out once per ClusterQueue and pending list (the list is shared until the store changes), not
once per request: the queue pane asks for each of 50 LocalQueues in turn, and each answer would
otherwise walk its ClusterQueue's 2,000 pending Workloads again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Workload = dict[str, Any]


@dataclass(frozen=True)
class PendingPositions:
    #: the ClusterQueue's pending Workloads in Kueue order
    items: Sequence[Workload]
    #: id(workload) -> its place in the ClusterQueue
    in_cluster_queue: dict[int, int] = field(default_factory=dict)
    #: id(workload) -> its place among those of its (namespace, LocalQueue)
    in_local_queue: dict[int, int] = field(default_factory=dict)
    #: id(workload) -> its place among those of its LocalQueue's name in any namespace: Kueue's
    #: ClusterQueue endpoint keys that counter by name only (kueue.md A3.1 quirk)
    in_queue_name: dict[int, int] = field(default_factory=dict)
    #: (namespace, LocalQueue) -> its Workloads, in order
    of_local_queue: dict[tuple[str, str], list[Workload]] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Sequence[Workload]) -> PendingPositions:
        made = cls(items)
        by_name: dict[str, int] = {}
        for index, workload in enumerate(items):
            ident = id(workload)
            queue = workload["spec"]["queueName"]
            local = made.of_local_queue.setdefault((workload["metadata"]["namespace"], queue), [])
            made.in_cluster_queue[ident] = index
            made.in_local_queue[ident] = len(local)
            local.append(workload)
            made.in_queue_name[ident] = by_name.get(queue, 0)
            by_name[queue] = made.in_queue_name[ident] + 1
        return made
