"""Where a run's logs come from, over the backends' API primitives (both backends, written once).

A Job's pods are found by ``job-name=<job>``.  A RayJob is read as TauGrid reads it (taugrid.md
§8.5): the driver output is ``ray job logs <status.jobId>`` run in the head
(``ray.io/cluster=<status.rayClusterName>,ray.io/node-type=head``); once the head's ``ray-head``
container has ended, the head's log-offload sidecar; then the head's and workers' containers
(``ray.io/cluster=<cluster>``, head first)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import ClusterError, describe_api_error
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest, LogRequest
from tau_tui.core.cluster.logspool.sources import ClosableIterator, DriverUnavailable
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.logspool.timestamps import without_timestamps

#: The Ray head's container in TauGrid's RayJob (and in tau-tui's renderer).
RAY_HEAD_CONTAINER = "ray-head"
#: How a head's log-offload sidecar is told apart (TauGrid's ``raylogoffload``).
LOG_OFFLOAD_MARKERS = ("log-offload", "logoffload")
#: A RayJob's ``jobDeploymentStatus`` values after which it runs nothing more (KubeRay).
RAY_JOB_ENDED = frozenset({"Complete", "Failed", "ValidationFailed"})


class LogTargetsPending(ClusterError):
    """The run has no pods (or no RayCluster) yet: a followed run's stream waits for them."""


class PodPrimitives(Protocol):
    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]: ...

    def _api_list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None,
                  field_selector: str | None = None) -> list[dict[str, Any]]: ...

    def open_container_log(self, request: LogChunkRequest) -> ClosableIterator: ...

    def open_pod_exec(self, request: ExecRequest) -> ClosableIterator: ...


def open_run_logs(backend: Any, request: LogRequest, spool_dir: str | None) -> LogStream:
    """The stream ``open_logs`` returns: a followed Job or RayJob also gets its new pods and ends with
    the run; a RayJob's driver output comes first (and alone, without ``containers``)."""
    run = bool(request.job or request.ray_job)
    watch_run = request.follow and not request.previous and run
    driver = bool(request.ray_job) and request.driver and not request.previous
    targets: list[tuple[str, str]] = []
    if not request.ray_job or request.containers or not driver:
        try:
            targets = resolve_log_targets(backend, request)
        except LogTargetsPending:
            if not (watch_run or driver):
                raise
    return LogStream(backend, request, targets, spool_dir=spool_dir, driver=driver, watch_run=watch_run).start()


def resolve_log_targets(backend: PodPrimitives, request: LogRequest) -> list[tuple[str, str]]:
    ns = request.namespace
    pod_rt = ResourceKind.POD.type
    try:
        if request.pods:
            pods = [backend._api_get(pod_rt, p, ns) for p in request.pods]
            what = "pod " + ", ".join(request.pods)
        elif request.job:
            pods = backend._api_list(pod_rt, ns, label_selector=f"job-name={request.job}")
            what = f"job {request.job} (label job-name={request.job})"
        elif request.ray_job:
            rayjob = backend._api_get(ResourceKind.RAY_JOB.type, request.ray_job, ns)
            cluster = (rayjob.get("status") or {}).get("rayClusterName")
            if not cluster:
                raise LogTargetsPending(
                    f"RayJob {ns}/{request.ray_job} has no RayCluster yet (status.rayClusterName is empty); "
                    "it is probably still queued. Try again once it is admitted."
                )
            pods = backend._api_list(pod_rt, ns, label_selector=f"ray.io/cluster={cluster}")
            what = f"RayJob {request.ray_job} (label ray.io/cluster={cluster})"
        else:
            raise ClusterError("a log request needs pods, a job or a ray_job")
    except ApiFailure as exc:
        raise ClusterError(
            describe_api_error(exc.code, verb="get", resource="pods", namespace=ns, body=exc.body, reason=exc.reason),
            code=exc.code,
        ) from None
    if not pods:
        raise LogTargetsPending(f"no pods found for {what} in ns {ns}; it may not have started yet or was cleaned up")

    def order(pod: dict[str, Any]) -> tuple[Any, ...]:
        meta = pod.get("metadata") or {}
        head = (meta.get("labels") or {}).get("ray.io/node-type") == "head"
        return (0 if head else 1, meta.get("creationTimestamp") or "", meta.get("name", ""))

    targets: list[tuple[str, str]] = []
    for pod in sorted(pods, key=order):
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        app = [c.get("name", "") for c in spec.get("containers") or ()]
        init = [c.get("name", "") for c in spec.get("initContainers") or ()]
        if request.container:
            if request.container not in app + init:
                if request.pods:
                    raise ClusterError(
                        f"container {request.container} is not in pod {ns}/{meta.get('name')}; it has: {', '.join(init + app)}"
                    )
                continue
            names = [request.container]
        elif request.all_containers:
            names = init + app
        else:
            default = (meta.get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
            names = [default if isinstance(default, str) and default in app else app[0]] if app else []
        targets.extend((meta.get("name", ""), c) for c in names)
    if not targets:
        raise ClusterError(f"no container {request.container} in the pods of {what} in ns {ns}")
    return targets


def container_finished(backend: PodPrimitives, namespace: str, pod: str, container: str) -> bool:
    try:
        obj = backend._api_get(ResourceKind.POD.type, pod, namespace)
    except ApiFailure as exc:
        return exc.code == 404
    status = obj.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    restart = (obj.get("spec") or {}).get("restartPolicy", "Always")
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if cs.get("name") == container and "terminated" in (cs.get("state") or {}):
            return restart == "Never" or cs in (status.get("initContainerStatuses") or [])
    return False


def run_finished(backend: PodPrimitives, request: LogRequest) -> bool:
    """The Job has ``Complete`` or ``Failed``, the RayJob a final ``jobDeploymentStatus``, or it is gone."""
    kind, name = (ResourceKind.JOB, request.job) if request.job else (ResourceKind.RAY_JOB, request.ray_job)
    if not name:
        return True
    try:
        obj = backend._api_get(kind.type, name, request.namespace)
    except ApiFailure as exc:
        if exc.code == 404:
            return True
        raise
    status = obj.get("status") or {}
    if kind is ResourceKind.RAY_JOB:
        return status.get("jobDeploymentStatus") in RAY_JOB_ENDED
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in status.get("conditions") or ())


