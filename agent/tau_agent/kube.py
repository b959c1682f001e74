"""Kubernetes side of the agent: what it writes, behind a small interface.

`KubeWriter` is the interface the agent loop uses; `KubernetesWriter` implements it with the
official client. Writes are limited to the agent's own Node and its own GPUNodeHealth object
(the ValidatingAdmissionPolicy in manifests/agent enforces that server-side as well):
  - Node conditions: strategic-merge PATCH of nodes/<node>/status (conditions merge by type);
  - GPUNodeHealth/<node>: server-side apply (creates it on first write);
  - Events in the agent namespace, one name per (GPU, reason), count bumped on repeats;
  - optional taint / cordon: PATCH nodes/<node> with optimistic concurrency (resourceVersion).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from tau_gpuhealth.names import (
    AGENT_COMPONENT,
    ANNOTATION_CORDON_REASON,
    ANNOTATION_CORDON_TIMESTAMP,
    ANNOTATION_CORDONED_BY,
    API_GROUP,
    API_VERSION,
    CORDON_ANNOTATIONS,
    HEALTH_KIND,
    HEALTH_PLURAL,
    TAINT_UNHEALTHY_KEY,
)

from .budget import EventRecord

log = logging.getLogger(__name__)

FIELD_MANAGER = AGENT_COMPONENT
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class OwnNodeState:
    """What the agent reads about itself at start (one GET each)."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    taints: list[dict[str, Any]] = field(default_factory=list)
    health_status: dict[str, Any] | None = None


@dataclass
class NodeActionRequest:
    taint_reason: str | None  # None removes our taint
    taint_effect: str
    manage_taint: bool
    cordon: bool | None  # None leaves cordon alone
    reason: str
    dry_run: bool


class KubeWriter(Protocol):
    def read_own_state(self) -> OwnNodeState: ...

    def write_conditions(self, conditions: list[dict[str, Any]]) -> None: ...

    def write_health_object(self, status: dict[str, Any]) -> None: ...

    def write_event(self, event: EventRecord) -> None: ...

    def apply_node_actions(self, request: NodeActionRequest, now: float) -> None: ...


def health_object_body(node_name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": HEALTH_KIND,
        "metadata": {"name": node_name, "labels": {"app.kubernetes.io/managed-by": AGENT_COMPONENT}},
        "status": status,
    }


def event_body(node_name: str, namespace: str, event: EventRecord, host: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event.name, "namespace": namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        "reason": event.reason,
        "message": event.message[:1024],
        "type": event.type,
        "count": event.count,
        "firstTimestamp": rfc3339(event.first_time),
        "lastTimestamp": rfc3339(event.last_time),
        "source": {"component": AGENT_COMPONENT, "host": host or node_name},
        "reportingComponent": f"{API_GROUP}/{AGENT_COMPONENT}",
        "reportingInstance": node_name,
    }


def desired_taints(current: list[dict[str, Any]], request: NodeActionRequest) -> list[dict[str, Any]]:
    others = [t for t in current if t.get("key") != TAINT_UNHEALTHY_KEY]
    if request.taint_reason is None:
        return others
    value = "".join(ch for ch in request.taint_reason if ch.isalnum() or ch in "-_.")[:63]
    return others + [{"key": TAINT_UNHEALTHY_KEY, "value": value, "effect": request.taint_effect}]


def cordon_is_ours(meta: dict[str, Any]) -> bool:
    """Our cordon: our cordoned-by annotation, and we set spec.unschedulable last (a person's
    cordon since, by kubectl or the TUI, takes that field over)."""
    if (meta.get("annotations") or {}).get(ANNOTATION_CORDONED_BY) != AGENT_COMPONENT:
        return False
    for entry in meta.get("managedFields") or []:
        if entry.get("manager") == FIELD_MANAGER and not entry.get("subresource"):
            if "f:unschedulable" in ((entry.get("fieldsV1") or {}).get("f:spec") or {}):
                return True
    return False


