"""Behaviour shared by both backends, written once over a few API primitives.

The real backend implements the primitives with the kubernetes client; the
simulated one with its in-process store.  Positions, log target discovery,
submit idempotency, error mapping, drain and every other mutation live here,
so the two cannot drift apart."""

from __future__ import annotations

import abc
import builtins
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from tau_gpuhealth.names import CORDON_ANNOTATIONS
from tau_tui.core.cluster import pod_logs
from tau_tui.core.cluster.api_failure import ApiFailure, failure_result
from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ViewState
from tau_tui.core.cluster.convert import SIMPLE_VIEW_BUILDERS, node_view
from tau_tui.core.cluster.errors import ClusterError, describe_api_error
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import MULTIKUEUE_KINDS, ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest, LogRequest
from tau_tui.core.cluster.logspool.sources import ClosableIterator, DriverOutput
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.cluster.mutations import DrainResult, MutationResult, StopPolicy
from tau_tui.core.cluster.names import SUBMISSION_ID_LABEL
from tau_tui.core.cluster.namespace_access import forbidden_list_message
from tau_tui.core.cluster.pending_order import PendingOrder
from tau_tui.core.cluster.positions import (
    PositionHistory,
    PositionReport,
    PositionSource,
    PositionTracker,
    parse_pending_workloads_summary,
)
from tau_tui.core.cluster.submission_kinds import EXTRA_TYPES, PDB_TYPE, resource_type_from_table
from tau_tui.core.cluster.view_types import ObjectView

#: The Service the renderer creates next to a multi-node Job (runconfig/manifests.py).
HEADLESS_SUFFIX = "-headless"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")
VISIBILITY_PAGE = 1000
VISIBILITY_MAX_PAGES = 100
#: A visibility API not served (404 on every version) is asked again this much later, not on every
#: position read: each read was two requests answered 404 before the estimate.
VISIBILITY_ASK_AGAIN_S = 60.0


