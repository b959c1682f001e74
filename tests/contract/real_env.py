"""The contract environment on a harness control plane (real kube-apiserver + Kueue)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.kubeconfig import KubeconfigSource
from tau_tui.core.cluster.real import KubernetesBackend, _Http, resource_path
from tests.contract.envs import READ_RESOURCES, wait_real


class RealEnv:
    name = "real"
    has_pods = True

    def __init__(self, plane, tier: str):
        self.plane = plane
        self.tier = tier
        self.has_visibility_api = bool(getattr(plane, "has_visibility_api", False))
        self.admin = _Http(KubeconfigSource(plane.kubeconfig).api_client(None))
        self.backends: list[ClusterBackend] = []
        self.namespaces: list[str] = []

    def _start(self, backend: KubernetesBackend) -> KubernetesBackend:
        backend.start()
        self.backends.append(backend)
        assert backend.wait_synced(timeout=60), "cache did not sync within 60 s"
        return backend

    def backend(self, namespace: str | None = None) -> ClusterBackend:
        return self._start(KubernetesBackend(self.plane.kubeconfig, namespace=namespace, all_namespaces=namespace is None))

    def restricted_backend(self, namespace: str, deny: tuple[str, ...]) -> ClusterBackend:
        sa = f"restricted-{uuid.uuid4().hex[:6]}"
        kubeconfig = self.plane.kubeconfig_for_serviceaccount(namespace, sa)
        rules = []
        for group, plural in READ_RESOURCES:
            qualified = f"{plural}.{group}" if group else plural
            if qualified in deny:
                continue
            rules.append({"apiGroups": [group], "resources": [plural], "verbs": ["get", "list", "watch"]})
        rules.append({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]})
        role = f"tau-contract-{sa}"
        self.create(ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}, "rules": rules})
        self.create(ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                     "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]})
        return self._start(KubernetesBackend(kubeconfig, namespace=namespace))

    def unique_namespace(self, prefix: str = "ct") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.create(ResourceKind.NAMESPACE.type, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self.namespaces.append(name)
        return name

    def create(self, rt: ResourceType, obj: Mapping[str, Any]) -> dict:
        ns = (obj.get("metadata") or {}).get("namespace")
        return self.admin.request("POST", resource_path(rt, ns), body=dict(obj))

    def patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict:
        return self.admin.request("PATCH", resource_path(rt, namespace, name), body=dict(patch),
                                  content_type="application/merge-patch+json")

    def delete(self, rt: ResourceType, name: str, namespace: str | None) -> None:
        self.admin.request("DELETE", resource_path(rt, namespace, name))

    def read(self, rt: ResourceType, name: str, namespace: str | None) -> dict | None:
        try:
            return self.admin.request("GET", resource_path(rt, namespace, name))
        except ApiFailure as exc:
            if exc.code == 404:
                return None
            raise

    def settle(self, predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
        return wait_real(predicate, timeout)

    def break_log_streams(self) -> None:
        self.plane.stop_apiserver(kill=True)
        self.plane.start_apiserver()

    def close(self) -> None:
        for backend in self.backends:
            backend.close()
        self._remove_namespaces()

    def _remove_namespaces(self) -> None:
        """Delete this test's namespaces, their pods at once: pods kept Running (KWOK, for an hour) would
        otherwise hold GPUs on the tier's nodes that later tests on the same tier need whole."""
        pods = ResourceKind.POD.type
        for namespace in self.namespaces:
            with contextlib.suppress(ApiFailure):  # the test deleted it itself
                self.admin.request("DELETE", resource_path(ResourceKind.NAMESPACE.type, None, namespace))
            for pod in self.admin.request("GET", resource_path(pods, namespace)).get("items", []):
                with contextlib.suppress(ApiFailure):  # gone already
                    self.admin.request("DELETE", resource_path(pods, namespace, pod["metadata"]["name"]),
                                       query=[("gracePeriodSeconds", 0)])
        assert wait_real(lambda: not any(self.admin.request("GET", resource_path(pods, namespace)).get("items")
                                         for namespace in self.namespaces), 60), \
            f"pods of {self.namespaces} still exist 60 s after their force deletion"
