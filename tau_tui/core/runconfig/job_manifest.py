"""Render a resolved run as a `batch/v1` Job, plus a headless Service for multi-node torchrun (taugrid.md §5.1)."""

from __future__ import annotations

import posixpath
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.manifest_parts import (
    GPU_TOLERATIONS,
    MANAGED_BY_MULTIKUEUE,
    SOURCE_DIR,
    TAU,
    TERMINATION_GRACE_SECONDS,
    TORCHRUN_PORT,
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
from tau_tui.core.runconfig.schema import TauConfig


def pod_failure_policy(c: TauConfig) -> dict[str, Any]:
    """retry_on decides which failures count against backoffLimit (= max_retries); everything else fails the Job."""
    retry = set(c.resilience.retry_on)
    rules: list[dict[str, Any]] = [
        {
            "action": "Count" if retry & {"Preempted", "Evicted"} else "FailJob",
            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
        }
    ]
    if "OOMKilled" in retry:
        rules.append({"action": "Count", "onExitCodes": {"containerName": "main", "operator": "In", "values": [137]}})
    rules.append({"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [0]}})
    return {"rules": rules}


def render_job(loaded: LoadedConfig, r: Resolution, submission_id: str) -> list[dict[str, Any]]:
    c = loaded.config
    name = str(c.run.name)
    if not c.runtime.image:
        raise DiagnosticError([loaded.diagnostic(("runtime", "image"), "is required for a Job", "set runtime.image (or the top-level image)")])
    payload = payload_of(loaded)
    labels = run_labels(loaded, r, submission_id)
    annotations = run_annotations(loaded, r, payload)
    volumes, mounts = storage_volumes(loaded, payload)
    pod_security, container_security = restricted_security(c)
    launcher = c.execution.launcher or "python"
    processes = c.execution.processes_per_node or max(r.gpus, 1)
    extra_env: list[dict[str, Any]] = []
    command: list[str] | None = None
    script_root = SOURCE_DIR if c.run.source is not None else SCRIPT_DIR
    if c.run.entrypoint:
        script = posixpath.join(script_root, c.run.entrypoint)
        if launcher == "torchrun":
            if r.nodes > 1:
                extra_env += [
                    {"name": "MASTER_ADDR", "value": f"{name}-0.{name}-headless"},
                    {"name": "MASTER_PORT", "value": str(TORCHRUN_PORT)},
                ]
                command = [
                    "torchrun", f"--nnodes={r.nodes}", f"--nproc-per-node={processes}", "--node-rank=$(JOB_COMPLETION_INDEX)",
                    "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)", script,
                ]
            else:
                command = ["torchrun", "--standalone", "--nnodes=1", f"--nproc-per-node={processes}", script]
        else:
            command = script_command(c.run.entrypoint) if c.run.source is None else ["python", script]
    offload = offload_for(loaded, r, submission_id)
    if offload is not None and command:
        command = offload.wrap(command)
        annotations.update(offload.annotations)
        volumes.append(offload.volume)
        mounts.append(offload.mount)
    if launcher == "torchrun" and processes > 1:
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    init_containers: list[dict[str, Any]] = []
    if payload is not None:
        init_containers.append(payload_init(payload, c.runtime.image))
    if c.run.source is not None:
        volumes.append({"name": "tau-source", "emptyDir": {}})
        mounts.append({"name": "tau-source", "mountPath": SOURCE_DIR})
        source_path = c.run.source.path or "/"
        init_containers.append({
            "name": "tau-source",
            "image": c.run.source.image,
            "command": ["sh", "-c", f"cp -a {source_path.rstrip('/')}/. {SOURCE_DIR}/"],
            "volumeMounts": [{"name": "tau-source", "mountPath": SOURCE_DIR}],
        })
    for asset in c.storage.image_assets:
        volume = f"tau-asset-{asset.name}"
        volumes.append({"name": volume, "emptyDir": {}})
        mounts.append({"name": volume, "mountPath": asset.mount_path, "readOnly": True})
        init_containers.append({
            "name": volume,
            "image": asset.image,
            "command": ["sh", "-c", f"cp -a {asset.source_path.rstrip('/')}/. /tau-asset/"],
            "volumeMounts": [{"name": volume, "mountPath": "/tau-asset"}],
        })
    gpu = {"nvidia.com/gpu": str(r.gpus)} if r.gpus else {}
    container: dict[str, Any] = {"name": "main", "image": c.runtime.image}
    if command:
        container["command"] = command
    working_dir = c.runtime.working_dir or (SOURCE_DIR if c.run.source is not None else ("/data" if c.storage.data_pvc else None))
    if working_dir:
        container["workingDir"] = working_dir
    env = container_env(loaded, r, extra_env)
    if env:
        container["env"] = env
    resources = resource_block(
        {"cpu": c.compute.cpu_request, "memory": c.compute.memory_request, **gpu},
        {"cpu": c.compute.cpu_limit, "memory": c.compute.memory_limit, **gpu},
    )
    if resources:
        container["resources"] = resources
    container["volumeMounts"] = mounts
    if container_security:
        container["securityContext"] = container_security
    for init in init_containers:
        if container_security:
            init["securityContext"] = container_security
    node_selector = dict(c.policy.node_selector)
    if c.policy.gpu_class and c.policy.gpu_class != "any":
        node_selector = {f"{TAU}/gpu-class": c.policy.gpu_class, **node_selector}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS}
    if r.pod_priority_class:
        pod_spec["priorityClassName"] = r.pod_priority_class
    if r.nodes > 1:
        pod_spec["subdomain"] = f"{name}-headless"
    if node_selector:
        pod_spec["nodeSelector"] = dict(sorted(node_selector.items()))
    if r.gpus:
        pod_spec["tolerations"] = [dict(t) for t in GPU_TOLERATIONS]
    if pod_security:
        pod_spec["securityContext"] = pod_security
    if init_containers:
        pod_spec["initContainers"] = init_containers
    pod_spec["containers"] = [container] + ([offload.sidecar] if offload is not None else [])
    pod_spec["volumes"] = volumes
    template_meta: dict[str, Any] = {"labels": dict(labels)}
    topology = topology_annotations(r)
    if topology:
        template_meta["annotations"] = topology
    spec: dict[str, Any] = {"suspend": True}
    if r.multikueue:
        spec["managedBy"] = MANAGED_BY_MULTIKUEUE
    spec["backoffLimit"] = c.resilience.max_retries
    spec["ttlSecondsAfterFinished"] = r.ttl_seconds_after_finished
    if r.nodes > 1:
        spec.update(completionMode="Indexed", completions=r.nodes, parallelism=r.nodes)
    spec["podFailurePolicy"] = pod_failure_policy(c)
    spec["template"] = {"metadata": template_meta, "spec": pod_spec}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": r.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }
    out = [job]
    if r.nodes > 1:
        out.append({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{name}-headless", "namespace": r.namespace, "labels": run_labels(loaded, r, submission_id, with_queue=False)},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"job-name": name}},
        })
    return out
