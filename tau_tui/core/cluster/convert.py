"""Build typed views from raw Kubernetes objects (dicts as served).

Both backends store raw, API-shaped dicts and convert them here, so the two
present exactly the same views."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from sys import intern
from typing import Any

from tau_tui.core.apifields import Condition, parse_conditions, parse_time
from tau_tui.core.cluster.built_from import BuiltFrom
from tau_tui.core.cluster.field_owners import reduced_managed_fields
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import GPU_NODE_CONDITIONS, TAU_LABEL_PREFIX, is_gpu_resource
from tau_tui.core.cluster.view_types import (
    AdmissionCheckState,
    AdmissionCheckView,
    ClusterQueueView,
    CohortView,
    ContainerStatusView,
    EventView,
    FlavorQuota,
    FlavorUsage,
    GpuHealthView,
    GpuResourceUsage,
    JobView,
    LocalQueueView,
    MultiKueueClusterView,
    MultiKueueConfigView,
    NamespaceView,
    NodeView,
    ObjectView,
    PodSetAssignment,
    PodSetView,
    PodView,
    RayJobView,
    ResourceFlavorView,
    ResourceQuantity,
    TauClusterView,
    TauWorkspaceView,
    WorkloadPriorityClassView,
    WorkloadStatusWord,
    WorkloadView,
)

PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"

_SUFFIX = {
    "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}


def parse_quantity(value: Any) -> float:
    """A Kubernetes quantity ("8", "500m", "16Gi", 2) as a float; 0 if unreadable."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return _parse_quantity_text(str(value))


@functools.lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> float:
    text = text.strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if text.endswith(suffix):
            return _num(text[:-2]) * _SUFFIX[suffix]
    if text and text[-1] in "numkMGTPE":
        return _num(text[:-1]) * _SUFFIX[text[-1]]
    return _num(text)



def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def format_time(value: datetime) -> str:
    """RFC 3339 with seconds precision, as the API server writes metadata times."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: Strings up to this long are shared between objects (names, reasons, timestamps, image names).
SHARED_STRING_MAX = 64


def share_strings(obj: dict[str, Any] | list[Any]) -> None:
    """Replace each short string value in ``obj`` (in place, nested) by the interpreter's one copy.

    A list from the API server decodes every value anew: 20,000 Workloads held 1.6 KB of string
    values each, of which 0.23 KB were distinct ("True", "Admitted", "kueue.x-k8s.io", a queue's
    name...).  About 20 µs an object, on the informer's thread."""
    entries: Iterable[tuple[Any, Any]] = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in entries:  # a value replaced under its own key or index: neither changes size
        if value.__class__ is str:
            if len(value) <= SHARED_STRING_MAX:
                obj[key] = intern(value)
        elif value.__class__ is dict or value.__class__ is list:
            share_strings(value)


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop managedFields, keeping only who owns the annotations the drain budget must trust."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        managed = meta["managedFields"]
        kept = reduced_managed_fields(managed, meta.get("annotations"))
        if kept == managed:  # cut down already (a cached object listed again): left as it is
            return obj
        if kept:
            meta["managedFields"] = kept
        else:
            del meta["managedFields"]
    return obj


_conditions: BuiltFrom[tuple[Condition, ...]] = BuiltFrom(parse_conditions)


def conditions_of(obj: Mapping[str, Any]) -> tuple[Condition, ...]:
    return _conditions((obj.get("status") or {}).get("conditions"))


def _shared_mapping(value: Any) -> Mapping[str, Any]:
    """The object's own mapping, not a copy (views and raw objects are never changed in place)."""
    return value if isinstance(value, dict) else dict(value or {})


