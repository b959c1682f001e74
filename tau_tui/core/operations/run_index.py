"""Every run's objects indexed once, so picking one run's objects is a few look-ups.

:func:`~tau_tui.core.operations.runstatus.objects_for_run` scans the lists it is given; called for
each of 20,000 runs with the whole lists that is 20,000 × 20,000 comparisons.  The Runs pane,
``tau-tui runs`` and the evidence recorder index the lists here instead: Workloads by owner uid
(label ``kueue.x-k8s.io/job-uid`` or the controller ownerReference), pods by ``job-name`` or
``ray.io/cluster`` label and events by the object they are about, all within a namespace."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tau_tui.core.cluster.view_types import EventView, JobView, PodView, RayJobView, WorkloadView
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.runstatus import RunObjects, run_objects


class RunIndex:
    def __init__(self, workloads: Iterable[WorkloadView], pods: Iterable[PodView], events: Iterable[EventView]) -> None:
        self._workloads_by_uid: dict[str, list[WorkloadView]] = {}
        for w in workloads:
            for uid in {w.labels.get("kueue.x-k8s.io/job-uid"), (w.controller_owner or {}).get("uid")}:
                if uid:
                    self._workloads_by_uid.setdefault(uid, []).append(w)
        self._pods_by_label: dict[tuple[str, str, str], list[PodView]] = {}
        for p in pods:
            for label in ("job-name", "ray.io/cluster"):
                value = p.labels.get(label)
                if value:
                    self._pods_by_label.setdefault((p.namespace or "", label, value), []).append(p)
        #: events in list order (the index keeps that order when a run's events are merged)
        self._events_by_name: dict[tuple[str, str], list[tuple[int, EventView]]] = {}
        for index, e in enumerate(events):
            self._events_by_name.setdefault((e.namespace or "", e.involved_name), []).append((index, e))

    def parts(self, owner: JobView | RayJobView) -> tuple[list[WorkloadView], list[PodView], list[EventView]]:
        """The run's Workloads, pods and events (events of the owner, its Workloads and its pods)."""
        ns = owner.namespace or ""
        workloads = [w for w in self._workloads_by_uid.get(owner.uid or "", ()) if w.namespace == ns]
        if isinstance(owner, JobView):
            pods = self._pods_by_label.get((ns, "job-name", owner.name), [])
        elif owner.ray_cluster_name:
            pods = self._pods_by_label.get((ns, "ray.io/cluster", owner.ray_cluster_name), [])
        else:
            pods = []
        names = {owner.name} | {w.name for w in workloads} | {p.name for p in pods}
        found = [hit for name in names if (hit := self._events_by_name.get((ns, name)))]
        if len(found) <= 1:  # most runs: no events, or only the owner's (already in list order)
            return workloads, pods, [e for _, e in found[0]] if found else []
        return workloads, pods, [e for _, e in sorted(item for hit in found for item in hit)]

    def ray_cluster_pods(self, namespace: str, ray_cluster: str) -> list[PodView]:
        """Pods of a Ray cluster (a cancelled RayJob's, once the RayJob is gone)."""
        return self._pods_by_label.get((namespace, "ray.io/cluster", ray_cluster), [])

    def objects(self, owner: JobView | RayJobView, gpu_faults: Mapping[str, NodeGpuFault] | None = None,
                parts: tuple[list[WorkloadView], list[PodView], list[EventView]] | None = None) -> RunObjects:
        """The run's objects; ``parts``: what :meth:`parts` returned for it (looked up again if None)."""
        workloads, pods, events = parts if parts is not None else self.parts(owner)
        # the index picked the run's own objects: not scanned again (objects_for_run's filters)
        return run_objects(owner.namespace or "", owner.name, owner if isinstance(owner, JobView) else None,
                           owner if isinstance(owner, RayJobView) else None, workloads, pods, events, gpu_faults)