class _DriverRead:
    """One read of a driver's output, with the Ray job and the place it came from."""

    def __init__(self, stream: ClosableIterator, job_id: str, where: str, strip_timestamps: bool = False):
        self._stream = stream
        self.job_id = job_id
        self.where = where
        self._strip = strip_timestamps

    def __iter__(self) -> Iterator[bytes]:
        if not self._strip:
            yield from self._stream
            return
        yield from without_timestamps(self._stream)  # the sidecar's container log: the kubelet's timestamps off again

    def close(self) -> None:
        self._stream.close()


def open_driver_log(backend: PodPrimitives, request: LogRequest, follow: bool) -> _DriverRead:
    ns, name = request.namespace, request.ray_job or ""
    try:
        rayjob = backend._api_get(ResourceKind.RAY_JOB.type, name, ns)
    except ApiFailure as exc:
        raise DriverUnavailable(f"RayJob {ns}/{name} cannot be read: {exc.message}", retry=exc.code != 404) from None
    status = rayjob.get("status") or {}
    job_id, cluster = status.get("jobId") or "", status.get("rayClusterName") or ""
    if not job_id or not cluster:
        raise DriverUnavailable(f"RayJob {ns}/{name} has no Ray job yet (status.jobId is empty): queued or starting",
                                retry=True)
    try:
        heads = backend._api_list(ResourceKind.POD.type, ns, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head")
    except ApiFailure as exc:
        raise DriverUnavailable(f"the head of RayCluster {cluster} cannot be listed: {exc.message}", retry=True) from None
    if not heads:
        raise DriverUnavailable(f"RayCluster {cluster} has no head pod (yet, or any more)", retry=True)
    head = max(heads, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "")
    pod = (head.get("metadata") or {}).get("name", "")
    containers = [c.get("name", "") for c in (head.get("spec") or {}).get("containers") or ()]
    state = _container_state(head, RAY_HEAD_CONTAINER)
    if state == "running":
        command = ("ray", "job", "logs", job_id, *(("--follow",) if follow else ()))
        try:
            out = backend.open_pod_exec(ExecRequest(ns, pod, RAY_HEAD_CONTAINER, command))
        except ApiFailure as exc:
            raise DriverUnavailable(f"`ray job logs {job_id}` in {pod}: {exc.message}", retry=True) from None
        return _DriverRead(out, job_id, f"ray job logs {job_id} in {pod}")
    sidecar = next((c for c in containers if any(m in c for m in LOG_OFFLOAD_MARKERS)), None)
    if sidecar is None:
        raise DriverUnavailable(
            f"the head {pod}'s {RAY_HEAD_CONTAINER} container is {state or 'not there'} and the head has no "
            "log-offload sidecar: the driver output cannot be read here (the head's and workers' own logs can: "
            "all containers)", retry=state in ("waiting", "", None))
    try:
        log = backend.open_container_log(LogChunkRequest(ns, pod, sidecar, follow=follow))
    except ApiFailure as exc:
        raise DriverUnavailable(f"the log-offload sidecar {pod}/{sidecar}: {exc.message}", retry=True) from None
    return _DriverRead(log, job_id, f"log-offload sidecar {pod}/{sidecar}", strip_timestamps=True)


def _container_state(pod: Mapping[str, Any], container: str) -> str | None:
    """``running``, ``waiting`` or ``terminated`` (None: no status for it)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if cs.get("name") == container:
            return next(iter(cs.get("state") or {}), None)
    return None
