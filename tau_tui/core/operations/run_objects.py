"""What the run status engine reads about one run: :class:`RunObjects`, and picking them from
namespace-wide lists (:func:`objects_for_run`) or lists that hold only the run's own (:func:`run_objects`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.cluster.view_types import EventView, JobView, PodView, RayJobView, WorkloadView
from tau_tui.core.operations.gpufaults import NodeGpuFault


@dataclass(frozen=True)
class RunObjects:
    """Everything the engine reads about one run (already fetched from the cache)."""

    namespace: str
    name: str
    job: JobView | None = None
    ray_job: RayJobView | None = None
    workloads: Sequence[WorkloadView] = ()
    pods: Sequence[PodView] = ()
    events: Sequence[EventView] = ()
    #: True on a MultiKueue manager (the run's pods live on a worker cluster).
    manager_view: bool = False
    #: node name → its GPU fault now (unhealthy or degraded: node, GPUs, reason, since), from the
    #: agent's verdict or other writers' node conditions; a pod of this run hit by one gives GPU_FAULT.
    gpu_faults: Mapping[str, NodeGpuFault] = field(default_factory=dict)
    #: The caller cancelled (deleted) this run: once its Job or RayJob and every pod are gone it
    #: reads "cancelled", not "not found" (the cluster keeps no trace of a deleted run).
    cancelled: bool = False
    #: The MultiKueue worker a cancelled run was placed on: its pods held GPUs there, not here.
    worker: str | None = None
    #: That worker's pods of the run, read on the worker; None when they could not be read (no
    #: context mapped to the worker, or it is unreachable): then the release is never confirmed.
    worker_pods: Sequence[PodView] | None = None
    #: The run's objects still on that worker that may start pods again (its Job or RayJob not finished, its
    #: RayCluster), described; read with ``worker_pods``.
    worker_owners: Sequence[str] = ()


def objects_for_run(
    namespace: str,
    name: str,
    *,
    job: JobView | None,
    ray_job: RayJobView | None,
    workloads: Sequence[WorkloadView],
    pods: Sequence[PodView],
    events: Sequence[EventView],
    gpu_faults: Mapping[str, NodeGpuFault] | None = None,
) -> RunObjects:
    """Pick the objects that belong to one run from namespace-wide lists."""
    owner = job or ray_job
    uid = owner.uid if owner else None
    wls = [w for w in workloads if uid and (w.labels.get("kueue.x-k8s.io/job-uid") == uid or (w.controller_owner or {}).get("uid") == uid)]
    if job is not None:
        run_pods = [p for p in pods if p.labels.get("job-name") == name]
    elif ray_job is not None and ray_job.ray_cluster_name:
        run_pods = [p for p in pods if p.labels.get("ray.io/cluster") == ray_job.ray_cluster_name]
    else:
        run_pods = []
    names = {name} | {w.name for w in wls} | {p.name for p in run_pods}
    if ray_job is not None and ray_job.ray_cluster_name:  # KubeRay's events about the RayJob's cluster
        names.add(ray_job.ray_cluster_name)
    run_events = [e for e in events if e.involved_name in names]
    return run_objects(namespace, name, job, ray_job, wls, run_pods, run_events, gpu_faults)


def run_objects(namespace: str, name: str, job: JobView | None, ray_job: RayJobView | None,
                workloads: Sequence[WorkloadView], pods: Sequence[PodView], events: Sequence[EventView],
                gpu_faults: Mapping[str, NodeGpuFault] | None = None) -> RunObjects:
    """A run's objects from lists that hold only its own (:func:`objects_for_run` picks them)."""
    owner = job or ray_job
    manager_view = any(w.admission_checks for w in workloads) and (owner is not None and owner.managed_by == MULTIKUEUE_CONTROLLER_NAME)
    return RunObjects(namespace, name, job, ray_job, tuple(workloads), tuple(pods), tuple(events), manager_view,
                      gpu_faults=dict(gpu_faults or {}))
