"""Names the cluster access layer shares: API groups and versions, label keys, the MultiKueue
controller name and the GPU extended-resource names every node view reports."""

from __future__ import annotations

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


def is_gpu_resource(name: str) -> bool:
    """True for ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` and MIG names."""
    return name in GPU_RESOURCE_NAMES or name.startswith(MIG_RESOURCE_PREFIX)
