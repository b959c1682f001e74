"""What the MultiKueue steps need from an API server, for the manager and each
worker alike: get/list/create/patch/delete, ``/version``, and the access and
identity reviews (SelfSubjectReview, SelfSubjectAccessReview,
SelfSubjectRulesReview, SubjectAccessReview).

:class:`BackendAccess` puts this over a backend's API primitives
(``core/cluster/common.py``), so the real and the simulated backend answer
through the same code; a worker reached with its own kubeconfig is a backend
that is never started (no watches)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import describe_api_error
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import KUEUE_GROUP, KUEUE_VERSION

SECRET = ResourceType("", "v1", "secrets", "Secret", True)
SERVICE_ACCOUNT = ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True)
PVC = ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
STORAGE_CLASS = ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
CRD = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
DEPLOYMENT = ResourceType("apps", "v1", "deployments", "Deployment", True)
NETWORK_POLICY = ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True)
TOPOLOGY = ResourceType(KUEUE_GROUP, KUEUE_VERSION, "topologies", "Topology", False)
SELF_SUBJECT_REVIEW = ResourceType("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False)
SSAR = ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False)
SSRR = ResourceType("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False)
SAR = ResourceType("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False)
R = ResourceKind


class AccessError(Exception):
    """An API call failed; ``message`` names the verb, resource and what to do."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Permission:
    verb: str
    group: str
    resource: str
    namespace: str | None = None
    subresource: str = ""

    def __str__(self) -> str:
        res = self.resource + (f"/{self.subresource}" if self.subresource else "")
        res = f"{res}.{self.group}" if self.group else res
        return f"{self.verb} {res}" + (f" in {self.namespace}" if self.namespace else " (cluster scope)")


class BackendAccess:
    """The API of one cluster through a backend's primitives."""

    def __init__(self, backend: BaseBackend, name: str):
        self.backend = backend
        self.name = name

    def _fail(self, exc: ApiFailure, verb: str, rt: ResourceType, name: str = "", namespace: str | None = None) -> AccessError:
        text = describe_api_error(exc.code, verb=verb, resource=rt.qualified, namespace=namespace, name=name or None,
                                  body=exc.body, reason=exc.reason)
        return AccessError(f"{self.name}: {text}", exc.code)

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self.backend._api_get(rt, name, namespace if rt.namespaced else None)
        except ApiFailure as exc:
            if exc.code == 404:
                return None
            raise self._fail(exc, "get", rt, name, namespace) from None

    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        try:
            return self.backend._api_list(rt, namespace if rt.namespaced else None, label_selector)
        except ApiFailure as exc:
            if exc.code == 404 and rt.group not in ("", "apps", "batch"):
                return []  # the CRD is not installed: nothing of that kind exists
            raise self._fail(exc, "list", rt, "", namespace) from None

    def create(self, rt: ResourceType, body: Mapping[str, Any], namespace: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        name = (body.get("metadata") or {}).get("name", "")
        try:
            return self.backend._api_create(rt, namespace if rt.namespaced else None, body, dry_run)
        except ApiFailure as exc:
            raise self._fail(exc, "create", rt, name, namespace) from None

    def patch(self, rt: ResourceType, name: str, patch: Mapping[str, Any], namespace: str | None = None,
              dry_run: bool = False) -> dict[str, Any]:
        try:
            return self.backend._api_patch(rt, name, namespace if rt.namespaced else None, patch, dry_run)
        except ApiFailure as exc:
            raise self._fail(exc, "patch", rt, name, namespace) from None

    def delete(self, rt: ResourceType, name: str, namespace: str | None = None, dry_run: bool = False) -> bool:
        """False when it was already gone."""
        try:
            self.backend._api_delete(rt, name, namespace if rt.namespaced else None, dry_run)
            return True
        except ApiFailure as exc:
            if exc.code == 404:
                return False
            raise self._fail(exc, "delete", rt, name, namespace) from None

    def version(self) -> str:
        try:
            body = self.backend._server_version()
        except ApiFailure as exc:
            raise AccessError(f"{self.name}: GET /version failed: {exc.message or exc.reason or exc.code}", exc.code) from None
        return str(body.get("gitVersion") or f"v{body.get('major', '?')}.{body.get('minor', '?')}")

    # -- reviews -----------------------------------------------------------

    def whoami(self) -> str:
        """The authenticated user (SelfSubjectReview); raises AccessError (401 when the credential is rejected)."""
        try:
            out = self.backend._api_create(SELF_SUBJECT_REVIEW, None, {"apiVersion": SELF_SUBJECT_REVIEW.api_version,
                                                                     "kind": SELF_SUBJECT_REVIEW.kind, "metadata": {}}, False)
        except ApiFailure as exc:
            if exc.code == 401:
                raise AccessError(f"{self.name}: the credential is not accepted (401 Unauthorized)", 401) from None
            raise self._fail(exc, "create", SELF_SUBJECT_REVIEW) from None
        return str(((out.get("status") or {}).get("userInfo") or {}).get("username") or "unknown")

    @staticmethod
    def _attributes(p: Permission) -> dict[str, Any]:
        attrs = {"verb": p.verb, "group": p.group, "resource": p.resource}
        if p.namespace:
            attrs["namespace"] = p.namespace
        if p.subresource:
            attrs["subresource"] = p.subresource
        return attrs

    def can(self, permission: Permission) -> bool:
        """SelfSubjectAccessReview."""
        body = {"apiVersion": SSAR.api_version, "kind": SSAR.kind, "metadata": {},
                "spec": {"resourceAttributes": self._attributes(permission)}}
        try:
            out = self.backend._api_create(SSAR, None, body, False)
        except ApiFailure as exc:
            raise self._fail(exc, "create", SSAR) from None
        return bool((out.get("status") or {}).get("allowed"))

    def user_can(self, user: str, permission: Permission, groups: Sequence[str] = ()) -> bool:
        """SubjectAccessReview for someone else (a tenant)."""
        spec: dict[str, Any] = {"user": user, "resourceAttributes": self._attributes(permission)}
        if groups:
            spec["groups"] = list(groups)
        body = {"apiVersion": SAR.api_version, "kind": SAR.kind, "metadata": {}, "spec": spec}
        try:
            out = self.backend._api_create(SAR, None, body, False)
        except ApiFailure as exc:
            raise self._fail(exc, "create", SAR) from None
        return bool((out.get("status") or {}).get("allowed"))

    def rules(self, namespace: str) -> tuple[builtins.list[dict[str, Any]], bool]:
        """SelfSubjectRulesReview: the resource rules that apply in ``namespace``, and whether the list is
        complete (an authorizer that cannot list its rules, such as a webhook, answers ``incomplete``)."""
        body = {"apiVersion": SSRR.api_version, "kind": SSRR.kind, "metadata": {}, "spec": {"namespace": namespace}}
        try:
            out = self.backend._api_create(SSRR, None, body, False)
        except ApiFailure as exc:
            raise self._fail(exc, "create", SSRR) from None
        status = out.get("status") or {}
        return list(status.get("resourceRules") or ()), not status.get("incomplete")
