"""Every run's objects indexed once, so picking one run's objects is a few look-ups.

:func:`~tau_tui.core.operations.run_objects.objects_for_run` scans the lists it is given; called for
each of 20,000 runs with the whole lists that is 20,000 × 20,000 comparisons.  The Runs pane,
``tau-tui runs`` and the evidence recorder index the lists here instead: Workloads by owner uid
(label ``kueue.x-k8s.io/job-uid`` or the controller ownerReference), pods by ``job-name`` or
``ray.io/cluster`` label and events by the object they are about, all within a namespace.

Objects can be put and removed one at a time (:class:`~tau_tui.core.operations.live_run_index.LiveRunIndex`
keeps an index current from the cache's changes); a run's objects come back in key order, as
the cache lists them, however they were put."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tau_tui.core.cluster.view_types import EventView, JobView, ObjectView, PodView, RayJobView, WorkloadView
from tau_tui.core.operations.gpufaults import NodeGpuFault
from tau_tui.core.operations.run_objects import RunObjects, run_objects

Key = tuple[str, str]
POD_RUN_LABELS = ("job-name", "ray.io/cluster")


#: A bucket holds its one view alone, and a dict by key only once two views share it: most runs
#: have one Workload and one pod, and a dict (and a key tuple) per bucket is most of the index.
Bucket = Any


def _as_mapping(bucket: Bucket) -> Mapping[Key, Any]:
    if bucket is None:
        return {}
    return bucket if isinstance(bucket, dict) else {bucket.key: bucket}


def _in_key_order(bucket: Bucket) -> list[Any]:
    if bucket is None:
        return []
    if not isinstance(bucket, dict):
        return [bucket]
    if len(bucket) == 1:
        return list(bucket.values())
    return [bucket[key] for key in sorted(bucket)]


def _workload_uids(w: WorkloadView) -> set[str]:
    return {uid for uid in (w.labels.get("kueue.x-k8s.io/job-uid"), (w.controller_owner or {}).get("uid")) if uid}


def _pod_labels(p: PodView) -> list[tuple[str, str, str]]:
    return [(p.namespace or "", label, value) for label in POD_RUN_LABELS if (value := p.labels.get(label))]


class RunIndex:
    def __init__(self, workloads: Iterable[WorkloadView] = (), pods: Iterable[PodView] = (),
                 events: Iterable[EventView] = ()) -> None:
        self._workloads_by_uid: dict[str, Bucket] = {}
        self._pods_by_label: dict[tuple[str, str, str], Bucket] = {}
        self._events_by_name: dict[Key, Bucket] = {}
        for views in (workloads, pods, events):
            for view in views:
                self.put(view)

    # -- one object at a time (the caller removes an object's old view before it puts the new one) --

    def _buckets(self, view: ObjectView) -> tuple[dict[Any, Bucket], Iterable[Any]]:
        """Where ``view`` is indexed: the index of its kind, and its bucket keys there (none for
        a kind the index does not hold)."""
        if isinstance(view, WorkloadView):
            return self._workloads_by_uid, _workload_uids(view)
        if isinstance(view, PodView):
            return self._pods_by_label, _pod_labels(view)
        if isinstance(view, EventView):
            return self._events_by_name, ((view.namespace or "", view.involved_name),)
        return {}, ()

    def put(self, view: ObjectView) -> None:
        index, buckets = self._buckets(view)
        key = view.key
        for bucket in buckets:
            held = index.get(bucket)
            if held is None or (not isinstance(held, dict) and held.key == key):
                index[bucket] = view
            elif isinstance(held, dict):
                held[key] = view
            else:
                index[bucket] = {held.key: held, key: view}

    def remove(self, view: ObjectView) -> None:
        index, buckets = self._buckets(view)
        key = view.key
        for bucket in buckets:
            held = index.get(bucket)
            if held is None:
                continue
            if not isinstance(held, dict):
                if held.key == key:
                    del index[bucket]
                continue
            held.pop(key, None)
            if len(held) == 1:
                index[bucket] = next(iter(held.values()))
            elif not held:
                del index[bucket]

    # -- reads -----------------------------------------------------------------------------------

    def parts(self, owner: JobView | RayJobView) -> tuple[list[WorkloadView], list[PodView], list[EventView]]:
        """The run's Workloads, pods and events (events of the owner, its Workloads and its pods)."""
        ns = owner.namespace or ""
        workloads = [w for w in _in_key_order(self._workloads_by_uid.get(owner.uid or "")) if w.namespace == ns]
        if isinstance(owner, JobView):
            pods = _in_key_order(self._pods_by_label.get((ns, "job-name", owner.name)))
        elif owner.ray_cluster_name:
            pods = _in_key_order(self._pods_by_label.get((ns, "ray.io/cluster", owner.ray_cluster_name)))
        else:
            pods = []
        names = {owner.name} | {w.name for w in workloads} | {p.name for p in pods}
        found = [hit for name in names if (hit := self._events_by_name.get((ns, name))) is not None]
        if len(found) <= 1:  # most runs: no events, or only the owner's
            return workloads, pods, _in_key_order(found[0]) if found else []
        return workloads, pods, _in_key_order({key: e for hit in found for key, e in _as_mapping(hit).items()})

    def ray_cluster_pods(self, namespace: str, ray_cluster: str) -> list[PodView]:
        """Pods of a Ray cluster (a cancelled RayJob's, once the RayJob is gone)."""
        return _in_key_order(self._pods_by_label.get((namespace, "ray.io/cluster", ray_cluster)))

    def objects(self, owner: JobView | RayJobView, gpu_faults: Mapping[str, NodeGpuFault] | None = None,
                parts: tuple[list[WorkloadView], list[PodView], list[EventView]] | None = None) -> RunObjects:
        """The run's objects; ``parts``: what :meth:`parts` returned for it (looked up again if None)."""
        workloads, pods, events = parts if parts is not None else self.parts(owner)
        # the index picked the run's own objects: not scanned again (objects_for_run's filters)
        return run_objects(owner.namespace or "", owner.name, owner if isinstance(owner, JobView) else None,
                           owner if isinstance(owner, RayJobView) else None, workloads, pods, events, gpu_faults)
