"""Names the GPU health model writes to Kubernetes, in one place so the agent, the manifests and
the TUI agree (API group, condition types, taint, annotations, labels), and its two limits."""

from __future__ import annotations

API_GROUP = "tau-tui.io"
API_VERSION = "v1alpha1"
HEALTH_KIND = "GPUNodeHealth"
HEALTH_PLURAL = "gpunodehealths"
CONDITION_UNHEALTHY = "GPUUnhealthy"
CONDITION_DEGRADED = "GPUDegraded"
TAINT_UNHEALTHY_KEY = f"{API_GROUP}/gpu-unhealthy"
ANNOTATION_CORDONED_BY = f"{API_GROUP}/cordoned-by"
ANNOTATION_CORDON_REASON = f"{API_GROUP}/cordon-reason"
ANNOTATION_CORDON_TIMESTAMP = f"{API_GROUP}/cordon-timestamp"
#: The agent's cordon bookkeeping: set together when it cordons, removed together when a cordon ends.
CORDON_ANNOTATIONS = (ANNOTATION_CORDONED_BY, ANNOTATION_CORDON_REASON, ANNOTATION_CORDON_TIMESTAMP)
LABEL_MANAGED = f"{API_GROUP}/gpu-health-managed"
LABEL_EXPECTED_GPU_COUNT = "nvidia.com/gpu.count"
AGENT_COMPONENT = "tau-agent"

# A heartbeat older than this many heartbeat periods means the agent is gone: unknown.
STALE_AFTER_PERIODS = 2.5
MESSAGE_LIMIT = 1024
