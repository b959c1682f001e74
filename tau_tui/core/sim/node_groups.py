"""A scenario's node groups: many alike nodes from one entry, for hand-written scenarios and
the generated ``large`` one alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.world import SimulatedCluster

R = ResourceKind


def add_node_group(world: SimulatedCluster, group: Mapping[str, Any], source: str, where: str) -> None:
    """Put ``count`` nodes named ``prefix<i>`` (GPU nodes with the agent's conditions and health
    objects unless told otherwise); ``source`` and ``where`` name the group in an error."""
    prefix = group.get("prefix") or group.get("namePrefix")
    if not prefix:
        raise ClusterError(f"{source}: {where}: a node group needs 'prefix'")
    count = int(group.get("count", 1))
    gpus = {str(k): str(v) for k, v in (group.get("gpus") or {}).items()}
    labels = dict(group.get("labels") or {})
    for index in range(count):
        name = f"{prefix}{index}"
        capacity = {"cpu": str(group.get("cpu", 96)), "memory": str(group.get("memory", "1800Gi")), "pods": "110", **gpus}
        node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels}
        if "nvidia.com/gpu" in gpus:
            node_labels.setdefault("nvidia.com/gpu.count", gpus["nvidia.com/gpu"])
        conditions = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                       "lastTransitionTime": format_time(world.now()), "lastHeartbeatTime": format_time(world.now())}]
        agent = bool(group.get("agent", True)) and bool(gpus)
        if agent:
            stamp = format_time(world.now())
            conditions += [
                {"type": "GPUUnhealthy", "status": "False", "reason": "NoUnhealthyGPUs", "message": "no unhealthy GPU",
                 "lastTransitionTime": stamp, "lastHeartbeatTime": stamp},
                {"type": "GPUDegraded", "status": "False", "reason": "NoDegradedGPUs", "message": "no degraded GPU",
                 "lastTransitionTime": stamp, "lastHeartbeatTime": stamp},
            ]
        world.store.put(R.NODE.type, {
            "metadata": {"name": name, "labels": node_labels},
            "spec": {"unschedulable": True} if group.get("cordoned") else {},
            "status": {"capacity": capacity, "allocatable": dict(capacity), "conditions": conditions,
                       "nodeInfo": {"kubeletVersion": "v1.35.4"}},
        }, notify=False)
        if agent:
            world.gpu_agent.nodes.add(name)
            if group.get("healthObjects", True):
                world.gpu_agent.put_health(name, "healthy", [], world.now())