def _base(kind: ResourceKind, obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return dict(
        kind=kind,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") if kind.type.namespaced else None,
        uid=meta.get("uid", ""),
        resource_version=str(meta.get("resourceVersion", "")),
        generation=meta.get("generation"),
        creation_timestamp=parse_time(meta.get("creationTimestamp")),
        labels=_shared_mapping(meta.get("labels")),
        annotations=_shared_mapping(meta.get("annotations")),
        owner_references=tuple(meta.get("ownerReferences") or ()),
        conditions=conditions_of(obj),
        raw=obj,
    )


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _resource_groups(spec: Mapping[str, Any]) -> tuple[tuple[tuple[str, ...], tuple[FlavorQuota, ...]], ...]:
    groups = []
    for group in spec.get("resourceGroups") or ():
        flavors = []
        for flavor in group.get("flavors") or ():
            resources = tuple(
                ResourceQuantity(
                    name=r.get("name", ""),
                    nominal_quota=parse_quantity(r.get("nominalQuota")),
                    borrowing_limit=None if r.get("borrowingLimit") is None else parse_quantity(r.get("borrowingLimit")),
                    lending_limit=None if r.get("lendingLimit") is None else parse_quantity(r.get("lendingLimit")),
                )
                for r in flavor.get("resources") or ()
            )
            flavors.append(FlavorQuota(flavor=flavor.get("name", ""), resources=resources))
        groups.append((tuple(group.get("coveredResources") or ()), tuple(flavors)))
    return tuple(groups)


def _flavor_usage(items: Iterable[Mapping[str, Any]] | None) -> tuple[FlavorUsage, ...]:
    out = []
    for f in items or ():
        res = {
            r.get("name", ""): (parse_quantity(r.get("total")), parse_quantity(r.get("borrowed")))
            for r in f.get("resources") or ()
        }
        out.append(FlavorUsage(flavor=f.get("name", ""), resources=res))
    return tuple(out)


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, float]:
    """Effective pod requests: sum of app containers, max with each init container
    (limits stand in for requests where only limits are set, as the scheduler does
    for extended resources)."""
    total: dict[str, float] = {}
    for c in pod_spec.get("containers") or ():
        for name, value in _container_requests(c).items():
            total[name] = total.get(name, 0.0) + value
    for c in pod_spec.get("initContainers") or ():
        for name, value in _container_requests(c).items():
            if value > total.get(name, 0.0):
                total[name] = value
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return {k: parse_quantity(v) for k, v in merged.items()}


