"""ClusterBackend on the official kubernetes client.

One informer thread per resource kind: list (paginated) into the cache, then
watch from the list's resourceVersion; a closed watch resumes from the last
seen resourceVersion; 410 Gone relists; failures back off exponentially with
jitter.  A 403 degrades only that kind's view; a 404 marks it not installed.
Everything runs on core threads; reads never touch the network."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kubernetes import client as k8s

from tau_tui.core.cluster import wire_json
from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.convert import format_time, strip_managed_fields
from tau_tui.core.cluster.credentials import take_exec_failure
from tau_tui.core.cluster.errors import describe_transport_error
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.kubeconfig import DEFAULT_TIMEOUTS, KubeconfigSource, RequestTimeouts
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest
from tau_tui.core.cluster.names import KUEUE_GROUP
from tau_tui.core.cluster.namespace_access import forbidden_list_message
from tau_tui.core.cluster.namespace_scope import watch_namespace
from tau_tui.core.cluster.pod_streams import ExecOutput, LogResponse, open_exec
from tau_tui.core.cluster.unauthorised import mark_unauthorised
from tau_tui.core.cluster.unchanged_parts import listed, share_with_previous

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse

log = logging.getLogger(__name__)

LIST_PAGE = 500
WATCH_TIMEOUT_SECONDS = 240
WATCH_READ_TIMEOUT_SECONDS = 90  # > bookmark interval: a silent watch connection is dead
BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
FORBIDDEN_RETRY = 60.0
STALE_AFTER_SECONDS = 30.0
NODE_PODS_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
#: Listed first, the other kinds once these have synced: the queue is what a user waits for, and
#: listing every kind at once made 20,000 Workloads share a busy server with pods, nodes and events.
FIRST_LISTED = frozenset(kind for kind in ResourceKind if kind.type.group == KUEUE_GROUP)
#: Kinds whose first list is shown page by page while it goes on (the view stays "syncing" until its
#: end, and the panes say so): the queue screen's rows come with the first page, not after 20,000
#: Workloads.  Jobs, pods and events are still put in the cache whole, at the end of their list.
SHOWN_WHILE_LISTED = FIRST_LISTED
#: How long the other kinds wait for the first ones at most (a server that never answers them).
FIRST_LIST_WAIT_S = 20.0
LATER_START_POLL_S = 0.05


def resource_path(rt: ResourceType, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    if rt.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{rt.plural}"
    if name:
        base += f"/{quote(name, safe='')}"
    if sub:
        base += f"/{sub}"
    return base


FIELD_MANAGER = "tau-tui"

class _Http:
    """Thin raw-JSON layer over ApiClient (auth, TLS, exec plugins included)."""

    def __init__(self, api_client: k8s.ApiClient, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS):
        self.api_client = api_client
        self.timeouts = timeouts
        self.server = getattr(api_client.configuration, "host", None)

    def request(self, method: str, path: str, query: Iterable[tuple[str, Any]] = (), body: Any = None,
                content_type: str | None = None, stream: bool = False, timeout: Any = None) -> Any:
        """``timeout``: ``(connect, read)``; default the configured request timeouts.
        The decoded JSON body, or with ``stream`` the urllib3 response not yet read."""
        timeout = timeout or self.timeouts.pair()
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        try:
            _m, url, hdrs, ser_body, post = self.api_client.param_serialize(
                method, path, query_params=[(k, v) for k, v in query if v is not None],
                header_params=headers, body=body, auth_settings=["BearerToken"])
            resp = self.api_client.call_api(method, url, header_params=hdrs, body=ser_body, post_params=post,
                                            _request_timeout=timeout)
        except ApiFailure:
            raise
        except k8s.ApiException as exc:
            raise _failure(exc.status or 0, exc.reason or "", exc.body) from None
        except Exception as exc:  # connection refused/reset, TLS, timeouts: name the server and the limit
            raise ApiFailure(0, type(exc).__name__, describe_transport_error(exc, self.server, self.timeouts)) from None
        if resp.status >= 400:
            data = resp.read()
            raise _failure(resp.status, resp.reason or "", data)
        if stream:
            return resp.response  # urllib3 response, not yet read
        data = resp.read()
        return wire_json.loads(data) if data else {}


def _failure(code: int, reason: str, body: Any) -> ApiFailure:
    status: Any = {}
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            status = json.loads(body)
        except ValueError:
            status = {"message": body}
    elif isinstance(body, Mapping):
        status = body
    if not isinstance(status, Mapping):
        status = {}
    return ApiFailure(code, str(status.get("reason") or reason), str(status.get("message") or reason), status)


def _lines(resp: BaseHTTPResponse) -> Iterator[bytes]:
    buffer = b""
    for chunk in resp.stream(65536, decode_content=True):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield from (line for line in complete if line.strip())
    if buffer.strip():
        yield buffer


class _Informer(threading.Thread):
    """list+watch of one kind (or the node-allocation pod view) into the cache."""

    def __init__(self, backend: KubernetesBackend, kind: ResourceKind, namespace: str | None, node_pods: bool = False):
        super().__init__(name=f"tau-informer-{kind.type.plural}{'-nodes' if node_pods else ''}", daemon=True)
        self.backend = backend
        self.kind = kind
        self.namespace = watch_namespace(kind, namespace)
        self.node_pods = node_pods
        self.stop_event = threading.Event()
        self.resource_version: str | None = None
        self.failing_since: datetime | None = None
        self.unauthorised: str | None = None  # why the server refuses our credential (unauthorised.py)
        self.relists = 0
        self.watch_resumes = 0
        self._resp = None
        self.synced = threading.Event()

    def stop(self) -> None:
        self.stop_event.set()
        resp = self._resp
        if resp is not None:
            try:
                resp.shutdown()
            except Exception:
                pass

    # cache hooks

    def _replace(self, items: list[dict[str, Any]]) -> None:
        if self.node_pods:
            self.backend.cache.replace_node_pods(items)
        else:
            self.backend.cache.replace(self.kind, items)
            self.backend.cache.set_state(self.kind, ViewStatus.READY)

    def _apply(self, event_type: str, obj: dict[str, Any]) -> None:
        if self.node_pods:
            self.backend.cache.apply_node_pod(event_type, obj)
        else:
            self.backend.cache.apply(self.kind, event_type, obj)

    def _set_state(self, status: ViewStatus, message: str) -> None:
        if self.node_pods:
            self.backend.cache.set_node_pods_unknown()
        else:
            self.backend.cache.clear(self.kind, status, message)

    # loop

    def run(self) -> None:
        backoff = BACKOFF_START
        http = self.backend.http
        rt = self.kind.type
        path = resource_path(rt, self.namespace)
        selector = NODE_PODS_SELECTOR if self.node_pods else None
        while not self.stop_event.is_set():
            try:
                if self.resource_version is None:
                    self._list(http, path, selector)
                self._watch(http, path, selector)
                backoff = BACKOFF_START
                self._healthy()
            except ApiFailure as exc:
                if self.stop_event.is_set():
                    return
                if exc.code == 410:
                    self.resource_version = None  # expired: relist
                    continue
                if exc.code == 401:  # refused even after a refresh of the credential: re-login, not "no access"
                    if self.stop_event.wait(mark_unauthorised(self, take_exec_failure())):
                        return
                    continue
                if exc.code == 403:
                    self._healthy()
                    self.resource_version = None
                    self._set_state(ViewStatus.FORBIDDEN, forbidden_list_message(rt.qualified, self.namespace, rt.namespaced))
                    self.synced.set()
                    if self.stop_event.wait(FORBIDDEN_RETRY):
                        return
                    continue
                if exc.code == 404:
                    self._healthy()
                    self.resource_version = None
                    self._set_state(ViewStatus.NOT_INSTALLED, f"not installed: {rt.qualified}")
                    self.synced.set()
                    if self.stop_event.wait(FORBIDDEN_RETRY):
                        return
                    continue
                self._unhealthy(exc)
                delay = min(BACKOFF_MAX, backoff) * random.uniform(0.5, 1.5)  # jitter: informers do not retry in step
                backoff *= 2
                if self.stop_event.wait(delay):
                    return

    def _healthy(self) -> None:
        if self.failing_since is not None or self.unauthorised:
            self.failing_since = self.unauthorised = None
            self.backend._update_connection()

    def _unhealthy(self, exc: ApiFailure) -> None:
        if self.failing_since is None:
            self.failing_since = datetime.now(UTC)
        if not self.node_pods and self.backend.cache.view_state(self.kind).status is ViewStatus.READY:
            self.backend.cache.set_state(self.kind, ViewStatus.ERROR, f"reconnecting: {exc.message or exc.reason}")
        self.backend._update_connection(str(exc.message or exc.reason))

    def _list(self, http: _Http, path: str, selector: str | None) -> None:
        items: list[dict[str, Any]] = []
        token = None
        rv = None
        for _ in range(100_000 // LIST_PAGE + 1):
            body = http.request("GET", path, [("limit", LIST_PAGE), ("continue", token), ("fieldSelector", selector)])
            page = body.get("items") or []
            for item in page:
                item.setdefault("apiVersion", self.kind.type.api_version)
                item.setdefault("kind", self.kind.type.kind)
                meta = strip_managed_fields(item).get("metadata") or {}
                items.append(listed(item, None if self.node_pods else
                                    self.backend.cache.raw(self.kind, meta.get("name", ""), meta.get("namespace"))))
            meta = body.get("metadata") or {}
            rv = meta.get("resourceVersion", rv)
            token = meta.get("continue")
            if token and self.kind in SHOWN_WHILE_LISTED and not self.node_pods:
                self.backend.cache.add_listed_page(self.kind, page, len(items))
            if not token:
                break
        self._replace(items)
        self.resource_version = rv
        self.relists += 1
        self.synced.set()
        self.failing_since = self.unauthorised = None
        self.backend._update_connection()

    def _watch(self, http: _Http, path: str, selector: str | None) -> None:
        resp = http.request("GET", path, [
            ("watch", "true"), ("resourceVersion", self.resource_version), ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", WATCH_TIMEOUT_SECONDS), ("fieldSelector", selector)],
            stream=True, timeout=http.timeouts.pair(max(WATCH_READ_TIMEOUT_SECONDS, http.timeouts.read or 0)))
        self._resp = resp
        self._healthy()
        if not self.node_pods and self.backend.cache.view_state(self.kind).status is ViewStatus.ERROR:
            self.backend.cache.set_state(self.kind, ViewStatus.READY)
        try:
            for line in _lines(resp):
                if self.stop_event.is_set():
                    return
                event = wire_json.loads(line)
                etype = event.get("type")
                obj = event.get("object") or {}
                if etype == "ERROR":
                    code = int(obj.get("code") or 0)
                    raise ApiFailure(code or 500, str(obj.get("reason") or ""), str(obj.get("message") or ""), obj)
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if etype == "BOOKMARK":
                    self.resource_version = rv or self.resource_version
                    continue
                obj.setdefault("apiVersion", self.kind.type.api_version)
                obj.setdefault("kind", self.kind.type.kind)
                meta = strip_managed_fields(obj).get("metadata") or {}
                if etype != "DELETED":  # an update shares what did not change with the version cached
                    share_with_previous(obj, None if self.node_pods or etype != "MODIFIED" else
                                        self.backend.cache.raw(self.kind, meta.get("name", ""), meta.get("namespace")))
                self._apply(etype, obj)
                self.resource_version = rv or self.resource_version
            self.watch_resumes += 1
        except ApiFailure:
            raise
        except Exception as exc:
            if self.stop_event.is_set():
                return
            raise ApiFailure(0, type(exc).__name__, str(exc)) from None
        finally:
            self._resp = None
            try:
                resp.release_conn()
            except Exception:
                pass


class KubernetesBackend(BaseBackend):
    """The real cluster.  ``kubeconfig``: a path list like ``KUBECONFIG``
    (default: the environment, then in-cluster)."""

    # Set by who_am_i: the context it asked in and the answer (None: unknown there).
    _identity: tuple[str | None, dict[str, Any] | None]

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None,
                 *, all_namespaces: bool = False, kinds: Iterable[ResourceKind] | None = None,
                 timeouts: RequestTimeouts | None = None):
        super().__init__(ObjectCache())
        self.timeouts = timeouts or DEFAULT_TIMEOUTS
        self.source = KubeconfigSource(kubeconfig)
        self._context = context or self.source.current_context()
        self._namespace = None if all_namespaces else (namespace or self.source.namespace_of(self._context) or "default")
        self.kinds = list(kinds) if kinds is not None else list(ResourceKind)
        self.http = _Http(self.source.api_client(self._context, self.timeouts), self.timeouts)
        self._informers: list[_Informer] = []
        self._lock = threading.RLock()
        self._started = False

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            self._start_informers()

    def _start_informers(self) -> None:
        self.cache.set_connection(ConnectionState(ConnectionStatus.RECONNECTING, self._context, None, "connecting"))
        for kind in self.kinds:
            self._informers.append(_Informer(self, kind, self._namespace))
        if ResourceKind.NODE in self.kinds:
            self._informers.append(_Informer(self, ResourceKind.POD, None, node_pods=True))
        first = [i for i in self._informers if i.kind in FIRST_LISTED and not i.node_pods]
        later = [i for i in self._informers if i not in first]
        for informer in first or later:
            informer.start()
        if first and later:
            threading.Thread(target=self._start_after_first, args=(first, later), daemon=True,
                             name="tau-informer-later").start()

    def _start_after_first(self, first: list[_Informer], later: list[_Informer]) -> None:
        deadline = time.monotonic() + FIRST_LIST_WAIT_S
        # A first kind that failed (a Kueue webhook down) or was stopped (`:ns`, a closed backend)
        # holds the others back no longer.
        while time.monotonic() < deadline and not all(
                i.synced.is_set() or i.stop_event.is_set() or i.failing_since is not None for i in first):
            time.sleep(LATER_START_POLL_S)
        with self._lock:
            for informer in later:
                if not informer.stop_event.is_set():  # stopped meanwhile: a closed backend or another context
                    informer.start()

    def _stop_informers(self) -> None:
        informers, self._informers = self._informers, []
        for informer in informers:
            informer.stop()
        for informer in informers:
            if informer.ident is not None:  # one waiting for the first kinds never started
                informer.join(timeout=5)

    def close(self) -> None:
        with self._lock:
            self._stop_informers()
            self._started = False

    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        wanted = set(kinds) if kinds is not None else None
        deadline = time.monotonic() + timeout
        for informer in list(self._informers):
            if wanted is not None and (informer.kind not in wanted or informer.node_pods):
                continue
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                return False
        ok = self.cache.wait_for(lambda: self.connection_state().status is ConnectionStatus.CONNECTED,
                                 max(0.0, deadline - time.monotonic()))
        return ok

    def _update_connection(self, message: str = "") -> None:
        failing = [i.failing_since for i in self._informers if i.failing_since is not None]
        refused = next((i.unauthorised for i in self._informers if i.unauthorised), None)
        if refused:
            state = ConnectionState(ConnectionStatus.UNAUTHORISED, self._context, None, refused)
        elif not failing:
            state = ConnectionState(ConnectionStatus.CONNECTED, self._context, None, "")
        else:
            since = min(failing)
            age = (datetime.now(UTC) - since).total_seconds()
            status = ConnectionStatus.STALE if age > STALE_AFTER_SECONDS else ConnectionStatus.RECONNECTING
            state = ConnectionState(status, self._context, since, message or self.cache.connection_state().message)
        self.cache.set_connection(state)

    def informer_stats(self) -> dict[str, dict[str, int]]:
        """Relist and watch-resume counters per kind (tests, diagnostics)."""
        return {f"{i.kind.type.plural}{'-nodes' if i.node_pods else ''}": {"relists": i.relists, "resumes": i.watch_resumes}
                for i in self._informers}

    # -- contexts and namespaces -----------------------------------------------------------

    def contexts(self) -> list[str]:
        return [c.name for c in self.source.contexts()]

    @property
    def current_context(self) -> str | None:
        return self._context

    def use_context(self, name: str) -> None:
        client = self.source.api_client(name, self.timeouts)  # fails before anything is torn down
        with self._lock:
            self._stop_informers()
            self._context = name
            self.http = _Http(client, self.timeouts)
            if self._namespace is not None:  # "all namespaces" survives a context switch
                self._namespace = self.source.namespace_of(name) or self._namespace
            for kind in ResourceKind:
                self.cache.clear(kind)
            if self._started:
                self._start_informers()

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def use_namespace(self, namespace: str | None) -> None:
        with self._lock:
            self._namespace = namespace
            keep = [i for i in self._informers if not i.kind.type.namespaced or i.node_pods]
            drop = [i for i in self._informers if i not in keep]
            for informer in drop:
                informer.stop()
            for informer in drop:
                if informer.ident is not None:  # one still waiting for the first kinds never started
                    informer.join(timeout=5)
                self.cache.clear(informer.kind)
            self._informers = keep
            if self._started:
                for kind in self.kinds:
                    if kind.type.namespaced:
                        informer = _Informer(self, kind, namespace)
                        self._informers.append(informer)
                        informer.start()

    def who_am_i(self) -> dict[str, Any] | None:
        """SelfSubjectReview (authentication.k8s.io/v1): who the server says we are; cached per context."""
        cached: tuple[str | None, dict[str, Any] | None] | None = getattr(self, "_identity", None)
        if cached is not None and cached[0] == self._context:
            return cached[1]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            answer = self.http.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=body)
        except ApiFailure:  # an older server (< 1.28) or no permission: unknown, and not asked again
            self._identity = (self._context, None)
            return None
        info = (answer.get("status") or {}).get("userInfo") or {}
        identity = {k: info[k] for k in ("username", "uid", "groups") if info.get(k)} or None
        self._identity = (self._context, identity)
        return identity

    # -- primitives --------------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.now(UTC)

    def resource_type_for(self, api_version: str, kind: str) -> ResourceType | None:
        found = super().resource_type_for(api_version, kind)
        if found is not None:
            return found
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            body = self.http.request("GET", path)
        except ApiFailure:
            return None
        group, version = (api_version.split("/", 1) if "/" in api_version else ("", api_version))
        for res in body.get("resources") or ():
            if res.get("kind") == kind and "/" not in res.get("name", ""):
                return ResourceType(group, version, res["name"], kind, bool(res.get("namespaced")))
        return None

    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        obj: dict[str, Any] = self.http.request("GET", resource_path(rt, namespace, name))
        return obj

    def _api_list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None,
                  field_selector: str | None = None) -> list[dict[str, Any]]:
        body = self.http.request("GET", resource_path(rt, namespace), [("labelSelector", label_selector), ("fieldSelector", field_selector)])
        return list(body.get("items") or ())

    @staticmethod
    def _dry(dry_run: bool) -> list[tuple[str, Any]]:
        return [("dryRun", "All")] if dry_run else []

    def _api_create(self, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        body = dict(body)
        if rt.namespaced:
            body["metadata"] = dict(body.get("metadata") or {}, namespace=namespace)
        # Strict: an unknown or misspelt field is an error, never silently pruned.
        query = [*self._dry(dry_run), ("fieldValidation", "Strict"), ("fieldManager", FIELD_MANAGER)]
        created: dict[str, Any] = self.http.request("POST", resource_path(rt, namespace), query, body=body)
        return created

    def _api_delete(self, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None:
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if dry_run:
            options["dryRun"] = ["All"]
        self.http.request("DELETE", resource_path(rt, namespace, name), self._dry(dry_run), body=options)

    def _api_patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        patched: dict[str, Any] = self.http.request("PATCH", resource_path(rt, namespace, name), self._dry(dry_run),
                                                    body=dict(patch), content_type="application/merge-patch+json")
        return patched

    def _api_evict(self, name: str, namespace: str, dry_run: bool, grace_period_seconds: int | None) -> None:
        options: dict[str, Any] = {}
        if dry_run:
            options["dryRun"] = ["All"]
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": options}
        self.http.request("POST", resource_path(ResourceKind.POD.type, namespace, name, "eviction"), body=body)

    def _visibility_get(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = self.http.request("GET", path, list(query.items()))
        return body

    def _server_version(self) -> dict[str, Any]:
        version: dict[str, Any] = self.http.request("GET", "/version")
        return version

    def open_pod_exec(self, request: ExecRequest) -> ExecOutput:
        return open_exec(self.http.api_client, self.http.timeouts, request)

    def open_container_log(self, request: LogChunkRequest) -> LogResponse:
        query = [("container", request.container), ("timestamps", "true"),
                 ("follow", "true" if request.follow else None), ("previous", "true" if request.previous else None),
                 ("sinceTime", format_time(request.since_time) if request.since_time else None),
                 ("sinceSeconds", request.since_seconds if request.since_time is None else None),
                 ("tailLines", request.tail_lines)]
        resp = self.http.request("GET", resource_path(ResourceKind.POD.type, request.namespace, request.pod, "log"), query,
                                 stream=True, timeout=self.http.timeouts.pair(0 if request.follow else max(120, self.http.timeouts.read)))
        return LogResponse(resp)


def open_backend(kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None,
                 all_namespaces: bool = False, timeouts: RequestTimeouts | None = None) -> KubernetesBackend:
    """Construct and start the real backend (the CLI/app entry point)."""
    backend = KubernetesBackend(kubeconfig, context, namespace, all_namespaces=all_namespaces, timeouts=timeouts)
    backend.start()
    return backend


__all__ = ["KubernetesBackend", "open_backend", "resource_path"]