class BaseBackend(ClusterBackend):
    """Cache reads, positions, logs and mutations over abstract API primitives."""

    #: False: never ask the visibility API; positions are always estimated.
    use_visibility_api: bool = True
    #: Told every visibility answer (endpoint suffix, items or None, why not): a session recorder
    #: keeps them, since positions are not in the cache. Called on the asking thread.
    visibility_tap: Callable[[str, builtins.list[dict[str, Any]] | None, str], None] | None = None

    #: Seconds a visibility API found not served is taken as absent (0: asked every time, as a
    #: replay does, whose answers are the recorded ones).
    visibility_absent_for_s: float = VISIBILITY_ASK_AGAIN_S

    def __init__(self, cache: ObjectCache):
        self.cache = cache
        self.tracker = PositionTracker()
        #: Kueue's order of the pending Workloads, kept from the change feed (estimated positions).
        self.pending_order = PendingOrder(self)
        #: (monotonic time until which, why): the visibility API was found not served.
        self._visibility_absent: tuple[float, str] = (0.0, "")

    def who_am_i(self) -> dict[str, Any] | None:
        """The Kubernetes identity the server sees (SelfSubjectReview ``status.userInfo``:
        ``username``, ``uid``, ``groups``), or None when it cannot be asked."""
        return None

    # -- primitives (implemented per backend) -----------------------------

    @abc.abstractmethod
    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _api_list(
        self, rt: ResourceType, namespace: str | None, label_selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def _api_create(self, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _api_delete(self, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None: ...

    @abc.abstractmethod
    def _api_patch(
        self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        """JSON merge patch."""

    @abc.abstractmethod
    def _api_evict(self, name: str, namespace: str, dry_run: bool, grace_period_seconds: int | None) -> None: ...

    @abc.abstractmethod
    def _visibility_get(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        """GET on the aggregated visibility API (raises ApiFailure)."""

    @abc.abstractmethod
    def open_container_log(self, request: LogChunkRequest) -> ClosableIterator:
        """Raw container log bytes, each line prefixed by an RFC3339Nano timestamp."""

    @abc.abstractmethod
    def open_pod_exec(self, request: ExecRequest) -> ClosableIterator:
        """The stdout of a command run in a container (``kubectl exec``); raises when it fails."""

    @abc.abstractmethod
    def _now(self) -> datetime: ...

    def _server_version(self) -> dict[str, Any]:
        """``GET /version`` (raises ApiFailure)."""
        raise ApiFailure(404, "NotFound", "this backend does not report a server version")

    def resource_type_for(self, api_version: str, kind: str) -> ResourceType | None:
        return resource_type_from_table(api_version, kind)

    # -- cache reads -------------------------------------------------------

    def list(self, kind: ResourceKind, namespace: str | None = None) -> list[ObjectView]:
        return self.cache.list(kind, namespace)

    def views(self, kind: ResourceKind) -> builtins.list[ObjectView]:
        return self.cache.views(kind)

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> ObjectView | None:
        return self.cache.get(kind, name, namespace)

    # -- live reads (headless commands: no watch, no cache) ------------------

    def fetch(self, kind: ResourceKind, namespace: str | None = None, label_selector: str | None = None) -> builtins.list[ObjectView]:
        """One list request to the API server, converted to views; 404 (the kind is not installed) is empty."""
        build = SIMPLE_VIEW_BUILDERS.get(kind)
        if kind is ResourceKind.NODE:
            # GPU allocation needs every pod on the node: unknown (None) in a live read.
            def build(obj: Mapping[str, Any]) -> ObjectView:
                return node_view(obj, None, None)
        if build is None:
            raise ClusterError(f"{kind.type.kind} cannot be read without the cache")
        try:
            items = self._api_list(kind.type, namespace, label_selector=label_selector)
        except ApiFailure as exc:
            if exc.code == 404:
                return []
            if exc.code == 403 and kind.type.namespaced and not namespace:  # rights in one namespace only
                raise ClusterError(forbidden_list_message(kind.type.qualified, None, True), code=403) from None
            raise ClusterError(
                describe_api_error(exc.code, verb="list", resource=kind.type.qualified, namespace=namespace, body=exc.body, reason=exc.reason),
                code=exc.code,
            ) from None
        return [build(item) for item in items]

    def generation(self, kind: ResourceKind) -> int:
        return self.cache.generation(kind)

    def changes(self, kind: ResourceKind, since: int | None,
                cost_ratio: int = 1) -> tuple[int, set[tuple[str, str]] | None]:
        return self.cache.changes(kind, since, cost_ratio)

    def wait_for_change(self, seen: Mapping[ResourceKind, int], timeout: float) -> bool:
        return self.cache.wait_for_change(seen, timeout)

    def view_state(self, kind: ResourceKind) -> ViewState:
        return self.cache.view_state(kind)

    def connection_state(self) -> ConnectionState:
        return self.cache.connection_state()

    def namespaces(self) -> builtins.list[str]:
        names = [v.name for v in self.cache.list(ResourceKind.NAMESPACE)]
        if not names and self.namespace:
            names = [self.namespace]
        return names

    # -- positions ---------------------------------------------------------

    def _visibility_items(self, suffix: str) -> tuple[builtins.list[dict[str, Any]] | None, str]:
        """All pages of a pendingworkloads endpoint, or (None, why not)."""
        items, why = self._read_visibility(suffix)
        tap = self.visibility_tap
        if tap is not None:
            tap(suffix, items, why)
        return items, why

    def _read_visibility(self, suffix: str) -> tuple[builtins.list[dict[str, Any]] | None, str]:
        if not self.use_visibility_api:
            return None, "the visibility API is switched off for this session"
        absent_until, absent_why = self._visibility_absent
        if time.monotonic() < absent_until:
            return None, absent_why
        last_reason = ""
        for version in VISIBILITY_VERSIONS:
            path = f"/apis/{VISIBILITY_GROUP}/{version}/{suffix}"
            items: list[dict[str, Any]] = []
            try:
                for page in range(VISIBILITY_MAX_PAGES):
                    body = self._visibility_get(path, {"limit": VISIBILITY_PAGE, "offset": page * VISIBILITY_PAGE})
                    chunk = list(body.get("items") or ())
                    items.extend(chunk)
                    if len(chunk) < VISIBILITY_PAGE:
                        break
                return items, ""
            except ApiFailure as exc:
                if exc.code == 404:
                    last_reason = "the visibility API (visibility.kueue.x-k8s.io) is not installed"
                    continue
                if exc.code == 403:
                    return None, f"no access to the visibility API: get {suffix.rsplit('/', 2)[-2]}/pendingworkloads"
                if exc.code == 401:
                    return None, "not authenticated to the visibility API"
                return None, f"the visibility API failed (HTTP {exc.code or 'no response'})"
        why = last_reason or "the visibility API is not available"
        self._visibility_absent = (time.monotonic() + self.visibility_absent_for_s, why)
        return None, why

    def _pending_since(self, report: PositionReport) -> dict[tuple[str, str], datetime | None]:
        """When each workload of the report started waiting: one cache look-up per entry, not a scan of all workloads."""
        since: dict[tuple[str, str], datetime | None] = {}
        for entry in report.entries:
            workload = self.cache.get(ResourceKind.WORKLOAD, entry.name, entry.namespace)
            since[(entry.namespace, entry.name)] = getattr(workload, "queue_order_timestamp", None)
        return since

    def _workloads_caveat(self) -> str:
        state = self.view_state(ResourceKind.WORKLOAD)
        return "" if state.usable else f"; workloads not readable ({state.message or state.status.value})"

    def pending_positions_local_queue(self, namespace: str, name: str) -> PositionReport:
        items, why = self._visibility_items(f"namespaces/{namespace}/localqueues/{name}/pendingworkloads")
        now = self._now()
        if items is not None:
            lq = self.get(ResourceKind.LOCAL_QUEUE, name, namespace)
            entries = parse_pending_workloads_summary({"items": items}, getattr(lq, "cluster_queue", None), namespace)
            report = PositionReport("LocalQueue", name, namespace, tuple(entries), PositionSource.VISIBILITY_API, "", now)
        else:
            report = self.pending_order.local_queue_report(
                namespace, name, f"estimated from Kueue's order: {why}{self._workloads_caveat()}", now)
        self._track_positions(report)
        return report

    def pending_positions_cluster_queue(self, name: str) -> PositionReport:
        items, why = self._visibility_items(f"clusterqueues/{name}/pendingworkloads")
        now = self._now()
        if items is not None:
            entries = parse_pending_workloads_summary({"items": items}, name)
            report = PositionReport("ClusterQueue", name, None, tuple(entries), PositionSource.VISIBILITY_API, "", now)
        else:
            report = self.pending_order.cluster_queue_report(
                name, f"estimated from Kueue's order: {why}{self._workloads_caveat()}", now)
        self._track_positions(report)
        return report

    def _track_positions(self, report: PositionReport) -> None:
        """Keep the report's positions in the per-workload history."""
        self.tracker.record(report, self._pending_since(report))

    def position_history(self, namespace: str, name: str) -> PositionHistory | None:
        return self.tracker.history(namespace, name)

    # -- logs --------------------------------------------------------------

    def open_logs(self, request: LogRequest, spool_dir: str | None = None) -> LogStream:
        return pod_logs.open_run_logs(self, request, spool_dir)

    def resolve_log_targets(self, request: LogRequest) -> builtins.list[tuple[str, str]]:
        return pod_logs.resolve_log_targets(self, request)

    def container_finished(self, namespace: str, pod: str, container: str) -> bool:
        return pod_logs.container_finished(self, namespace, pod, container)

    def run_finished(self, request: LogRequest) -> bool:
        return pod_logs.run_finished(self, request)

    def open_driver_log(self, request: LogRequest, follow: bool) -> DriverOutput:
        return pod_logs.open_driver_log(self, request, follow)

    # -- mutations ---------------------------------------------------------

    def submit(self, manifests: Sequence[Mapping[str, Any]], dry_run: bool = False) -> builtins.list[MutationResult]:
        results: list[MutationResult] = []
        failed = False
        # A headless Service goes first: a Job whose Service failed would start pods that cannot rendezvous.
        ordered = sorted(manifests, key=lambda m: 0 if m.get("kind") == "Service" else 1)
        for manifest in ordered:
            meta = manifest.get("metadata") or {}
            name = meta.get("name") or meta.get("generateName") or ""
            api_version, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
            rt = self.resource_type_for(api_version, kind)
            if rt is None:
                results.append(
                    MutationResult(False, "create", kind, name, meta.get("namespace"),
                                   f"unknown kind {api_version}/{kind}: the server does not serve it; "
                                   "install its CRD or fix apiVersion/kind", dry_run)
                )
                failed = True
                continue
            namespace = (meta.get("namespace") or self.namespace or "default") if rt.namespaced else None
            if failed and not dry_run:
                results.append(
                    MutationResult(False, "create", rt.kind, name, namespace,
                                   "skipped: an earlier object of this submission failed", dry_run)
                )
                continue
            try:
                created = self._api_create(rt, namespace, manifest, dry_run)
                results.append(
                    MutationResult(True, "create", rt.kind, name, namespace,
                                   f"{rt.kind} {name} " + ("passes server dry-run" if dry_run else "created"),
                                   dry_run, object=created)
                )
            except ApiFailure as exc:
                if exc.code == 409:
                    existing = self._existing_for_submission(rt, name, namespace, manifest)
                    if existing is not None and _submission_id(existing) == _submission_id(manifest):
                        results.append(
                            MutationResult(True, "create", rt.kind, name, namespace,
                                           f"{rt.kind} {name} already submitted (same "
                                           f"{SUBMISSION_ID_LABEL}); nothing new created",
                                           dry_run, existing=True, object=existing)
                        )
                        continue
                    if existing is not None:
                        results.append(MutationResult(
                            False, "create", rt.kind, name, namespace,
                            f"{rt.qualified}/{name} already exists in ns {namespace} from a different submission "
                            f"({SUBMISSION_ID_LABEL} {_submission_id(existing) or 'none'}, this one "
                            f"{_submission_id(manifest)}). Rename the run (name:) or delete the old one first.",
                            dry_run, code=409,
                        ))
                        failed = True
                        continue
                results.append(failure_result(exc, "create", rt, name, namespace, dry_run))
                failed = True
        return results

    def _existing_for_submission(
        self, rt: ResourceType, name: str, namespace: str | None, manifest: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The object already there under this name, or None when it cannot be read."""
        if not _submission_id(manifest):
            return None
        try:
            return self._api_get(rt, name, namespace)
        except ApiFailure:
            return None

    def cancel(self, kind: ResourceKind, namespace: str, name: str, dry_run: bool = False) -> MutationResult:
        if kind not in (ResourceKind.JOB, ResourceKind.RAY_JOB, ResourceKind.WORKLOAD):
            raise ClusterError(f"cancel works on Jobs, RayJobs and Workloads, not {kind.type.kind}")
        rt = kind.type
        try:
            self._api_delete(rt, name, namespace, dry_run)
        except ApiFailure as exc:
            if exc.code == 404:
                return MutationResult(True, "delete", rt.kind, name, namespace,
                                      f"{rt.kind} {namespace}/{name} is already gone", dry_run)
            return failure_result(exc, "delete", rt, name, namespace, dry_run)
        verb = "would be cancelled (server dry-run)" if dry_run else "cancelled; Kueue releases its quota"
        message = f"{rt.kind} {namespace}/{name} {verb}"
        if kind is not ResourceKind.WORKLOAD:
            # The renderer's `<name>-headless` Service outlives its Job otherwise (it has no owner reference).
            service_rt = EXTRA_TYPES[("", "Service")]
            service = f"{name}{HEADLESS_SUFFIX}"
            try:
                self._api_delete(service_rt, service, namespace, dry_run)
                message += f"; Service {service} {'would be ' if dry_run else ''}deleted"
            except ApiFailure as exc:
                if exc.code != 404:
                    failed = failure_result(exc, "delete", service_rt, service, namespace, dry_run)
                    return MutationResult(False, "delete", rt.kind, name, namespace, f"{message}; but {failed.message}", dry_run)
        return MutationResult(True, "delete", rt.kind, name, namespace, message, dry_run)

    def annotate(self, kind: ResourceKind, namespace: str, name: str, annotations: Mapping[str, str],
                 dry_run: bool = False) -> MutationResult:
        """Merge-patch annotations onto a Job or RayJob (a retry or resume records its successor there)."""
        if kind not in (ResourceKind.JOB, ResourceKind.RAY_JOB):
            raise ClusterError(f"annotate works on Jobs and RayJobs, not {kind.type.kind}")
        rt = kind.type
        try:
            self._api_patch(rt, name, namespace, {"metadata": {"annotations": dict(annotations)}}, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "patch", rt, name, namespace, dry_run)
        what = ", ".join(f"{k}={v}" for k, v in annotations.items())
        return MutationResult(True, "patch", rt.kind, name, namespace,
                              f"{rt.kind} {namespace}/{name} {'would be ' if dry_run else ''}annotated {what}", dry_run)

    def set_stop_policy(
        self, kind: ResourceKind, name: str, policy: StopPolicy, namespace: str | None = None, dry_run: bool = False
    ) -> MutationResult:
        if kind not in (ResourceKind.CLUSTER_QUEUE, ResourceKind.LOCAL_QUEUE):
            raise ClusterError(f"stopPolicy applies to ClusterQueues and LocalQueues, not {kind.type.kind}")
        if policy not in ("None", "Hold", "HoldAndDrain"):
            raise ClusterError(f"stopPolicy must be None, Hold or HoldAndDrain, not {policy!r}")
        if kind is ResourceKind.LOCAL_QUEUE and not namespace:
            raise ClusterError("a LocalQueue needs its namespace")
        rt = kind.type
        ns = namespace if rt.namespaced else None
        try:
            obj = self._api_patch(rt, name, ns, {"spec": {"stopPolicy": policy}}, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "patch", rt, name, ns, dry_run)
        words = {"None": "resumed", "Hold": "held", "HoldAndDrain": "held and draining"}
        return MutationResult(True, "patch", rt.kind, name, ns,
                              f"{rt.kind} {name} {words[policy]}" + (" (server dry-run)" if dry_run else ""),
                              dry_run, object=obj)

    def _patch_node(self, node: str, unschedulable: bool, dry_run: bool) -> MutationResult:
        rt = ResourceKind.NODE.type
        try:
            # A person's cordon or uncordon ends the node agent's: its bookkeeping goes, so the agent
            # never lifts this cordon and the drain budget never reads its old time.
            obj = self._api_patch(rt, node, None, {"spec": {"unschedulable": True if unschedulable else None},
                                                   "metadata": {"annotations": dict.fromkeys(CORDON_ANNOTATIONS)}},
                                  dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "patch", rt, node, None, dry_run)
        word = "cordoned" if unschedulable else "uncordoned"
        return MutationResult(True, "patch", "Node", node, None, f"node {node} {word}" + (" (server dry-run)" if dry_run else ""),
                              dry_run, object=obj)

    def drain_inputs(self, node: str) -> tuple[builtins.list[dict[str, Any]], builtins.list[dict[str, Any]], builtins.list[str]]:
        try:
            pods = self._api_list(ResourceKind.POD.type, None, field_selector=f"spec.nodeName={node}")
        except ApiFailure as exc:
            raise ClusterError(failure_result(exc, "list", ResourceKind.POD.type, "", None, False).message, code=exc.code) from None
        pdbs: list[dict[str, Any]] = []
        problems: list[str] = []
        for namespace in sorted({(p.get("metadata") or {}).get("namespace", "") for p in pods}):
            try:
                pdbs += self._api_list(PDB_TYPE, namespace)
            except ApiFailure as exc:
                problems.append(f"PodDisruptionBudgets in {namespace} not readable "
                                f"({failure_result(exc, 'list', PDB_TYPE, '', namespace, False).message}); "
                                "the Eviction API still enforces them")
        return pods, pdbs, problems

    def annotate_node(self, node: str, annotations: Mapping[str, str], dry_run: bool = False) -> MutationResult:
        rt = ResourceKind.NODE.type
        try:
            self._api_patch(rt, node, None, {"metadata": {"annotations": dict(annotations)}}, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "patch", rt, node, None, dry_run)
        return MutationResult(True, "patch", rt.kind, node, None, f"node {node} annotated", dry_run)

    def cordon(self, node: str, dry_run: bool = False) -> MutationResult:
        return self._patch_node(node, True, dry_run)

    def uncordon(self, node: str, dry_run: bool = False) -> MutationResult:
        return self._patch_node(node, False, dry_run)

    def drain(self, node: str, dry_run: bool = False, grace_period_seconds: int | None = None) -> DrainResult:
        cordon = self.cordon(node, dry_run)
        if not cordon.ok:
            return DrainResult(node, False, (), (), (cordon,), dry_run)
        try:
            pods = self._api_list(ResourceKind.POD.type, None, field_selector=f"spec.nodeName={node}")
        except ApiFailure as exc:
            return DrainResult(node, True, (), (), (failure_result(exc, "list", ResourceKind.POD.type, "", None, dry_run),), dry_run)
        evicted, skipped, failed = [], [], []
        for pod in sorted(pods, key=lambda p: ((p["metadata"].get("namespace") or ""), p["metadata"]["name"])):
            meta = pod.get("metadata") or {}
            ref = f"{meta.get('namespace')}/{meta.get('name')}"
            owners = meta.get("ownerReferences") or ()
            if any(o.get("kind") == "DaemonSet" for o in owners) or "kubernetes.io/config.mirror" in (
                meta.get("annotations") or {}
            ) or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                skipped.append(ref)
                continue
            try:
                self._api_evict(meta["name"], meta["namespace"], dry_run, grace_period_seconds)
                evicted.append(ref)
            except ApiFailure as exc:
                if exc.code == 404:
                    evicted.append(ref)
                    continue
                failed.append(failure_result(exc, "create", ResourceType("", "v1", "pods/eviction", "Eviction", True),
                                             meta["name"], meta["namespace"], dry_run))
        return DrainResult(node, True, tuple(evicted), tuple(skipped), tuple(failed), dry_run)

    def create_multikueue_object(self, manifest: Mapping[str, Any], dry_run: bool = False) -> MutationResult:
        kind = ResourceKind.for_kind(manifest.get("apiVersion", ""), manifest.get("kind", ""))
        if kind not in MULTIKUEUE_KINDS:
            raise ClusterError(
                f"{manifest.get('kind')} is not a MultiKueue object (expected MultiKueueCluster, MultiKueueConfig or AdmissionCheck)"
            )
        manifest = dict(manifest)
        manifest["apiVersion"] = kind.type.api_version  # always v1beta2
        name = (manifest.get("metadata") or {}).get("name", "")
        try:
            obj = self._api_create(kind.type, None, manifest, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "create", kind.type, name, None, dry_run)
        return MutationResult(True, "create", kind.type.kind, name, None,
                              f"{kind.type.kind} {name} " + ("passes server dry-run" if dry_run else "created"), dry_run, object=obj)

    def delete_multikueue_object(self, kind: ResourceKind, name: str, dry_run: bool = False) -> MutationResult:
        if kind not in MULTIKUEUE_KINDS:
            raise ClusterError(f"{kind.type.kind} is not a MultiKueue object")
        try:
            self._api_delete(kind.type, name, None, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "delete", kind.type, name, None, dry_run)
        return MutationResult(True, "delete", kind.type.kind, name, None,
                              f"{kind.type.kind} {name} " + ("would be deleted (server dry-run)" if dry_run else "deleted"), dry_run)

    def set_multikueue_config_clusters(self, name: str, clusters: Sequence[str], dry_run: bool = False) -> MutationResult:
        rt = ResourceKind.MULTIKUEUE_CONFIG.type
        try:
            obj = self._api_patch(rt, name, None, {"spec": {"clusters": list(clusters)}}, dry_run)
        except ApiFailure as exc:
            return failure_result(exc, "patch", rt, name, None, dry_run)
        return MutationResult(True, "patch", rt.kind, name, None,
                              f"MultiKueueConfig {name} clusters set to {', '.join(clusters) or '(none)'}", dry_run, object=obj)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _submission_id(obj: Mapping[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(SUBMISSION_ID_LABEL)
