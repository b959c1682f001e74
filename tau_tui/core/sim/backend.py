"""ClusterBackend over the simulated cluster: same cache, same semantics,
same error messages as the real backend (both derive from BaseBackend)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest
from tau_tui.core.cluster.namespace_access import forbidden_list_message
from tau_tui.core.cluster.namespace_scope import watch_namespace
from tau_tui.core.sim.ray_driver import UntimedOutput
from tau_tui.core.sim.simlogs import SimLogReader
from tau_tui.core.sim.store import qualified
from tau_tui.core.sim.world import RealtimeTicker, SimulatedCluster

_BY_TYPE = {(k.type.group, k.type.plural): k for k in ResourceKind}
_VIS_CQ = re.compile(r"^/apis/visibility\.kueue\.x-k8s\.io/(v1beta[12])/clusterqueues/([^/]+)/pendingworkloads$")
_VIS_LQ = re.compile(r"^/apis/visibility\.kueue\.x-k8s\.io/(v1beta[12])/namespaces/([^/]+)/localqueues/([^/]+)/pendingworkloads$")
_VIS_CQ_TYPE = ResourceType("visibility.kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", False)
_VIS_LQ_TYPE = ResourceType("visibility.kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue", True)


class SimulatedBackend(BaseBackend):
    """``identity``: None acts as cluster admin; a name (for example
    ``system:serviceaccount:team-a:viewer``) is limited to the rules granted
    with ``world.store.grant``.  ``realtime``: tick with the wall clock (demo);
    otherwise time moves only through ``world.advance``."""

    def __init__(
        self,
        worlds: SimulatedCluster | Mapping[str, SimulatedCluster],
        *,
        identity: str | None = None,
        namespace: str | None = None,
        context: str | None = None,
        realtime: bool = False,
        tick_seconds: float = 1.0,
    ):
        if isinstance(worlds, SimulatedCluster):
            worlds = {worlds.settings.context: worlds}
        self.worlds = dict(worlds)
        self._context = context or next(iter(self.worlds))
        self.world = self.worlds[self._context]
        self.identity = identity
        self._namespace = namespace
        self.realtime = realtime
        self.tick_seconds = tick_seconds
        self._ticker: RealtimeTicker | None = None
        self._readable: set[ResourceKind] = set()
        self._node_pods_readable = False
        self._bind_lock = threading.RLock()
        self._started = False
        #: Told where each batch of cache writes ends (a relayed cache: ``process_server.py``).
        self.on_batch_end: Callable[[], None] | None = None
        #: True while the world's simulated API outage cuts this backend off.
        self._offline = False
        super().__init__(ObjectCache(lambda: self.world.now()))

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> None:
        with self._bind_lock:
            if self._started:
                return
            self._started = True
            self._bind()

    def close(self) -> None:
        with self._bind_lock:
            self._unbind()
            self._started = False

    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        return self._started  # the simulated list is synchronous

    def _bind(self) -> None:
        world = self.world
        if self.realtime:
            world.continue_in_real_time()
        with world.lock:
            if self._on_connectivity not in world.connectivity_listeners:
                world.connectivity_listeners.append(self._on_connectivity)
            if world.api_down is None:
                self._attach()
        if world.api_down is not None:
            self._go_offline(world.api_down, world.api_down_stale)
        else:
            self.cache.set_connection(ConnectionState(ConnectionStatus.CONNECTED, self._context, None, "simulated cluster"))
            self._batch_ended()
        if self.realtime and not any(isinstance(t, RealtimeTicker) and t.is_alive() for t in threading.enumerate() if getattr(t, "world", None) is world):
            self._ticker = RealtimeTicker(world, self.tick_seconds)
            self._ticker.start()

    def foreground_busy(self, seconds: float) -> None:
        world = self.world
        world.foreground_busy_until = max(world.foreground_busy_until, time.monotonic() + seconds)

    def _attach(self) -> None:
        """Follow the store again from a fresh list (call with world.lock held)."""
        world = self.world
        self._offline = False
        if self._on_change not in world.store.listeners:
            world.store.listeners.append(self._on_change)
        if self._batch_ended not in world.tick_listeners:
            world.tick_listeners.append(self._batch_ended)
        self._resync_all()

    def _detach(self) -> None:
        world = self.world
        with world.lock:
            if self._on_change in world.store.listeners:
                world.store.listeners.remove(self._on_change)
            if self._batch_ended in world.tick_listeners:
                world.tick_listeners.remove(self._batch_ended)

    def _on_connectivity(self) -> None:
        """The world's simulated API outage began or ended."""
        with self._bind_lock:
            if not self._started:
                return
            down, stale = self.world.api_down, self.world.api_down_stale
            if down is not None:
                self._go_offline(down, stale)
            elif self._offline:
                with self.world.lock:
                    self._attach()
                self.cache.set_connection(ConnectionState(ConnectionStatus.CONNECTED, self._context, None, "simulated cluster"))
                self._batch_ended()

    def _go_offline(self, message: str, stale: bool) -> None:
        """Like a failing watch on the real backend: keep the cached data, mark
        every readable view ERROR (stale) and the connection reconnecting/stale."""
        self._detach()
        if not self._offline:
            self._offline = True
            self._offline_since = self.world.now()
        for kind in sorted(self._readable, key=lambda k: k.name):
            if self.cache.view_state(kind).status is ViewStatus.READY:
                self.cache.set_state(kind, ViewStatus.ERROR, f"reconnecting: {message}")
        status = ConnectionStatus.STALE if stale else ConnectionStatus.RECONNECTING
        self.cache.set_connection(ConnectionState(status, self._context, self._offline_since, message))
        self._batch_ended()

    def _check_online(self) -> None:
        if self._offline:
            raise ApiFailure(0, "", f"the API server is unreachable: {self.world.api_down or 'connection lost'}")

    def _unbind(self) -> None:
        world = self.world
        self._detach()
        with world.lock:
            if self._on_connectivity in world.connectivity_listeners:
                world.connectivity_listeners.remove(self._on_connectivity)
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def _batch_ended(self) -> None:
        """A tick, a write or a scope change is in the cache whole (a relayed cache marks it)."""
        if self.on_batch_end is not None:
            self.on_batch_end()

    def _scope_for(self, kind: ResourceKind) -> str | None:
        return watch_namespace(kind, self._namespace)

    def _resync_all(self) -> None:
        for kind in ResourceKind:
            self._resync(kind)
        self._resync_node_pods()

    def _resync(self, kind: ResourceKind) -> None:
        store = self.world.store
        rt = kind.type
        ns = self._scope_for(kind)
        if not (store.allowed(self.identity, "list", qualified(rt), ns) and store.allowed(self.identity, "watch", qualified(rt), ns)):
            self._readable.discard(kind)
            self.cache.clear(kind, ViewStatus.FORBIDDEN, forbidden_list_message(rt.qualified, ns, rt.namespaced))
            return
        self._readable.add(kind)
        items = store.api_list(None, rt, ns, copy_items=False)
        self.cache.replace(kind, items)  # stored objects are never changed in place
        self.cache.set_state(kind, ViewStatus.READY)

    def _resync_node_pods(self) -> None:
        store = self.world.store
        if store.allowed(self.identity, "list", "pods", None):
            self._node_pods_readable = True
            self.cache.replace_node_pods(store.items(ResourceKind.POD.type))
        else:
            self._node_pods_readable = False
            self.cache.set_node_pods_unknown()

    def _on_change(self, rt: ResourceType, event_type: str, obj: dict[str, Any]) -> None:
        kind = _BY_TYPE.get((rt.group, rt.plural))
        if kind is None:
            return
        if kind is ResourceKind.POD and self._node_pods_readable:
            self.cache.apply_node_pod(event_type, obj)
        if kind not in self._readable:
            return
        ns = self._scope_for(kind)
        if ns is not None and (obj.get("metadata") or {}).get("namespace") != ns:
            return
        self.cache.apply(kind, event_type, dict(obj))

    # -- contexts and namespaces -------------------------------------------

    def contexts(self) -> list[str]:
        return sorted(self.worlds)

    @property
    def current_context(self) -> str | None:
        return self._context

    def who_am_i(self) -> dict[str, Any] | None:
        """A fixed identity, like a SelfSubjectReview of the simulated user."""
        if self.identity is None:
            return {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
        return {"username": self.identity, "groups": ["system:authenticated"]}

    def use_context(self, name: str) -> None:
        if name not in self.worlds:
            raise ClusterError(f"context {name!r} not found; available: {', '.join(self.contexts())}")
        with self._bind_lock:
            self._unbind()
            self._context = name
            self.world = self.worlds[name]
            for kind in ResourceKind:
                self.cache.clear(kind)
            if self._started:
                self._bind()

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def use_namespace(self, namespace: str | None) -> None:
        with self._bind_lock, self.world.lock:
            self._namespace = namespace
            for kind in ResourceKind:
                if kind.type.namespaced:
                    self.cache.clear(kind)
                    self._resync(kind)
        self._batch_ended()

    # -- primitives ---------------------------------------------------------

    def _now(self) -> datetime:
        return self.world.now()

    def _after_write(self) -> None:
        self._batch_ended()

    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        self._check_online()
        return self.world.store.api_get(self.identity, rt, name, namespace)

    def _api_list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None, field_selector: str | None = None) -> list[dict[str, Any]]:
        self._check_online()
        return self.world.store.api_list(self.identity, rt, namespace, label_selector, field_selector)

    def _api_create(self, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        self._check_online()
        try:
            return self.world.store.api_create(self.identity, rt, namespace, body, dry_run)
        finally:
            self._after_write()

    def _api_delete(self, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None:
        self._check_online()
        try:
            self.world.store.api_delete(self.identity, rt, name, namespace, dry_run)
        finally:
            self._after_write()

    def _api_patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        self._check_online()
        try:
            return self.world.store.api_patch(self.identity, rt, name, namespace, patch, dry_run)
        finally:
            self._after_write()

    def _api_evict(self, name: str, namespace: str, dry_run: bool, grace_period_seconds: int | None) -> None:
        self._check_online()
        try:
            self.world.store.api_evict(self.identity, ResourceKind.POD.type, name, namespace, dry_run)
        finally:
            self._after_write()

    def _server_version(self) -> dict[str, Any]:
        self._check_online()
        version = self.world.settings.kubernetes_version
        major, minor = (version.lstrip("v").split(".") + ["0"])[:2]
        return {"major": major, "minor": minor, "gitVersion": version}

    def _visibility_get(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        self._check_online()
        world = self.world
        if not world.settings.visibility_api:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        limit, offset = int(query.get("limit", 1000)), int(query.get("offset", 0))
        m_cq, m_lq = _VIS_CQ.match(path), _VIS_LQ.match(path)
        with world.lock:
            if m_cq:
                cq = m_cq.group(2)
                world.store.authorize(self.identity, "get", _VIS_CQ_TYPE, None, sub="pendingworkloads")
                if world.store.read(ResourceKind.CLUSTER_QUEUE.type, cq) is None:
                    raise ApiFailure(404, "NotFound", f'clusterqueues.kueue.x-k8s.io "{cq}" not found')
                positions = world.kueue.pending_positions(cq)
                selected = positions.items
                in_local_queue = positions.in_queue_name
            elif m_lq:
                ns, lq = m_lq.group(2), m_lq.group(3)
                world.store.authorize(self.identity, "get", _VIS_LQ_TYPE, ns, sub="pendingworkloads")
                lq_obj = world.store.read(ResourceKind.LOCAL_QUEUE.type, lq, ns)
                if lq_obj is None:
                    raise ApiFailure(404, "NotFound", f'localqueues.kueue.x-k8s.io "{lq}" not found')
                positions = world.kueue.pending_positions((lq_obj.get("spec") or {}).get("clusterQueue", ""))
                selected = positions.of_local_queue.get((ns, lq), [])
                in_local_queue = positions.in_local_queue
            else:
                raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
            in_cluster_queue = positions.in_cluster_queue
            page = selected[offset: offset + limit]
            return {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "items": [
                {"metadata": {"name": w["metadata"]["name"], "namespace": w["metadata"]["namespace"],
                              "creationTimestamp": w["metadata"].get("creationTimestamp"),
                              "ownerReferences": w["metadata"].get("ownerReferences") or []},
                 "priority": int((w.get("spec") or {}).get("priority") or 0), "localQueueName": w["spec"]["queueName"],
                 "positionInClusterQueue": in_cluster_queue[id(w)], "positionInLocalQueue": in_local_queue[id(w)]}
                for w in page]}

    def open_container_log(self, request: LogChunkRequest) -> SimLogReader:
        self._check_online()
        self.world.store.authorize(self.identity, "get", ResourceKind.POD.type, request.namespace, sub="log")
        return self.world.open_container_log(request)

    def open_pod_exec(self, request: ExecRequest) -> UntimedOutput:
        self._check_online()
        self.world.store.authorize(self.identity, "create", ResourceKind.POD.type, request.namespace, sub="exec")
        return self.world.open_pod_exec(request)
