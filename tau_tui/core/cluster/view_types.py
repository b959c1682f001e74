"""Views: immutable snapshots (frozen dataclasses) of the objects panes show.

``raw`` holds the object as served for YAML/detail panes, ``metadata.managedFields`` stripped
(kept only as who owns the cordon-timestamp annotation; see :mod:`~tau_tui.core.cluster.field_owners`);
the typed fields are what panes should use.  Anything unreadable is ``None`` and must be shown as
unknown, never as healthy (fail closed).  :mod:`tau_tui.core.cluster.convert` builds them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tau_tui.core.apifields import Condition
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME


@dataclass(frozen=True, slots=True)
class ObjectView:
    """Fields every view shares.  ``key`` is ``(namespace or "", name)``."""

    kind: ResourceKind
    name: str
    namespace: str | None
    uid: str
    resource_version: str
    generation: int | None
    creation_timestamp: datetime | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_references: tuple[Mapping[str, Any], ...]
    conditions: tuple[Condition, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace or "", self.name)

    def condition(self, type_: str) -> Condition | None:
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None

    @property
    def controller_owner(self) -> Mapping[str, Any] | None:
        for ref in self.owner_references:
            if ref.get("controller"):
                return ref
        return None


@dataclass(frozen=True, slots=True)
class ResourceQuantity:
    """One ``{name, nominalQuota, borrowingLimit, lendingLimit}`` of a flavor."""

    name: str
    nominal_quota: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    flavor: str
    resources: tuple[ResourceQuantity, ...]


@dataclass(frozen=True, slots=True)
class FlavorUsage:
    """``status.flavorsUsage[]`` / ``flavorsReservation[]``: ``{res: (total, borrowed)}``."""

    flavor: str
    resources: Mapping[str, tuple[float, float]]


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, float]
    count: int | None


@dataclass(frozen=True, slots=True)
class AdmissionCheckState:
    name: str
    state: str  # Pending | Ready | Retry | Rejected
    message: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class PodSetView:
    name: str
    count: int
    requests: Mapping[str, float]  # per pod, summed over containers


WorkloadStatusWord = Literal["pending", "quotaReserved", "admitted", "finished"]


@dataclass(frozen=True, slots=True)
class WorkloadView(ObjectView):
    queue_name: str | None = None
    priority: int = 0
    priority_class: str | None = None
    active: bool = True
    pod_sets: tuple[PodSetView, ...] = ()
    cluster_queue: str | None = None  # status.admission.clusterQueue
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()
    admission_checks: tuple[AdmissionCheckState, ...] = ()
    cluster_name: str | None = None  # MultiKueue status.clusterName
    nominated_cluster_names: tuple[str, ...] = ()
    requeue_at: datetime | None = None
    #: kueuectl's word: pending, quotaReserved, admitted or finished.
    status_word: WorkloadStatusWord = "pending"
    #: Effective priority: spec.priority + kueue.x-k8s.io/priority-boost.
    effective_priority: int = 0
    #: Kueue's queue-order timestamp (creation, or Evicted time for requeues).
    queue_order_timestamp: datetime | None = None
    owner_kind: str | None = None
    owner_name: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueueView(ObjectView):
    cohort: str | None = None
    queueing_strategy: str = "BestEffortFIFO"
    stop_policy: str = "None"
    resource_groups: tuple[tuple[tuple[str, ...], tuple[FlavorQuota, ...]], ...] = ()
    admission_checks: tuple[str, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None

    @property
    def active(self) -> bool | None:
        cond = self.condition("Active")
        return None if cond is None else cond.is_true


@dataclass(frozen=True, slots=True)
class LocalQueueView(ObjectView):
    cluster_queue: str = ""
    stop_policy: str = "None"
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_usage: tuple[FlavorUsage, ...] = ()

    @property
    def active(self) -> bool | None:
        cond = self.condition("Active")
        return None if cond is None else cond.is_true


@dataclass(frozen=True, slots=True)
class ResourceFlavorView(ObjectView):
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Mapping[str, Any], ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True, slots=True)
class CohortView(ObjectView):
    parent: str | None = None
    resource_groups: tuple[tuple[tuple[str, ...], tuple[FlavorQuota, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClassView(ObjectView):
    value: int = 0
    description: str = ""


@dataclass(frozen=True, slots=True)
class AdmissionCheckView(ObjectView):
    controller_name: str = ""
    parameters: Mapping[str, str] | None = None

    @property
    def is_multikueue(self) -> bool:
        return self.controller_name == MULTIKUEUE_CONTROLLER_NAME


@dataclass(frozen=True, slots=True)
class MultiKueueConfigView(ObjectView):
    clusters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MultiKueueClusterView(ObjectView):
    #: ``spec.clusterSource.kubeConfig`` location and type (Secret | Path).
    kubeconfig_location: str | None = None
    kubeconfig_location_type: str | None = None
    cluster_profile: str | None = None

    @property
    def connected(self) -> bool | None:
        cond = self.condition("Active")
        return None if cond is None else cond.is_true


@dataclass(frozen=True, slots=True)
class JobView(ObjectView):
    """A batch/v1 Job.  ``tau_managed``: any label under ``tau.azure.com/``."""

    tau_managed: bool = False
    suspended: bool = False
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    parallelism: int | None = None
    completions: int | None = None
    managed_by: str | None = None
    start_time: datetime | None = None
    completion_time: datetime | None = None
    #: True for KubeRay submitter Jobs (owned by a RayJob).
    owned_by_rayjob: bool = False
    #: Complete / Failed / Suspended / Running / Pending (tau run list rule).
    status_word: str = "Pending"


@dataclass(frozen=True, slots=True)
class RayJobView(ObjectView):
    tau_managed: bool = False
    suspended: bool = False
    job_id: str | None = None
    ray_cluster_name: str | None = None
    job_status: str | None = None
    job_deployment_status: str | None = None
    managed_by: str | None = None
    status_word: str = "Pending"


@dataclass(frozen=True, slots=True)
class ContainerStatusView:
    name: str
    ready: bool
    restart_count: int
    state: str  # waiting | running | terminated | unknown
    reason: str = ""
    init: bool = False


@dataclass(frozen=True, slots=True)
class PodView(ObjectView):
    phase: str = "Unknown"
    node_name: str | None = None
    containers: tuple[str, ...] = ()
    init_containers: tuple[str, ...] = ()
    container_statuses: tuple[ContainerStatusView, ...] = ()
    #: Requests summed over app containers (max with init containers).
    requests: Mapping[str, float] = field(default_factory=dict)
    start_time: datetime | None = None
    deletion_timestamp: datetime | None = None

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class EventView(ObjectView):
    type: str = "Normal"
    reason: str = ""
    message: str = ""
    involved_kind: str = ""
    involved_name: str = ""
    involved_namespace: str | None = None
    count: int = 1
    last_timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class GpuResourceUsage:
    """One GPU resource on one node.  ``allocated`` is ``None`` when the pods
    bound to the node could not be read (shown as unknown, not as free)."""

    resource: str
    capacity: float
    allocatable: float
    allocated: float | None


@dataclass(frozen=True, slots=True)
class NodeView(ObjectView):
    unschedulable: bool = False
    taints: tuple[Mapping[str, Any], ...] = ()
    ready: bool | None = None
    gpu: Mapping[str, GpuResourceUsage] = field(default_factory=dict)
    #: GPUUnhealthy / GPUDegraded conditions set by the agent (absent = not reported).
    gpu_conditions: tuple[Condition, ...] = ()
    #: The agent's per-node GPU health object, if one exists for this node.
    gpu_health: GpuHealthView | None = None

    @property
    def gpu_capacity(self) -> float:
        return sum(u.capacity for u in self.gpu.values())


@dataclass(frozen=True, slots=True)
class GpuHealthView(ObjectView):
    """The node agent's per-node GPU health resource, read generically:
    ``node_name`` from ``spec.nodeName`` (or the object name), everything
    else from ``status`` as served."""

    node_name: str = ""
    status: Mapping[str, Any] = field(default_factory=dict)
    observed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TauClusterView(ObjectView):
    phase: str | None = None
    management_mode: str | None = None
    workload_profiles_status: Mapping[str, Any] | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TauWorkspaceView(ObjectView):
    phase: str | None = None
    target_namespace: str | None = None
    local_queue: str | None = None
    cluster_queue: str | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NamespaceView(ObjectView):
    phase: str = "Active"


#: Which view class each kind produces.
VIEW_TYPES: Mapping[ResourceKind, type] = {
    ResourceKind.NAMESPACE: NamespaceView,
    ResourceKind.WORKLOAD: WorkloadView,
    ResourceKind.CLUSTER_QUEUE: ClusterQueueView,
    ResourceKind.LOCAL_QUEUE: LocalQueueView,
    ResourceKind.RESOURCE_FLAVOR: ResourceFlavorView,
    ResourceKind.COHORT: CohortView,
    ResourceKind.WORKLOAD_PRIORITY_CLASS: WorkloadPriorityClassView,
    ResourceKind.ADMISSION_CHECK: AdmissionCheckView,
    ResourceKind.MULTIKUEUE_CONFIG: MultiKueueConfigView,
    ResourceKind.MULTIKUEUE_CLUSTER: MultiKueueClusterView,
    ResourceKind.JOB: JobView,
    ResourceKind.RAY_JOB: RayJobView,
    ResourceKind.POD: PodView,
    ResourceKind.EVENT: EventView,
    ResourceKind.NODE: NodeView,
    ResourceKind.GPU_HEALTH: GpuHealthView,
    ResourceKind.TAU_CLUSTER: TauClusterView,
    ResourceKind.TAU_WORKSPACE: TauWorkspaceView,
}
