"""The cluster access contract: small role interfaces and the backend composed from them.

Every pane reads live cluster state through :class:`ClusterBackend`.  Two
implementations exist and are held to the same contract test suite
(``tests/contract/``):

* ``tau_tui.core.cluster.real.KubernetesBackend``: the official kubernetes
  client, list+watch per resource into a local cache (core threads only);
* ``tau_tui.core.sim.backend.SimulatedBackend``: an in-process, seeded,
  clock-injectable simulated cluster driven by ``tau_tui/scenarios/*.yaml``
  (``tau-tui --demo`` and deterministic UI tests).

Tick model (how the UI consumes this):
    The backend keeps a cache per :class:`ResourceKind`.  Every applied change
    bumps that kind's :meth:`Watcher.generation`.  A UI timer (for
    example every 250 ms) compares generations and, when one moved, reads what
    changed: one change feed, the cache's journal, followed with a
    :class:`~tau_tui.core.cluster.journal_cursor.JournalCursor` (the keys changed
    since its last read, or "read everything").  Nothing is pushed; a core thread
    that waits for changes blocks in :meth:`Watcher.wait_for_change`.  Nothing
    here imports Textual.

Like k9s's ``internal/dao``, the contract is cut into roles (:class:`Lister`,
:class:`Getter`, :class:`Watcher`, :class:`Mutator`, :class:`NodeOps`,
:class:`LogSource`, ...); :class:`ClusterBackend` is all of them at once.
Kueue objects are read and written as ``kueue.x-k8s.io/v1beta2``.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from tau_tui.core.cluster.changes import ConnectionState, ViewState
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.mutations import DrainResult, MutationResult, StopPolicy
from tau_tui.core.cluster.positions import PositionHistory, PositionReport
from tau_tui.core.cluster.view_types import (
    AdmissionCheckView,
    ClusterQueueView,
    CohortView,
    EventView,
    GpuHealthView,
    JobView,
    LocalQueueView,
    MultiKueueClusterView,
    MultiKueueConfigView,
    NodeView,
    ObjectView,
    PodView,
    RayJobView,
    ResourceFlavorView,
    TauClusterView,
    TauWorkspaceView,
    WorkloadPriorityClassView,
    WorkloadView,
)

_View = TypeVar("_View", bound=ObjectView)


def is_tau_run(owner: JobView | RayJobView) -> bool:
    """A run's owner as the run lists count it: Tau-managed, and never a RayJob's submitter Job."""
    return owner.tau_managed and not (isinstance(owner, JobView) and owner.owned_by_rayjob)


class Lifecycle(abc.ABC):
    """Starting and stopping the backend's caches and threads."""

    @abc.abstractmethod
    def start(self) -> None:
        """Begin syncing caches (returns at once)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop threads and watches; release log streams."""

    @abc.abstractmethod
    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        """Block until every (given) view left SYNCING; True if it did in time."""

    def foreground_busy(self, seconds: float) -> None:  # noqa: B027  (most backends have nothing to defer)
        """The host's foreground wants the interpreter for `seconds`: work this backend does in this
        process on its own account (the simulated cluster's controllers) may wait so it runs first.
        A cluster's own work runs elsewhere, so by default nothing waits."""


class ContextScope(abc.ABC):
    """Which cluster (kubeconfig context) and which namespaces the views cover."""

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

    @abc.abstractmethod
    def who_am_i(self) -> dict[str, Any] | None:
        """The Kubernetes identity the server sees (SelfSubjectReview ``status.userInfo``),
        or None when it cannot be asked."""


