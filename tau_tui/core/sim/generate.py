"""Expands a scenario's ``generate`` section (the ``large`` scenario) into
objects: one pass, no per-object YAML, creation times spread over the past
week so Kueue ordering is meaningful."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import QUEUE_NAME_LABEL
from tau_tui.core.sim.node_groups import add_node_group
from tau_tui.core.sim.world import SimulatedCluster

R = ResourceKind


def _pod_template(gpus: int) -> dict[str, Any]:
    resources_ = {"nvidia.com/gpu": str(gpus)}
    return {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "trainer", "image": "ghcr.io/azure/tau-train:1.4.2", "resources": {"requests": resources_, "limits": resources_}}]}}


def generate_large(world: SimulatedCluster, rng: random.Random, source: str, spec: Mapping[str, Any]) -> None:
    store = world.store
    n_workloads = int(spec.get("workloads", 20000))
    n_lq = int(spec.get("localQueues", 50))
    n_cq = int(spec.get("clusterQueues", 10))
    n_nodes = int(spec.get("nodes", 2000))
    gpus_per_node = int(spec.get("gpusPerNode", 8))
    n_ns = int(spec.get("namespaces", 10))
    faulty = int(spec.get("faultyNodes", 0))
    now = world.now()

    namespaces = [f"team-{i:02d}" for i in range(n_ns)]
    for ns in ["default", "kueue-system", *namespaces]:
        store.put(R.NAMESPACE.type, {"metadata": {"name": ns}, "status": {"phase": "Active"}}, notify=False)

    classes = ["h100", "a100"]
    add_node_group(world, {"prefix": "h100-", "count": n_nodes // 2, "gpus": {"nvidia.com/gpu": gpus_per_node},
                   "labels": {"tau.azure.com/gpu-class": "h100"}, "healthObjects": False}, source, "generate.nodes")
    add_node_group(world, {"prefix": "a100-", "count": n_nodes - n_nodes // 2, "gpus": {"nvidia.com/gpu": gpus_per_node},
                   "labels": {"tau.azure.com/gpu-class": "a100"}, "healthObjects": False}, source, "generate.nodes")
    for cls in classes:
        store.put(R.RESOURCE_FLAVOR.type, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                           "metadata": {"name": cls}, "spec": {"nodeLabels": {"tau.azure.com/gpu-class": cls}}})
    for name, value in (("low", 100), ("normal", 1000), ("high", 2000)):
        store.put(R.WORKLOAD_PRIORITY_CLASS.type, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                                   "metadata": {"name": name}, "value": value})
    # Quota: the whole GPU pool split evenly between ClusterQueues, per flavor.
    gpu_per_cq = (n_nodes // 2) * gpus_per_node // n_cq
    for c in range(n_cq):
        store.put(R.CLUSTER_QUEUE.type, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": f"cq-{c:02d}"},
            "spec": {"cohortName": "all", "queueingStrategy": "BestEffortFIFO", "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                         {"name": cls, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpu_per_cq}]} for cls in classes]}]}})
    store.put(R.COHORT.type, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "all"}, "spec": {}})
    queues = []
    for q in range(n_lq):
        ns = namespaces[q % n_ns]
        name = f"lq-{q:02d}"
        store.put(R.LOCAL_QUEUE.type, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                       "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": f"cq-{q % n_cq:02d}"}})
        queues.append((ns, name))

    week = 7 * 24 * 3600
    # One pod template per GPU count, shared by every Job of that count (and by its Workload's pod
    # set): stored objects are never changed in place, and copies of the same few dicts were most
    # of what a Job held, here and in the app's cache it is relayed to (pickle keeps the sharing).
    templates = {gpus: _pod_template(gpus) for gpus in (1, 2, 4, 8)}
    for i in range(n_workloads):
        ns, queue = queues[i % n_lq]
        gpus = rng.choice((1, 2, 4, 8, 8))
        workers = rng.choice((1, 1, 1, 2, 4))
        created = now - timedelta(seconds=week * (n_workloads - i) / n_workloads)
        name = f"job-{i:05d}"
        store.put(R.JOB.type, {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": format_time(created),
                         "labels": {"tau.azure.com/managed-by": "tau", "tau.azure.com/job": name, QUEUE_NAME_LABEL: queue,
                                    "kueue.x-k8s.io/priority-class": rng.choice(("low", "normal", "normal", "high"))},
                         "annotations": {"sim.tau-tui.io/duration-seconds": str(rng.randint(3600, 4 * 86400))}},
            "spec": {"parallelism": workers, "completions": workers, "suspend": True, "template": templates[gpus]},
        }, notify=False)
    for index in range(faulty):
        node = f"h100-{(index * 37) % max(1, n_nodes // 2)}"
        # As the catalog rates them: Xid 79 is always unhealthy (reboot); a degraded GPU has its own code.
        fault = (("unhealthy", "Xid79", "GPU has fallen off the bus (Xid 79)") if index % 3
                 else ("degraded", "Xid92", "High single-bit ECC error rate (Xid 92)"))
        verdict, code, message = fault
        world.at(0, functools.partial(world.gpu_fault, node, verdict, code, message, index % gpus_per_node,
                                      kill_pods=False))