def queue_order_timestamp(obj: Mapping[str, Any]) -> datetime | None:
    """Kueue's GetQueueOrderTimestamp: the Evicted condition time after an
    eviction by PodsReadyTimeout or AdmissionCheck, else creationTimestamp."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Evicted" and cond.get("status") == "True" and cond.get("reason") in (
            "PodsReadyTimeout",
            "AdmissionCheck",
        ):
            ts = parse_time(cond.get("lastTransitionTime"))
            if ts is not None:
                return ts
    return parse_time((obj.get("metadata") or {}).get("creationTimestamp"))


def workload_status_word(obj: Mapping[str, Any]) -> WorkloadStatusWord:
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or ()}
    if conds.get("Finished") == "True":
        return "finished"
    if conds.get("Admitted") == "True":
        return "admitted"
    if conds.get("QuotaReserved") == "True":
        return "quotaReserved"
    return "pending"


def _pod_set_views(pod_sets: Any) -> tuple[PodSetView, ...]:
    return tuple(
        PodSetView(
            name=ps.get("name", ""),
            count=_int_or_none(ps.get("count")) or 0,
            requests=pod_requests(((ps.get("template") or {}).get("spec")) or {}),
        )
        for ps in pod_sets or ()
    )


_pod_sets: BuiltFrom[tuple[PodSetView, ...]] = BuiltFrom(_pod_set_views)


def workload_view(obj: Mapping[str, Any]) -> WorkloadView:
    base = _base(ResourceKind.WORKLOAD, obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    admission = status.get("admission") or {}
    priority = _int_or_none(spec.get("priority")) or 0
    boost = _int_or_none(base["annotations"].get(PRIORITY_BOOST_ANNOTATION)) or 0
    pcr = spec.get("priorityClassRef") or {}
    pod_sets = _pod_sets(spec.get("podSets"))
    assignments = tuple(
        PodSetAssignment(
            name=a.get("name", ""),
            flavors=dict(a.get("flavors") or {}),
            resource_usage={k: parse_quantity(v) for k, v in (a.get("resourceUsage") or {}).items()},
            count=_int_or_none(a.get("count")),
        )
        for a in admission.get("podSetAssignments") or ()
    )
    checks = tuple(
        AdmissionCheckState(
            name=c.get("name", ""),
            state=c.get("state", "Pending"),
            message=c.get("message") or "",
            last_transition_time=parse_time(c.get("lastTransitionTime")),
        )
        for c in status.get("admissionChecks") or ()
    )
    owner = next((r for r in base["owner_references"] if r.get("controller")), None)
    return WorkloadView(
        **base,
        queue_name=spec.get("queueName"),
        priority=priority,
        priority_class=pcr.get("name"),
        active=spec.get("active", True) is not False,
        pod_sets=pod_sets,
        cluster_queue=admission.get("clusterQueue"),
        pod_set_assignments=assignments,
        admission_checks=checks,
        cluster_name=status.get("clusterName"),
        nominated_cluster_names=tuple(status.get("nominatedClusterNames") or ()),
        requeue_at=parse_time((status.get("requeueState") or {}).get("requeueAt")),
        status_word=workload_status_word(obj),
        effective_priority=priority + boost,
        queue_order_timestamp=queue_order_timestamp(obj),
        owner_kind=owner.get("kind") if owner else None,
        owner_name=owner.get("name") if owner else None,
    )


def cluster_queue_view(obj: Mapping[str, Any]) -> ClusterQueueView:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    checks = tuple(
        c.get("name", "") for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
    )
    return ClusterQueueView(
        **_base(ResourceKind.CLUSTER_QUEUE, obj),
        cohort=spec.get("cohortName"),
        queueing_strategy=spec.get("queueingStrategy") or "BestEffortFIFO",
        stop_policy=spec.get("stopPolicy") or "None",
        resource_groups=_resource_groups(spec),
        admission_checks=checks,
        flavors_usage=_flavor_usage(status.get("flavorsUsage")),
        flavors_reservation=_flavor_usage(status.get("flavorsReservation")),
        pending_workloads=_int_or_none(status.get("pendingWorkloads")),
        reserving_workloads=_int_or_none(status.get("reservingWorkloads")),
        admitted_workloads=_int_or_none(status.get("admittedWorkloads")),
    )


def local_queue_view(obj: Mapping[str, Any]) -> LocalQueueView:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return LocalQueueView(
        **_base(ResourceKind.LOCAL_QUEUE, obj),
        cluster_queue=spec.get("clusterQueue") or "",
        stop_policy=spec.get("stopPolicy") or "None",
        pending_workloads=_int_or_none(status.get("pendingWorkloads")),
        reserving_workloads=_int_or_none(status.get("reservingWorkloads")),
        admitted_workloads=_int_or_none(status.get("admittedWorkloads")),
        flavors_usage=_flavor_usage(status.get("flavorsUsage")),
    )


def resource_flavor_view(obj: Mapping[str, Any]) -> ResourceFlavorView:
    spec = obj.get("spec") or {}
    return ResourceFlavorView(
        **_base(ResourceKind.RESOURCE_FLAVOR, obj),
        node_labels=dict(spec.get("nodeLabels") or {}),
        node_taints=tuple(spec.get("nodeTaints") or ()),
        tolerations=tuple(spec.get("tolerations") or ()),
        topology_name=spec.get("topologyName"),
    )


def cohort_view(obj: Mapping[str, Any]) -> CohortView:
    spec = obj.get("spec") or {}
    return CohortView(
        **_base(ResourceKind.COHORT, obj),
        parent=spec.get("parentName"),
        resource_groups=_resource_groups(spec),
    )


def workload_priority_class_view(obj: Mapping[str, Any]) -> WorkloadPriorityClassView:
    return WorkloadPriorityClassView(
        **_base(ResourceKind.WORKLOAD_PRIORITY_CLASS, obj),
        value=_int_or_none(obj.get("value")) or 0,
        description=str(obj.get("description") or ""),
    )


def admission_check_view(obj: Mapping[str, Any]) -> AdmissionCheckView:
    spec = obj.get("spec") or {}
    params = spec.get("parameters")
    return AdmissionCheckView(
        **_base(ResourceKind.ADMISSION_CHECK, obj),
        controller_name=spec.get("controllerName") or "",
        parameters=dict(params) if isinstance(params, Mapping) else None,
    )


def multikueue_config_view(obj: Mapping[str, Any]) -> MultiKueueConfigView:
    return MultiKueueConfigView(
        **_base(ResourceKind.MULTIKUEUE_CONFIG, obj),
        clusters=tuple((obj.get("spec") or {}).get("clusters") or ()),
    )


def multikueue_cluster_view(obj: Mapping[str, Any]) -> MultiKueueClusterView:
    source = (obj.get("spec") or {}).get("clusterSource") or {}
    kubeconfig = source.get("kubeConfig") or {}
    return MultiKueueClusterView(
        **_base(ResourceKind.MULTIKUEUE_CLUSTER, obj),
        kubeconfig_location=kubeconfig.get("location"),
        kubeconfig_location_type=(kubeconfig.get("locationType") or "Secret") if kubeconfig else None,
        cluster_profile=(source.get("clusterProfileRef") or {}).get("name"),
    )


def _tau_managed(labels: Mapping[str, str]) -> bool:
    return any(k.startswith(TAU_LABEL_PREFIX) for k in labels)


def job_status_word(obj: Mapping[str, Any]) -> str:
    """``tau run list``: first true of Complete/Failed/Suspended, else Running
    if active > 0, else Pending."""
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or ()}
    for word in ("Complete", "Failed", "Suspended"):
        if conds.get(word) == "True":
            return word
    if (obj.get("spec") or {}).get("suspend"):
        return "Suspended"
    return "Running" if ((obj.get("status") or {}).get("active") or 0) > 0 else "Pending"


def job_view(obj: Mapping[str, Any]) -> JobView:
    base = _base(ResourceKind.JOB, obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return JobView(
        **base,
        tau_managed=_tau_managed(base["labels"]),
        suspended=bool(spec.get("suspend")),
        active=int(status.get("active") or 0),
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        parallelism=_int_or_none(spec.get("parallelism")),
        completions=_int_or_none(spec.get("completions")),
        managed_by=spec.get("managedBy"),
        start_time=parse_time(status.get("startTime")),
        completion_time=parse_time(status.get("completionTime")),
        owned_by_rayjob=any(r.get("kind") == "RayJob" for r in base["owner_references"]),
        status_word=job_status_word(obj),
    )


def ray_job_view(obj: Mapping[str, Any]) -> RayJobView:
    base = _base(ResourceKind.RAY_JOB, obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    word = status.get("jobDeploymentStatus") or status.get("jobStatus") or "Pending"
    return RayJobView(
        **base,
        tau_managed=_tau_managed(base["labels"]),
        suspended=bool(spec.get("suspend")),
        job_id=status.get("jobId"),
        ray_cluster_name=status.get("rayClusterName"),
        job_status=status.get("jobStatus"),
        job_deployment_status=status.get("jobDeploymentStatus"),
        managed_by=spec.get("managedBy"),
        status_word=word,
    )


def _container_statuses(status: Mapping[str, Any]) -> tuple[ContainerStatusView, ...]:
    out = []
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for cs in status.get(key) or ():
            state_obj = cs.get("state") or {}
            state = next(iter(state_obj), "unknown")
            reason = (state_obj.get(state) or {}).get("reason") or "" if state != "unknown" else ""
            out.append(
                ContainerStatusView(
                    name=cs.get("name", ""),
                    ready=bool(cs.get("ready")),
                    restart_count=int(cs.get("restartCount") or 0),
                    state=state,
                    reason=reason,
                    init=init,
                )
            )
    return tuple(out)


def pod_view(obj: Mapping[str, Any]) -> PodView:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return PodView(
        **_base(ResourceKind.POD, obj),
        phase=status.get("phase") or "Unknown",
        node_name=spec.get("nodeName"),
        containers=tuple(c.get("name", "") for c in spec.get("containers") or ()),
        init_containers=tuple(c.get("name", "") for c in spec.get("initContainers") or ()),
        container_statuses=_container_statuses(status),
        requests=pod_requests(spec),
        start_time=parse_time(status.get("startTime")),
        deletion_timestamp=parse_time((obj.get("metadata") or {}).get("deletionTimestamp")),
    )


def event_view(obj: Mapping[str, Any]) -> EventView:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or (obj.get("metadata") or {}).get("creationTimestamp")
    return EventView(
        **_base(ResourceKind.EVENT, obj),
        type=obj.get("type") or "Normal",
        reason=obj.get("reason") or "",
        message=obj.get("message") or obj.get("note") or "",
        involved_kind=involved.get("kind") or "",
        involved_name=involved.get("name") or "",
        involved_namespace=involved.get("namespace"),
        count=int(obj.get("count") or 1),
        last_timestamp=parse_time(last),
    )


def gpu_health_view(obj: Mapping[str, Any]) -> GpuHealthView:
    base = _base(ResourceKind.GPU_HEALTH, obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    node = spec.get("nodeName") or status.get("nodeName") or base["labels"].get("kubernetes.io/hostname") or base["name"]
    observed = status.get("lastUpdateTime") or status.get("observedAt") or status.get("lastProbeTime")
    return GpuHealthView(**base, node_name=node, status=dict(status), observed_at=parse_time(observed))


def node_view(
    obj: Mapping[str, Any],
    allocated: Mapping[str, float] | None,
    health: GpuHealthView | None,
) -> NodeView:
    """``allocated``: GPU requests of non-terminal pods bound to the node, or
    None when those pods could not be read (allocation then shows unknown)."""
    base = _base(ResourceKind.NODE, obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    names = {n for n in (*capacity, *allocatable) if is_gpu_resource(n)}
    if allocated:
        names.update(n for n in allocated if is_gpu_resource(n))
    gpu = {
        n: GpuResourceUsage(
            resource=n,
            capacity=parse_quantity(capacity.get(n)),
            allocatable=parse_quantity(allocatable.get(n)),
            allocated=None if allocated is None else float(allocated.get(n, 0.0)),
        )
        for n in sorted(names)
    }
    ready_cond = next((c for c in base["conditions"] if c.type == "Ready"), None)
    return NodeView(
        **base,
        unschedulable=bool(spec.get("unschedulable")),
        taints=tuple(spec.get("taints") or ()),
        ready=None if ready_cond is None else ready_cond.is_true,
        gpu=gpu,
        gpu_conditions=tuple(c for c in base["conditions"] if c.type in GPU_NODE_CONDITIONS),
        gpu_health=health,
    )


def tau_cluster_view(obj: Mapping[str, Any]) -> TauClusterView:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return TauClusterView(
        **_base(ResourceKind.TAU_CLUSTER, obj),
        phase=status.get("phase"),
        management_mode=spec.get("managementMode"),
        workload_profiles_status=status.get("workloadProfiles"),
        spec=dict(spec),
    )


def tau_workspace_view(obj: Mapping[str, Any]) -> TauWorkspaceView:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    queue = status.get("queue") or {}
    return TauWorkspaceView(
        **_base(ResourceKind.TAU_WORKSPACE, obj),
        phase=status.get("phase"),
        target_namespace=(status.get("target") or {}).get("resolvedNamespace")
        or (spec.get("target") or {}).get("namespace"),
        local_queue=queue.get("localQueue"),
        cluster_queue=queue.get("clusterQueue"),
        spec=dict(spec),
    )


def namespace_view(obj: Mapping[str, Any]) -> NamespaceView:
    return NamespaceView(
        **_base(ResourceKind.NAMESPACE, obj),
        phase=(obj.get("status") or {}).get("phase") or "Active",
    )


#: Converters for every kind except NODE (which needs pods and health too).
SIMPLE_VIEW_BUILDERS: dict[ResourceKind, Callable[[Mapping[str, Any]], ObjectView]] = {
    ResourceKind.NAMESPACE: namespace_view,
    ResourceKind.WORKLOAD: workload_view,
    ResourceKind.CLUSTER_QUEUE: cluster_queue_view,
    ResourceKind.LOCAL_QUEUE: local_queue_view,
    ResourceKind.RESOURCE_FLAVOR: resource_flavor_view,
    ResourceKind.COHORT: cohort_view,
    ResourceKind.WORKLOAD_PRIORITY_CLASS: workload_priority_class_view,
    ResourceKind.ADMISSION_CHECK: admission_check_view,
    ResourceKind.MULTIKUEUE_CONFIG: multikueue_config_view,
    ResourceKind.MULTIKUEUE_CLUSTER: multikueue_cluster_view,
    ResourceKind.JOB: job_view,
    ResourceKind.RAY_JOB: ray_job_view,
    ResourceKind.POD: pod_view,
    ResourceKind.EVENT: event_view,
    ResourceKind.GPU_HEALTH: gpu_health_view,
    ResourceKind.TAU_CLUSTER: tau_cluster_view,
    ResourceKind.TAU_WORKSPACE: tau_workspace_view,
}
