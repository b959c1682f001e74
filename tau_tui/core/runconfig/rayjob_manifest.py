"""Render a resolved run as a `ray.io/v1` RayJob (taugrid.md §5.2)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.manifest_parts import (
    GPU_TOLERATIONS,
    MANAGED_BY_MULTIKUEUE,
    RAY_CPU_IMAGE,
    RAY_GPU_IMAGE,
    RAYJOB_TTL_SECONDS,
    TAU,
    TERMINATION_GRACE_SECONDS,
    container_env,
    resource_block,
    restricted_security,
    run_annotations,
    run_labels,
    storage_volumes,
    topology_annotations,
)
from tau_tui.core.runconfig.metrics_offload import offload_for
from tau_tui.core.runconfig.payload import SCRIPT_DIR, payload_init, payload_of, script_command
from tau_tui.core.runconfig.resolve import Resolution


def render_rayjob(loaded: LoadedConfig, r: Resolution, submission_id: str) -> list[dict[str, Any]]:
    c = loaded.config
    name = str(c.run.name)
    payload = payload_of(loaded)
    assert payload is not None  # rules.py requires an entrypoint for RayJob
    image = c.runtime.image or (RAY_GPU_IMAGE if r.gpus_per_worker else RAY_CPU_IMAGE)
    labels = run_labels(loaded, r, submission_id)
    annotations = run_annotations(loaded, r, payload)
    pod_security, container_security = restricted_security(c)
    volumes, mounts = storage_volumes(loaded, payload)
    env = container_env(loaded, r, [])
    pod_annotations = {"adx-mon/scrape": "true", "adx-mon/port": "8080"}

    offload = offload_for(loaded, r, submission_id)
    if offload is not None:
        annotations.update(offload.annotations)

    def pod(container: dict[str, Any], extra_spec: dict[str, Any], annotations_: dict[str, str],
            with_offload: bool = False) -> dict[str, Any]:
        sidecar = offload if with_offload else None
        container["volumeMounts"] = [dict(m) for m in mounts] + ([dict(sidecar.mount)] if sidecar else [])
        if env:
            container["env"] = [dict(e) for e in env]
        if container_security:
            container["securityContext"] = container_security
        init = payload_init(payload, image)
        if container_security:
            init["securityContext"] = container_security
        spec: dict[str, Any] = {"terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS}
        if r.pod_priority_class:
            spec["priorityClassName"] = r.pod_priority_class
        spec.update(extra_spec)
        if pod_security:
            spec["securityContext"] = pod_security
        spec["initContainers"] = [init]
        spec["containers"] = [container] + ([sidecar.sidecar] if sidecar else [])
        spec["volumes"] = copy.deepcopy(volumes) + ([dict(sidecar.volume)] if sidecar else [])
        return {"metadata": {"labels": dict(labels), "annotations": dict(annotations_)}, "spec": spec}

    head_container: dict[str, Any] = {
        "name": "ray-head",
        "image": image,
        "ports": [
            {"name": "gcs", "containerPort": 6379},
            {"name": "dashboard", "containerPort": 8265},
            {"name": "client", "containerPort": 10001},
        ],
    }
    head_resources = resource_block(
        {"cpu": c.compute.head_cpu_request or c.compute.cpu_request, "memory": c.compute.head_memory_request or c.compute.memory_request},
        {"cpu": c.compute.head_cpu_limit or c.compute.cpu_limit, "memory": c.compute.head_memory_limit or c.compute.memory_limit},
    )
    if head_resources:
        head_container["resources"] = head_resources
    # The head is control-only and belongs on the system pool, or on any node where pools are not labelled.
    head_affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.azure.com/mode", "operator": "In", "values": ["system"]}]},
        {"matchExpressions": [{"key": "kubernetes.azure.com/mode", "operator": "DoesNotExist"}]},
    ]}}}
    gpu_resource = f"nvidia.com/mig-{c.compute.mig_profile}" if c.compute.gpu_resource_mode == "mig" else "nvidia.com/gpu"
    gpu = {gpu_resource: str(r.gpus_per_worker)} if r.gpus_per_worker else {}
    worker_container: dict[str, Any] = {"name": "ray-worker", "image": image}
    worker_resources = resource_block(
        {"cpu": c.compute.worker_cpu_request or c.compute.cpu_request, "memory": c.compute.worker_memory_request or c.compute.memory_request, **gpu},
        {"cpu": c.compute.worker_cpu_limit or c.compute.cpu_limit, "memory": c.compute.worker_memory_limit or c.compute.memory_limit, **gpu},
    )
    if worker_resources:
        worker_container["resources"] = worker_resources
    worker_spec: dict[str, Any] = {}
    node_selector = dict(c.policy.node_selector)
    if c.policy.gpu_class and c.policy.gpu_class != "any":
        node_selector = {f"{TAU}/gpu-class": c.policy.gpu_class, **node_selector}
    if node_selector:
        worker_spec["nodeSelector"] = dict(sorted(node_selector.items()))
    if r.gpus_per_worker:
        worker_spec["tolerations"] = [dict(t) for t in GPU_TOLERATIONS]
    runtime_env: dict[str, Any] = {}
    if c.runtime.pip:
        runtime_env["pip"] = list(c.runtime.pip)
    if payload.is_archive:
        runtime_env["env_vars"] = {"PYTHONPATH": SCRIPT_DIR}
        entrypoint = f"cd {SCRIPT_DIR} && python {payload.entry}"
    else:
        entrypoint = " ".join(script_command(payload.entry))
    if offload is not None:
        entrypoint = offload.wrap_shell(entrypoint)
    spec: dict[str, Any] = {"suspend": True}
    if r.multikueue:
        spec["managedBy"] = MANAGED_BY_MULTIKUEUE
    spec["entrypoint"] = entrypoint
    if runtime_env:
        spec["runtimeEnvYAML"] = yaml.safe_dump(runtime_env, sort_keys=True)
    spec["shutdownAfterJobFinishes"] = True
    spec["ttlSecondsAfterFinished"] = RAYJOB_TTL_SECONDS
    if c.resilience.max_retries:
        spec["backoffLimit"] = c.resilience.max_retries
    spec["rayClusterSpec"] = {
        "headGroupSpec": {
            "rayStartParams": {"num-cpus": "0", "num-gpus": "0", "dashboard-host": "0.0.0.0"},
            "template": pod(head_container, {"affinity": head_affinity}, pod_annotations, with_offload=True),
        },
        "workerGroupSpecs": [{
            "groupName": f"{name}-w",
            "replicas": r.workers,
            "minReplicas": r.workers,
            "maxReplicas": r.workers,
            "rayStartParams": {"num-gpus": str(r.gpus_per_worker)},
            "template": pod(worker_container, worker_spec, {**pod_annotations, **topology_annotations(r)}),
        }],
    }
    if c.compute.cpu_workers:
        cpu_container: dict[str, Any] = {"name": "ray-worker", "image": image}
        cpu_resources = resource_block(
            {"cpu": c.compute.worker_cpu_request or c.compute.cpu_request, "memory": c.compute.worker_memory_request or c.compute.memory_request},
            {"cpu": c.compute.worker_cpu_limit or c.compute.cpu_limit, "memory": c.compute.worker_memory_limit or c.compute.memory_limit},
        )
        if cpu_resources:
            cpu_container["resources"] = cpu_resources
        cpu_spec = {"nodeSelector": worker_spec["nodeSelector"]} if "nodeSelector" in worker_spec else {}
        spec["rayClusterSpec"]["workerGroupSpecs"].append({
            "groupName": f"{name}-cpu",
            "replicas": c.compute.cpu_workers,
            "minReplicas": c.compute.cpu_workers,
            "maxReplicas": c.compute.cpu_workers,
            "rayStartParams": {"num-gpus": "0"},
            "template": pod(cpu_container, cpu_spec, dict(pod_annotations)),
        })
    return [{
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": r.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }]
