"""The API coordinates of the kinds a rendered submission may hold beyond the watched ones."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType

#: Kinds a rendered submission may contain beyond the watched ones.
EXTRA_TYPES: dict[tuple[str, str], ResourceType] = {
    ("", "Service"): ResourceType("", "v1", "services", "Service", True),
    ("", "ConfigMap"): ResourceType("", "v1", "configmaps", "ConfigMap", True),
    ("", "Secret"): ResourceType("", "v1", "secrets", "Secret", True),
    ("", "ServiceAccount"): ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("", "PersistentVolumeClaim"): ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("ray.io", "RayCluster"): ResourceType("ray.io", "v1", "rayclusters", "RayCluster", True),
    ("policy", "PodDisruptionBudget"): ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    ("rbac.authorization.k8s.io", "Role"): ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ResourceType(
        "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True
    ),
    ("rbac.authorization.k8s.io", "ClusterRole"): ResourceType(
        "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ResourceType(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
}
PDB_TYPE = EXTRA_TYPES[("policy", "PodDisruptionBudget")]


def resource_type_from_table(api_version: str, kind: str) -> ResourceType | None:
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    member = ResourceKind.for_kind(api_version, kind)
    if member is not None:
        return member.type
    return EXTRA_TYPES.get((group, kind))
