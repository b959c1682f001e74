"""Which MultiKueue workers may still hold a run's pods, so that a cancel is
called "released" only once every one of them was asked and shows none.

A run dispatched through MultiKueue holds its GPUs on a worker.  Its Workload's
``status.clusterName`` names that worker, but an eviction (HoldAndDrain, a lost
worker) clears it while the pods may still run there; then every worker of the
MultiKueue check's MultiKueueConfig may hold them.  A worker that cannot be
asked leaves the release unknown, never done."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.cluster.view_types import (
    AdmissionCheckView,
    ClusterQueueView,
    JobView,
    LocalQueueView,
    MultiKueueConfigView,
    PodView,
    RayJobView,
)
from tau_tui.core.operations.multikueue_steps.access import AccessError, BackendAccess
from tau_tui.core.operations.run_objects import RunObjects


@dataclass(frozen=True)
class DispatchWorkers:
    """``workers``: every MultiKueueCluster that may hold the run's pods (empty: not a MultiKueue run);
    ``problem``: why they cannot be told (then the release is unknown); ``why``: how they were found."""

    workers: tuple[str, ...] = ()
    problem: str = ""
    why: str = ""

    @property
    def multikueue(self) -> bool:
        return bool(self.workers or self.problem)


def _fetch(backend: Any, kind: ResourceKind, namespace: str | None = None) -> list[Any]:
    return list(backend.fetch(kind, namespace))


def dispatch_workers(backend: Any, objs: RunObjects) -> DispatchWorkers:
    """The workers that may hold the pods of the run in ``objs`` (read before it is deleted: its
    Workload goes with it).  Signs of a MultiKueue dispatch: the owner's ``spec.managedBy``, a
    Workload's ``clusterName`` or nominated clusters, or an admission check whose AdmissionCheck
    has controllerName kueue.x-k8s.io/multikueue (in the Workload's status or on its ClusterQueue)."""
    owner = objs.job or objs.ray_job
    placed = sorted({w.cluster_name for w in objs.workloads if w.cluster_name})
    if placed:
        return DispatchWorkers(tuple(placed), why="the Workload's status.clusterName")
    managed = owner is not None and owner.managed_by == MULTIKUEUE_CONTROLLER_NAME
    nominated = sorted({n for w in objs.workloads for n in w.nominated_cluster_names})
    check_names = {c.name for w in objs.workloads for c in w.admission_checks}
    queue_names = {(w.namespace or objs.namespace, w.queue_name) for w in objs.workloads if w.queue_name}
    cluster_queues = {w.cluster_queue for w in objs.workloads if w.cluster_queue}
    if not (managed or nominated or check_names):
        return DispatchWorkers()  # no admission check at all: a single-cluster run
    try:
        checks = {c.name: c for c in _fetch(backend, ResourceKind.ADMISSION_CHECK) if isinstance(c, AdmissionCheckView)}
        if queue_names:
            local = {(q.namespace, q.name): q for ns in {ns for ns, _ in queue_names}
                     for q in _fetch(backend, ResourceKind.LOCAL_QUEUE, ns) if isinstance(q, LocalQueueView)}
            cluster_queues |= {local[key].cluster_queue for key in queue_names if key in local}
        if cluster_queues:
            for cq in _fetch(backend, ResourceKind.CLUSTER_QUEUE):
                if isinstance(cq, ClusterQueueView) and cq.name in cluster_queues:
                    simple = ((cq.raw.get("spec") or {}).get("admissionChecks") or ())
                    check_names |= {*cq.admission_checks, *(c for c in simple if isinstance(c, str))}
    except ClusterError as err:
        if managed or nominated:
            return DispatchWorkers(problem=f"dispatched through MultiKueue, but its workers cannot be told: {err.message}")
        return DispatchWorkers(problem=f"cannot tell whether it was dispatched through MultiKueue: {err.message}")
    multikueue_checks = sorted(n for n in check_names if n in checks and checks[n].is_multikueue)
    if not (managed or nominated or multikueue_checks):
        return DispatchWorkers()
    if not multikueue_checks:
        if nominated:
            return DispatchWorkers(tuple(nominated), why="the Workload's status.nominatedClusterNames")
        return DispatchWorkers(problem=f"managed by {MULTIKUEUE_CONTROLLER_NAME}, but no MultiKueue AdmissionCheck "
                                       "of its queue was found: the workers that may hold it cannot be told")
    try:
        configs = {c.name: c for c in _fetch(backend, ResourceKind.MULTIKUEUE_CONFIG) if isinstance(c, MultiKueueConfigView)}
    except ClusterError as err:
        return DispatchWorkers(problem=f"cannot read MultiKueueConfigs: {err.message}")
    workers: set[str] = set(nominated)
    for name in multikueue_checks:
        params = checks[name].parameters or {}
        config = configs.get(params.get("name") or "") if params.get("kind") == "MultiKueueConfig" else None
        if config is None:
            return DispatchWorkers(problem=f"AdmissionCheck {name} names no readable MultiKueueConfig "
                                           f"({params.get('kind') or '-'} {params.get('name') or '-'})")
        workers |= set(config.clusters)
    configs_named = ", ".join(sorted({(checks[n].parameters or {}).get("name") or "" for n in multikueue_checks}))
    return DispatchWorkers(tuple(sorted(workers)), why=f"no clusterName: every MultiKueueCluster of MultiKueueConfig {configs_named}")


@dataclass(frozen=True)
class WorkerPods:
    """A run's pods on one worker, or why they could not be read (``pods`` None: unknown); ``owners``: the
    run's objects still there that may start pods again (its Job or RayJob not finished, its RayCluster)."""

    worker: str
    pods: tuple[PodView, ...] | None
    problem: str = ""
    owners: tuple[str, ...] = ()


#: KubeRay's labels on the pods of a RayCluster, and on a RayCluster a RayJob created.
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"


def belongs_to_ray_job(pod: PodView, ray_job: str, ray_cluster: str | None) -> bool:
    """Whether ``pod`` is one of RayJob ``ray_job``'s: of its RayCluster (named in the RayJob's status, or
    ``<rayjob>-<suffix>`` as KubeRay names it, which a worker's copy may do differently from the manager)."""
    cluster = pod.labels.get(RAY_CLUSTER_LABEL, "")
    if not cluster:
        return False
    return (cluster == ray_cluster or cluster.startswith(f"{ray_job}-")
            or pod.labels.get(RAY_ORIGIN_NAME_LABEL) == ray_job)


def read_pods_on_worker(worker: str, worker_backend: Any | None, namespace: str, name: str,
                        ray_job: bool = False, ray_cluster: str | None = None) -> WorkerPods:
    """The pods of Job ``name`` (or of RayJob ``name``, with ``ray_job``) on ``worker``, or why not."""
    if worker_backend is None:
        return WorkerPods(worker, None, "no kubeconfig context is mapped to it in config.yaml (worker_contexts)")
    try:
        if ray_job:
            views = [v for v in worker_backend.fetch(ResourceKind.POD, namespace, f"{RAY_CLUSTER_LABEL}")
                     if isinstance(v, PodView) and belongs_to_ray_job(v, name, ray_cluster)]
        else:
            views = list(worker_backend.fetch(ResourceKind.POD, namespace, f"job-name={name}"))
        owners = _owners_on_worker(worker_backend, worker, namespace, name, ray_job, ray_cluster)
    except ClusterError as err:
        return WorkerPods(worker, None, f"cannot reach it: {err.message}")
    except AccessError as err:
        return WorkerPods(worker, None, f"cannot reach it: {err.message}")
    return WorkerPods(worker, tuple(v for v in views if isinstance(v, PodView)), owners=owners)


#: KubeRay's RayCluster, read through the API primitives (no view of its own).
RAY_CLUSTER = ResourceType(ResourceKind.RAY_JOB.type.group, ResourceKind.RAY_JOB.type.version, "rayclusters",
                           "RayCluster", True)
FINISHED_RAY_JOB = ("Complete", "Failed")


def _owners_on_worker(worker_backend: Any, worker: str, namespace: str, name: str, ray_job: bool,
                      ray_cluster: str | None) -> tuple[str, ...]:
    """The run's Job (or RayJob and its RayClusters) still on ``worker`` and not finished: each may start pods
    again (a Job between retries, a RayCluster recreating its head), whatever its pods show now."""
    out = []
    if ray_job:
        for view in worker_backend.fetch(ResourceKind.RAY_JOB, namespace):
            if isinstance(view, RayJobView) and view.name == name and view.job_deployment_status not in FINISHED_RAY_JOB:
                out.append(f"RayJob {namespace}/{name} ({view.job_deployment_status or 'not started'})")
        for obj in BackendAccess(worker_backend, f"worker {worker}").list(RAY_CLUSTER, namespace):
            meta = obj.get("metadata") or {}
            cluster = str(meta.get("name") or "")
            if (cluster == ray_cluster or cluster.startswith(f"{name}-")
                    or (meta.get("labels") or {}).get(RAY_ORIGIN_NAME_LABEL) == name):
                out.append(f"RayCluster {namespace}/{cluster}")
    else:
        for view in worker_backend.fetch(ResourceKind.JOB, namespace):
            if isinstance(view, JobView) and view.name == name and view.status_word not in ("Complete", "Failed"):
                deleting = " being deleted" if (view.raw.get("metadata") or {}).get("deletionTimestamp") else ""
                out.append(f"Job {namespace}/{name} ({view.status_word}{deleting}, {view.active} active, "
                           f"{view.failed} failed)")
    return tuple(out)


def holding(pods: Sequence[PodView]) -> list[PodView]:
    """Pods that hold, or may still take, their node's resources: every pod not finished, scheduled or not."""
    return [p for p in pods if not p.terminal]
