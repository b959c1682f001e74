"""Every resource kind the cache holds, with its API coordinates."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tau_gpuhealth.names import API_GROUP as _HEALTH_GROUP
from tau_gpuhealth.names import API_VERSION as _HEALTH_VERSION
from tau_gpuhealth.names import HEALTH_KIND as _HEALTH_KIND
from tau_gpuhealth.names import HEALTH_PLURAL as _HEALTH_PLURAL
from tau_tui.core.cluster.names import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    RAY_GROUP,
    RAY_VERSION,
    TAU_GROUP,
    TAU_VERSION,
)


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

    def __reduce__(self) -> tuple[Any, tuple[str, str, str, str, bool]]:
        return (_unpickled_type, (self.group, self.version, self.plural, self.kind, self.namespaced))


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
    #: (coordinates from :mod:`tau_gpuhealth.names`, one object per node).
    GPU_HEALTH = ResourceType(_HEALTH_GROUP, _HEALTH_VERSION, _HEALTH_PLURAL, _HEALTH_KIND, False)
    TAU_CLUSTER = ResourceType(TAU_GROUP, TAU_VERSION, "clusters", "TauCluster", False)
    TAU_WORKSPACE = ResourceType(TAU_GROUP, TAU_VERSION, "workspaces", "TauWorkspace", True)

    @property
    def type(self) -> ResourceType:
        return self.value

    @classmethod
    def for_kind(cls, api_version: str, kind: str) -> ResourceKind | None:
        """The kind for a manifest's ``apiVersion``/``kind`` (any version of the group)."""
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        for member in cls:
            if member.value.kind == kind and member.value.group == group:
                return member
        return None


GPU_HEALTH_TYPE = ResourceKind.GPU_HEALTH.value

_KIND_TYPES = {member.value: member.value for member in ResourceKind}


def _unpickled_type(group: str, version: str, plural: str, kind: str, namespaced: bool) -> ResourceType:
    """A type from another process (the simulated cluster's): a watched kind's own instance, since
    the simulator compares types with ``is``."""
    made = ResourceType(group, version, plural, kind, namespaced)
    return _KIND_TYPES.get(made, made)

#: Kinds whose objects :meth:`ClusterBackend.create_multikueue_object` and
#: :meth:`ClusterBackend.delete_multikueue_object` accept.
MULTIKUEUE_KINDS = (
    ResourceKind.MULTIKUEUE_CLUSTER,
    ResourceKind.MULTIKUEUE_CONFIG,
    ResourceKind.ADMISSION_CHECK,
)
