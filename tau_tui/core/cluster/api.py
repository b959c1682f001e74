"""The cluster access contract: one interface, two implementations.

Every pane reads live cluster state through :class:`ClusterBackend`.  Two
implementations exist and are held to the same contract test suite
(``tests/contract/``):

* ``tau_tui.core.cluster.real.KubernetesBackend``: the official kubernetes
  client, list+watch per resource into a local cache (core threads only);
* ``tau_tui.core.cluster.sim.SimulatedBackend``: an in-process, seeded,
  clock-injectable simulated cluster driven by ``tau_tui/scenarios/*.yaml``
  (``tau-tui --demo`` and deterministic UI tests).

Tick model (how the UI consumes this):
    The backend keeps a cache per :class:`ResourceKind`.  Every applied change
    bumps that kind's :meth:`ClusterBackend.generation`.  A UI timer (for
    example every 250 ms) compares generations and, when one moved, re-reads a
    snapshot with :meth:`ClusterBackend.list`.  Callers that prefer push can
    :meth:`ClusterBackend.subscribe`; callbacks run on a core thread with a
    coalesced :class:`ChangeBatch` and must hand work to the UI thread
    themselves (Textual: ``app.call_from_thread``).  Nothing here imports
    Textual.

Views are immutable snapshots (frozen dataclasses).  ``raw`` holds the object
as served (``metadata.managedFields`` stripped) for YAML/detail panes; the
typed fields are what panes should use.  Anything unreadable is ``None`` and
must be shown as unknown, never as healthy (fail closed).

Kueue objects are read and written as ``kueue.x-k8s.io/v1beta2``.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Sequence

if TYPE_CHECKING:  # the spool module imports this one
    from tau_tui.core.logspool import LogStream

# --------------------------------------------------------------------------
# Resource kinds
# --------------------------------------------------------------------------

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
TAU_GROUP = "tau.azure.com"
TAU_VERSION = "v1alpha1"
RAY_GROUP = "ray.io"
RAY_VERSION = "v1"
MULTIKUEUE_CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
SUBMISSION_ID_LABEL = "tau.azure.com/submission-id"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
TAU_LABEL_PREFIX = "tau.azure.com/"

#: GPU extended-resource names every node view reports.  MIG resources are
#: matched by prefix (``nvidia.com/mig-1g.10gb`` ...).
GPU_RESOURCE_NAMES = ("nvidia.com/gpu", "nvidia.com/gpu.shared")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
#: Node condition types the GPU node agent sets.
GPU_NODE_CONDITIONS = ("GPUUnhealthy", "GPUDegraded")


try:  # the agent's model owns the GPU health resource's names
    from tau_tui.core.gpu_health import API_GROUP as _HEALTH_GROUP
    from tau_tui.core.gpu_health import API_VERSION as _HEALTH_VERSION
    from tau_tui.core.gpu_health import HEALTH_KIND as _HEALTH_KIND
    from tau_tui.core.gpu_health import HEALTH_PLURAL as _HEALTH_PLURAL
except ImportError:  # keep the view generic if that module is unavailable
    _HEALTH_GROUP, _HEALTH_VERSION, _HEALTH_KIND, _HEALTH_PLURAL = "tau-tui.io", "v1alpha1", "GPUNodeHealth", "gpunodehealths"


def is_gpu_resource(name: str) -> bool:
    """True for ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` and MIG names."""
    return name in GPU_RESOURCE_NAMES or name.startswith(MIG_RESOURCE_PREFIX)


@dataclass(frozen=True, slots=True)
class ResourceType:
    """API coordinates of one watched resource."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``workloads.kueue.x-k8s.io`` / ``pods`` (the kubectl spelling)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class ResourceKind(enum.Enum):
    """Every kind the cache holds.  ``value`` is the :class:`ResourceType`."""

    NAMESPACE = ResourceType("", "v1", "namespaces", "Namespace", False)
    WORKLOAD = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "workloads", "Workload", True)
    CLUSTER_QUEUE = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", "ClusterQueue", False)
    LOCAL_QUEUE = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "localqueues", "LocalQueue", True)
    RESOURCE_FLAVOR = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", "ResourceFlavor", False)
    COHORT = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "cohorts", "Cohort", False)
    WORKLOAD_PRIORITY_CLASS = ResourceType(
        KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", "WorkloadPriorityClass", False
    )
    ADMISSION_CHECK = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", "AdmissionCheck", False)
    MULTIKUEUE_CONFIG = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "multikueueconfigs", "MultiKueueConfig", False)
    MULTIKUEUE_CLUSTER = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", "MultiKueueCluster", False)
    JOB = ResourceType("batch", "v1", "jobs", "Job", True)
    RAY_JOB = ResourceType(RAY_GROUP, RAY_VERSION, "rayjobs", "RayJob", True)
    POD = ResourceType("", "v1", "pods", "Pod", True)
    EVENT = ResourceType("", "v1", "events", "Event", True)
    NODE = ResourceType("", "v1", "nodes", "Node", False)
    #: The per-node GPU health custom resource written by the node agent
    #: (coordinates from :mod:`tau_tui.core.gpu_health`, one object per node).
    GPU_HEALTH = ResourceType(_HEALTH_GROUP, _HEALTH_VERSION, _HEALTH_PLURAL, _HEALTH_KIND, False)
    TAU_CLUSTER = ResourceType(TAU_GROUP, TAU_VERSION, "clusters", "TauCluster", False)
    TAU_WORKSPACE = ResourceType(TAU_GROUP, TAU_VERSION, "workspaces", "TauWorkspace", True)

    @property
    def type(self) -> ResourceType:
        return self.value

    @classmethod
    def for_kind(cls, api_version: str, kind: str) -> "ResourceKind | None":
        """The kind for a manifest's ``apiVersion``/``kind`` (any version of the group)."""
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        for member in cls:
            if member.value.kind == kind and member.value.group == group:
                return member
        return None


GPU_HEALTH_TYPE = ResourceKind.GPU_HEALTH.value

#: Kinds whose objects :meth:`ClusterBackend.create_multikueue_object` and
#: :meth:`ClusterBackend.delete_multikueue_object` accept.
MULTIKUEUE_KINDS = (
    ResourceKind.MULTIKUEUE_CLUSTER,
    ResourceKind.MULTIKUEUE_CONFIG,
    ResourceKind.ADMISSION_CHECK,
)

# --------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Condition:
    """A standard ``metav1.Condition`` (or Node/Job condition)."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None
    observed_generation: int | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


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
    gpu_health: "GpuHealthView | None" = None

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

# --------------------------------------------------------------------------
# Change notifications and state
# --------------------------------------------------------------------------


class ChangeType(str, enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One applied change.  For DELETED, ``obj`` is the last known state."""

    kind: ResourceKind
    type: ChangeType
    obj: ObjectView

    @property
    def key(self) -> tuple[str, str]:
        return self.obj.key


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """Changes coalesced over a short window.  Several changes to one object
    within the window collapse to the last one (ADDED+DELETED collapses to
    nothing).  ``relisted`` names kinds whose cache was rebuilt from a fresh
    list (after a 410 or a reconnect): consumers should re-read them whole."""

    events: tuple[ChangeEvent, ...]
    relisted: frozenset[ResourceKind] = frozenset()

    @property
    def kinds(self) -> frozenset[ResourceKind]:
        return frozenset(e.kind for e in self.events) | self.relisted


class ConnectionStatus(str, enum.Enum):
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    STALE = "stale"


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """Whole-backend connection state for the status bar.

    ``stale_since`` is the moment data stopped being current (first failed
    watch); panes should read "stale since T" when ``status`` is not
    CONNECTED.  ``message`` is plain text, never markup."""

    status: ConnectionStatus
    context: str | None
    stale_since: datetime | None = None
    message: str = ""

    @property
    def label(self) -> str:
        if self.status is ConnectionStatus.CONNECTED:
            return "connected"
        since = self.stale_since.strftime("%H:%M:%S") if self.stale_since else "?"
        if self.status is ConnectionStatus.RECONNECTING:
            return f"reconnecting (stale since {since})"
        return f"stale since {since}"


class ViewStatus(str, enum.Enum):
    SYNCING = "syncing"  # first list not finished
    READY = "ready"
    FORBIDDEN = "forbidden"  # RBAC denied; view is empty, others keep working
    NOT_INSTALLED = "not-installed"  # CRD / API group absent
    ERROR = "error"  # transient failure, retrying; data (if any) is stale


@dataclass(frozen=True, slots=True)
class ViewState:
    """Per-kind health of the cache.  ``message`` examples:
    ``"no access: list workloads.kueue.x-k8s.io in ns team-a"``,
    ``"not installed: rayjobs.ray.io"``."""

    kind: ResourceKind
    status: ViewStatus
    message: str = ""
    synced_at: datetime | None = None

    @property
    def usable(self) -> bool:
        return self.status is ViewStatus.READY


# --------------------------------------------------------------------------
# Queue positions
# --------------------------------------------------------------------------


class PositionSource(str, enum.Enum):
    VISIBILITY_API = "visibility-api"
    #: Computed from Kueue's documented order (priority, queue-order time,
    #: UID).  Must be displayed as estimated.
    ESTIMATED = "estimated"


@dataclass(frozen=True, slots=True)
class PendingPosition:
    """A pending workload's place in line, counted from 0 like Kueue."""

    namespace: str
    name: str
    uid: str
    local_queue: str | None
    cluster_queue: str | None
    priority: int
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    creation_timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class PositionReport:
    """Positions for one queue.  ``estimated`` is True unless every entry came
    from the visibility API.  ``message`` says why it is estimated (API
    absent, forbidden, ...), plain text."""

    queue_kind: Literal["ClusterQueue", "LocalQueue"]
    queue: str
    namespace: str | None
    entries: tuple[PendingPosition, ...]
    source: PositionSource
    message: str = ""
    at: datetime | None = None

    @property
    def estimated(self) -> bool:
        return self.source is not PositionSource.VISIBILITY_API

    def position_of(self, namespace: str, name: str) -> PendingPosition | None:
        for entry in self.entries:
            if entry.namespace == namespace and entry.name == name:
                return entry
        return None


@dataclass(frozen=True, slots=True)
class PositionSample:
    at: datetime
    position_in_local_queue: int | None
    position_in_cluster_queue: int | None
    source: PositionSource


@dataclass(frozen=True, slots=True)
class PositionHistory:
    """Short history of one workload's place in line."""

    namespace: str
    name: str
    samples: tuple[PositionSample, ...]
    pending_since: datetime | None  # queue-order timestamp

    def time_in_queue(self, now: datetime) -> float | None:
        if self.pending_since is None:
            return None
        return max(0.0, (now - self.pending_since).total_seconds())

    @property
    def change(self) -> int | None:
        """Change in local-queue position from the oldest kept sample to the
        newest (negative = moved forward)."""
        positions = [s.position_in_local_queue for s in self.samples if s.position_in_local_queue is not None]
        if len(positions) < 2:
            return None
        return positions[-1] - positions[0]


# --------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogRequest:
    """What to stream.  Give exactly one of ``pods``, ``job`` or ``ray_job``.

    * ``job``: pods with label ``job-name=<job>``;
    * ``ray_job``: head and workers of ``status.rayClusterName`` via
      ``ray.io/cluster`` (head first, ``ray.io/node-type``);
    * several pods/containers are merged by timestamp, each line prefixed
      ``[pod/container]``.

    ``tail_lines=None`` means all lines; ``since_seconds`` limits age."""

    namespace: str
    pods: tuple[str, ...] = ()
    job: str | None = None
    ray_job: str | None = None
    container: str | None = None
    all_containers: bool = False
    previous: bool = False
    follow: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    tail_lines: int | None = None


@dataclass(frozen=True, slots=True)
class LogChunkRequest:
    """One container stream as the backend's raw log source sees it
    (always requested with server timestamps, for merge and resume)."""

    namespace: str
    pod: str
    container: str
    previous: bool = False
    follow: bool = False
    since_time: datetime | None = None
    since_seconds: int | None = None
    tail_lines: int | None = None


# --------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------

StopPolicy = Literal["None", "Hold", "HoldAndDrain"]


@dataclass(frozen=True, slots=True)
class MutationResult:
    """Outcome of one object mutation.  ``message`` is the plain, user-facing
    text (from :func:`tau_tui.core.cluster.errors.describe_api_error` on
    failure).  ``existing`` is True when an idempotent submit found the object
    already there (same submission id)."""

    ok: bool
    verb: str
    kind: str
    name: str
    namespace: str | None
    message: str = ""
    dry_run: bool = False
    existing: bool = False
    code: int | None = None
    object: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class DrainResult:
    node: str
    cordoned: bool
    evicted: tuple[str, ...]  # "ns/name"
    skipped: tuple[str, ...]  # DaemonSet / mirror / finished pods
    failed: tuple[MutationResult, ...]  # e.g. blocked by a PodDisruptionBudget (429)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.cordoned and not self.failed


class ClusterError(Exception):
    """A failure already turned into a plain message (no traceback for users)."""

    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code


# --------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------

ChangeCallback = Callable[[ChangeBatch], None]
StateCallback = Callable[[ConnectionState], None]


class Subscription(abc.ABC):
    @abc.abstractmethod
    def close(self) -> None:
        """Stop delivering callbacks (idempotent)."""


class ClusterBackend(abc.ABC):
    """Live cluster state, queue positions, logs and mutations.

    Thread-safety: every method may be called from any thread; reads are
    lock-protected snapshots and never block on the network.  Network work
    happens on the backend's own core threads (or, for mutations, on the
    caller's thread: run them in a worker)."""

    # -- lifecycle ---------------------------------------------------------

    @abc.abstractmethod
    def start(self) -> None:
        """Begin syncing caches (returns at once)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop threads and watches; release log streams."""

    @abc.abstractmethod
    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        """Block until every (given) view left SYNCING; True if it did in time."""

    # -- contexts and namespaces ------------------------------------------

    @abc.abstractmethod
    def contexts(self) -> list[str]:
        """Context names from the kubeconfig (simulated: the scenario's)."""

    @property
    @abc.abstractmethod
    def current_context(self) -> str | None: ...

    @abc.abstractmethod
    def use_context(self, name: str) -> None:
        """Switch context without restart: caches are dropped and rebuilt."""

    @property
    @abc.abstractmethod
    def namespace(self) -> str | None:
        """Namespace scope of namespaced views; ``None`` = all namespaces."""

    @abc.abstractmethod
    def use_namespace(self, namespace: str | None) -> None:
        """Change the namespace scope (``None`` = all); namespaced caches resync."""

    @abc.abstractmethod
    def namespaces(self) -> list[str]:
        """Known namespace names (from the cache; the kubeconfig namespace if
        listing namespaces is forbidden)."""

    # -- cache reads -------------------------------------------------------

    @abc.abstractmethod
    def list(self, kind: ResourceKind, namespace: str | None = None) -> list[ObjectView]:
        """Snapshot of one kind, sorted by (namespace, name).  ``namespace``
        filters within the current scope."""

    @abc.abstractmethod
    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> ObjectView | None:
        """One object from the cache, or None."""

    @abc.abstractmethod
    def generation(self, kind: ResourceKind) -> int:
        """Counter bumped on every applied change of ``kind`` (tick model)."""

    @abc.abstractmethod
    def view_state(self, kind: ResourceKind) -> ViewState: ...

    @abc.abstractmethod
    def connection_state(self) -> ConnectionState: ...

    @abc.abstractmethod
    def subscribe(
        self,
        callback: ChangeCallback,
        kinds: Iterable[ResourceKind] | None = None,
        on_state: StateCallback | None = None,
    ) -> Subscription:
        """Push change batches (coalesced) and connection-state changes.
        Callbacks run on a core thread and must be quick."""

    # Typed conveniences (all derive from :meth:`list`).
    def workloads(self, namespace: str | None = None) -> list[WorkloadView]:
        return self.list(ResourceKind.WORKLOAD, namespace)  # type: ignore[return-value]

    def cluster_queues(self) -> list[ClusterQueueView]:
        return self.list(ResourceKind.CLUSTER_QUEUE)  # type: ignore[return-value]

    def local_queues(self, namespace: str | None = None) -> list[LocalQueueView]:
        return self.list(ResourceKind.LOCAL_QUEUE, namespace)  # type: ignore[return-value]

    def resource_flavors(self) -> list[ResourceFlavorView]:
        return self.list(ResourceKind.RESOURCE_FLAVOR)  # type: ignore[return-value]

    def cohorts(self) -> list[CohortView]:
        return self.list(ResourceKind.COHORT)  # type: ignore[return-value]

    def workload_priority_classes(self) -> list[WorkloadPriorityClassView]:
        return self.list(ResourceKind.WORKLOAD_PRIORITY_CLASS)  # type: ignore[return-value]

    def admission_checks(self) -> list[AdmissionCheckView]:
        return self.list(ResourceKind.ADMISSION_CHECK)  # type: ignore[return-value]

    def multikueue_configs(self) -> list[MultiKueueConfigView]:
        return self.list(ResourceKind.MULTIKUEUE_CONFIG)  # type: ignore[return-value]

    def multikueue_clusters(self) -> list[MultiKueueClusterView]:
        return self.list(ResourceKind.MULTIKUEUE_CLUSTER)  # type: ignore[return-value]

    def jobs(self, namespace: str | None = None, tau_managed_only: bool = True) -> list[JobView]:
        """Jobs; by default only Tau-managed ones and never KubeRay submitters."""
        items: list[JobView] = self.list(ResourceKind.JOB, namespace)  # type: ignore[assignment]
        if tau_managed_only:
            items = [j for j in items if j.tau_managed and not j.owned_by_rayjob]
        return items

    def ray_jobs(self, namespace: str | None = None, tau_managed_only: bool = True) -> list[RayJobView]:
        items: list[RayJobView] = self.list(ResourceKind.RAY_JOB, namespace)  # type: ignore[assignment]
        return [j for j in items if j.tau_managed] if tau_managed_only else items

    def pods(self, namespace: str | None = None) -> list[PodView]:
        return self.list(ResourceKind.POD, namespace)  # type: ignore[return-value]

    def events(self, namespace: str | None = None) -> list[EventView]:
        return self.list(ResourceKind.EVENT, namespace)  # type: ignore[return-value]

    def nodes(self) -> list[NodeView]:
        """Nodes with GPU capacity/allocation and agent health attached."""
        return self.list(ResourceKind.NODE)  # type: ignore[return-value]

    def gpu_health(self) -> list[GpuHealthView]:
        return self.list(ResourceKind.GPU_HEALTH)  # type: ignore[return-value]

    def tau_cluster(self) -> TauClusterView | None:
        """The singleton ``TauCluster/cluster``."""
        return self.get(ResourceKind.TAU_CLUSTER, "cluster")  # type: ignore[return-value]

    def tau_workspaces(self, namespace: str | None = None) -> list[TauWorkspaceView]:
        return self.list(ResourceKind.TAU_WORKSPACE, namespace)  # type: ignore[return-value]

    def workload_for_owner(self, namespace: str, owner_uid: str) -> WorkloadView | None:
        """The Workload Kueue created for a Job/RayJob (label job-uid, then ownerReferences)."""
        for wl in self.workloads(namespace):
            if wl.labels.get("kueue.x-k8s.io/job-uid") == owner_uid:
                return wl
        for wl in self.workloads(namespace):
            ref = wl.controller_owner
            if ref is not None and ref.get("uid") == owner_uid:
                return wl
        return None

    # -- queue positions ---------------------------------------------------

    @abc.abstractmethod
    def pending_positions_local_queue(self, namespace: str, name: str) -> PositionReport:
        """Researcher view: visibility API LocalQueue endpoint, else estimated.
        Performs network I/O on the real backend: call from a worker."""

    @abc.abstractmethod
    def pending_positions_cluster_queue(self, name: str) -> PositionReport:
        """Platform view: visibility API ClusterQueue endpoint, else estimated."""

    @abc.abstractmethod
    def position_history(self, namespace: str, name: str) -> PositionHistory | None:
        """Recorded samples for one workload (filled by the position calls)."""

    # -- logs --------------------------------------------------------------

    @abc.abstractmethod
    def open_logs(self, request: LogRequest, spool_dir: str | None = None) -> "LogStream":
        """Start streaming into an append-only spool file; returns at once.
        ``stream.spool`` has the line index, search and save; ``stream.close()``
        stops it.  Raises :class:`ClusterError` when no pod matches."""

    # -- mutations (synchronous: call from a worker) ----------------------

    @abc.abstractmethod
    def submit(self, manifests: Sequence[Mapping[str, Any]], dry_run: bool = False) -> list[MutationResult]:
        """Create rendered manifests in order.  ``dry_run`` uses server-side
        dry-run.  Idempotent on the ``tau.azure.com/submission-id`` label: an
        object that already exists with the same submission id is reported as
        ``existing=True, ok=True`` and nothing new is created."""

    @abc.abstractmethod
    def cancel(self, kind: ResourceKind, namespace: str, name: str, dry_run: bool = False) -> MutationResult:
        """Delete a Job (propagation Background) or RayJob; Kueue then
        removes the Workload.  Workloads may be cancelled directly too."""

    @abc.abstractmethod
    def set_stop_policy(
        self, kind: ResourceKind, name: str, policy: StopPolicy, namespace: str | None = None, dry_run: bool = False
    ) -> MutationResult:
        """Hold / HoldAndDrain / resume (None) a ClusterQueue or LocalQueue."""

    def hold(self, kind: ResourceKind, name: str, namespace: str | None = None, dry_run: bool = False) -> MutationResult:
        return self.set_stop_policy(kind, name, "Hold", namespace, dry_run)

    def hold_and_drain(
        self, kind: ResourceKind, name: str, namespace: str | None = None, dry_run: bool = False
    ) -> MutationResult:
        return self.set_stop_policy(kind, name, "HoldAndDrain", namespace, dry_run)

    def resume(self, kind: ResourceKind, name: str, namespace: str | None = None, dry_run: bool = False) -> MutationResult:
        return self.set_stop_policy(kind, name, "None", namespace, dry_run)

    @abc.abstractmethod
    def drain_inputs(self, node: str) -> tuple[list[dict], list[dict], list[str]]:
        """Pods on ``node``, the PodDisruptionBudgets of their namespaces, and a message per
        namespace whose PDBs could not be read, all from the API (not the cache, whose
        namespace scope may hide some). Raises ClusterError when the pods cannot be listed."""

    @abc.abstractmethod
    def annotate_node(self, node: str, annotations: Mapping[str, str], dry_run: bool = False) -> MutationResult: ...

    @abc.abstractmethod
    def cordon(self, node: str, dry_run: bool = False) -> MutationResult: ...

    @abc.abstractmethod
    def uncordon(self, node: str, dry_run: bool = False) -> MutationResult: ...

    @abc.abstractmethod
    def drain(self, node: str, dry_run: bool = False, grace_period_seconds: int | None = None) -> DrainResult:
        """Cordon, then evict every non-DaemonSet, non-mirror, non-finished pod
        on the node through the Eviction API (PDBs respected: a 429 is
        reported in ``failed``, not retried forever)."""

    @abc.abstractmethod
    def create_multikueue_object(self, manifest: Mapping[str, Any], dry_run: bool = False) -> MutationResult:
        """Create a MultiKueueCluster, MultiKueueConfig or AdmissionCheck."""

    @abc.abstractmethod
    def delete_multikueue_object(self, kind: ResourceKind, name: str, dry_run: bool = False) -> MutationResult: ...

    @abc.abstractmethod
    def set_multikueue_config_clusters(
        self, name: str, clusters: Sequence[str], dry_run: bool = False
    ) -> MutationResult:
        """Replace ``spec.clusters`` of a MultiKueueConfig (drain wizard step)."""