class Lister(abc.ABC):
    """Cached snapshots of one kind, with typed conveniences (all derive from :meth:`list`).

    Reads are lock-protected snapshots and never block on the network."""

    @abc.abstractmethod
    def list(self, kind: ResourceKind, namespace: str | None = None) -> list[ObjectView]:
        """Snapshot of one kind, sorted by (namespace, name).  ``namespace``
        filters within the current scope."""

    def views(self, kind: ResourceKind) -> builtins.list[ObjectView]:
        """Snapshot of one kind in no order: for a reader that orders (or indexes) the views itself,
        no sort of every key."""
        return self.list(kind)

    def _list_as(self, view_type: type[_View], kind: ResourceKind, namespace: str | None = None) -> builtins.list[_View]:
        """:meth:`list` typed as the view class the converters build for ``kind`` (one class per kind)."""
        return cast("builtins.list[_View]", self.list(kind, namespace))

    def workloads(self, namespace: str | None = None) -> builtins.list[WorkloadView]:
        return self._list_as(WorkloadView, ResourceKind.WORKLOAD, namespace)

    def cluster_queues(self) -> builtins.list[ClusterQueueView]:
        return self._list_as(ClusterQueueView, ResourceKind.CLUSTER_QUEUE)

    def local_queues(self, namespace: str | None = None) -> builtins.list[LocalQueueView]:
        return self._list_as(LocalQueueView, ResourceKind.LOCAL_QUEUE, namespace)

    def resource_flavors(self) -> builtins.list[ResourceFlavorView]:
        return self._list_as(ResourceFlavorView, ResourceKind.RESOURCE_FLAVOR)

    def cohorts(self) -> builtins.list[CohortView]:
        return self._list_as(CohortView, ResourceKind.COHORT)

    def workload_priority_classes(self) -> builtins.list[WorkloadPriorityClassView]:
        return self._list_as(WorkloadPriorityClassView, ResourceKind.WORKLOAD_PRIORITY_CLASS)

    def admission_checks(self) -> builtins.list[AdmissionCheckView]:
        return self._list_as(AdmissionCheckView, ResourceKind.ADMISSION_CHECK)

    def multikueue_configs(self) -> builtins.list[MultiKueueConfigView]:
        return self._list_as(MultiKueueConfigView, ResourceKind.MULTIKUEUE_CONFIG)

    def multikueue_clusters(self) -> builtins.list[MultiKueueClusterView]:
        return self._list_as(MultiKueueClusterView, ResourceKind.MULTIKUEUE_CLUSTER)

    def jobs(self, namespace: str | None = None, tau_managed_only: bool = True) -> builtins.list[JobView]:
        """Jobs; by default only Tau-managed ones and never KubeRay submitters."""
        items: list[JobView] = self._list_as(JobView, ResourceKind.JOB, namespace)
        if tau_managed_only:
            items = [j for j in items if is_tau_run(j)]
        return items

    def ray_jobs(self, namespace: str | None = None, tau_managed_only: bool = True) -> builtins.list[RayJobView]:
        items: list[RayJobView] = self._list_as(RayJobView, ResourceKind.RAY_JOB, namespace)
        return [j for j in items if is_tau_run(j)] if tau_managed_only else items

    def pods(self, namespace: str | None = None) -> builtins.list[PodView]:
        return self._list_as(PodView, ResourceKind.POD, namespace)

    def events(self, namespace: str | None = None) -> builtins.list[EventView]:
        return self._list_as(EventView, ResourceKind.EVENT, namespace)

    def nodes(self) -> builtins.list[NodeView]:
        """Nodes with GPU capacity/allocation and agent health attached."""
        return self._list_as(NodeView, ResourceKind.NODE)

    def gpu_health(self) -> builtins.list[GpuHealthView]:
        return self._list_as(GpuHealthView, ResourceKind.GPU_HEALTH)

    def tau_workspaces(self, namespace: str | None = None) -> builtins.list[TauWorkspaceView]:
        return self._list_as(TauWorkspaceView, ResourceKind.TAU_WORKSPACE, namespace)

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


class Getter(abc.ABC):
    """One cached object by name."""

    @abc.abstractmethod
    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> ObjectView | None:
        """One object from the cache, or None."""

    def tau_cluster(self) -> TauClusterView | None:
        """The singleton ``TauCluster/cluster``."""
        return cast("TauClusterView | None", self.get(ResourceKind.TAU_CLUSTER, "cluster"))


class Watcher(abc.ABC):
    """What changed and how fresh the data is: the tick model's generations, the change journal,
    per-kind and connection state."""

    @abc.abstractmethod
    def generation(self, kind: ResourceKind) -> int:
        """Counter bumped on every applied change of ``kind`` (tick model)."""

    def changes(self, kind: ResourceKind, since: int | None,
                cost_ratio: int = 1) -> tuple[int, set[tuple[str, str]] | None]:
        """The generation of ``kind`` now and, taken with it, the (namespace, name) keys changed
        after ``since`` (a generation this gave), or None: read everything (a first read, a journal
        that does not reach back, or more changes than a ``cost_ratio``-th of the kind).  Read
        through a :class:`~tau_tui.core.cluster.journal_cursor.JournalCursor`."""
        return self.generation(kind), None

    def wait_for_change(self, seen: Mapping[ResourceKind, int], timeout: float) -> bool:
        """Block until a kind of ``seen`` is at another generation than the one given; False when
        ``timeout`` (seconds, real time) passed first."""
        import time

        deadline = time.monotonic() + timeout
        while all(self.generation(kind) == generation for kind, generation in seen.items()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return True

    @abc.abstractmethod
    def view_state(self, kind: ResourceKind) -> ViewState: ...

    @abc.abstractmethod
    def connection_state(self) -> ConnectionState: ...


class QueuePositions(abc.ABC):
    """Pending workloads' places in line (visibility API, else estimated) and their history."""

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


class LogSource(abc.ABC):
    """Container logs streamed into spool files."""

    @abc.abstractmethod
    def open_logs(self, request: LogRequest, spool_dir: str | None = None) -> LogStream:
        """Start streaming into an append-only spool file; returns at once.
        ``stream.spool`` has the line index, search and save; ``stream.close()``
        stops it.  Raises :class:`ClusterError` when no pod matches."""


class Mutator(abc.ABC):
    """Changes to workloads and queues (synchronous: call from a worker)."""

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
    def annotate(self, kind: ResourceKind, namespace: str, name: str, annotations: Mapping[str, str],
                 dry_run: bool = False) -> MutationResult:
        """Merge-patch annotations onto a Job or RayJob (retry and resume record the successor)."""

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


class NodeOps(abc.ABC):
    """Node maintenance: read what a drain needs, annotate, cordon, drain (call from a worker)."""

    @abc.abstractmethod
    def drain_inputs(self, node: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
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


class MultiKueueAdmin(abc.ABC):
    """MultiKueue setup objects: MultiKueueCluster, MultiKueueConfig, AdmissionCheck."""

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


class ClusterBackend(
    Lifecycle, ContextScope, Lister, Getter, Watcher, QueuePositions, LogSource, Mutator, NodeOps, MultiKueueAdmin
):
    """Live cluster state, queue positions, logs and mutations: every role at once.

    Thread-safety: every method may be called from any thread; reads are
    lock-protected snapshots and never block on the network.  Network work
    happens on the backend's own core threads (or, for mutations, on the
    caller's thread: run them in a worker).  Code that needs one role can
    take that role's interface instead (as k9s's ``internal/dao`` does)."""