class KubernetesWriter:
    """The real writer. `api_client` is a configured kubernetes.client.ApiClient."""

    def __init__(self, api_client: Any, node_name: str, namespace: str, request_timeout: float = 10.0):
        from kubernetes import client

        self._client = client
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.node_name = node_name
        self.namespace = namespace
        self.timeout = request_timeout

    def read_own_state(self) -> OwnNodeState:
        node = self.api_client.sanitize_for_serialization(
            self.core.read_node(self.node_name, _request_timeout=self.timeout)
        )
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        state = OwnNodeState(
            labels=meta.get("labels") or {},
            annotations=meta.get("annotations") or {},
            conditions=(node.get("status") or {}).get("conditions") or [],
            unschedulable=bool(spec.get("unschedulable")),
            taints=spec.get("taints") or [],
        )
        try:
            obj = self.custom.get_cluster_custom_object(
                API_GROUP, API_VERSION, HEALTH_PLURAL, self.node_name, _request_timeout=self.timeout
            )
            state.health_status = obj.get("status") if isinstance(obj, dict) else None
        except self._client.ApiException as exc:
            if exc.status != 404:
                raise
        return state

    def write_conditions(self, conditions: list[dict[str, Any]]) -> None:
        self.core.patch_node_status(
            self.node_name,
            {"status": {"conditions": conditions}},
            field_manager=FIELD_MANAGER,
            _content_type=STRATEGIC_MERGE,
            _request_timeout=self.timeout,
        )

    def write_health_object(self, status: dict[str, Any]) -> None:
        self.custom.patch_cluster_custom_object(
            API_GROUP,
            API_VERSION,
            HEALTH_PLURAL,
            self.node_name,
            health_object_body(self.node_name, status),
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _request_timeout=self.timeout,
        )

    def write_event(self, event: EventRecord) -> None:
        body = event_body(self.node_name, self.namespace, event)
        if event.count > event.added:  # an earlier write created it: bump the count
            patch = {k: body[k] for k in ("count", "lastTimestamp", "message", "type")}
            try:
                self.core.patch_namespaced_event(
                    event.name, self.namespace, patch, field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH,
                    _request_timeout=self.timeout,
                )
                return
            except self._client.ApiException as exc:
                if exc.status != 404:  # expired (event TTL): create it again below
                    raise
        try:
            # The client sends a plain dict as is; its annotation names only the generated model class.
            self.core.create_namespaced_event(self.namespace, body, field_manager=FIELD_MANAGER,  # type: ignore[arg-type]
                                              _request_timeout=self.timeout)
        except self._client.ApiException as exc:
            if exc.status != 409:
                raise
            patch = {k: body[k] for k in ("count", "lastTimestamp", "message", "type")}
            self.core.patch_namespaced_event(
                event.name, self.namespace, patch, field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH,
                _request_timeout=self.timeout,
            )

    def apply_node_actions(self, request: NodeActionRequest, now: float) -> None:
        for _attempt in range(3):
            node = self.api_client.sanitize_for_serialization(
                self.core.read_node(self.node_name, _request_timeout=self.timeout)
            )
            meta = node.get("metadata") or {}
            spec = node.get("spec") or {}
            patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {}}
            if request.manage_taint:
                taints = spec.get("taints") or []
                new = desired_taints(taints, request)
                if new != taints:
                    patch["spec"]["taints"] = new
            if request.cordon is True and not spec.get("unschedulable"):
                patch["spec"]["unschedulable"] = True
                patch["metadata"]["annotations"] = {
                    ANNOTATION_CORDONED_BY: AGENT_COMPONENT,
                    ANNOTATION_CORDON_REASON: request.reason[:256],
                    ANNOTATION_CORDON_TIMESTAMP: rfc3339(now),
                }
            elif request.cordon is False and spec.get("unschedulable"):
                if cordon_is_ours(meta):  # only undo our own cordon (the admission policy checks the same)
                    patch["spec"]["unschedulable"] = False
                    patch["metadata"]["annotations"] = dict.fromkeys(CORDON_ANNOTATIONS)
            if not patch["spec"]:
                return
            try:
                self.core.patch_node(
                    self.node_name,
                    patch,
                    field_manager=FIELD_MANAGER,
                    dry_run="All" if request.dry_run else None,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.timeout,
                )
                log.info("node actions applied%s: %s", " (dry run)" if request.dry_run else "", json.dumps(patch))
                return
            except self._client.ApiException as exc:
                if exc.status != 409:
                    raise
        raise RuntimeError(f"could not update node {self.node_name}: resourceVersion conflicts 3 times")
