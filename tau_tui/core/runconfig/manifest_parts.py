"""What a Job and a RayJob share (taugrid.md §5): labels, annotations, env, resources, volumes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.metrics_offload import history_annotations
from tau_tui.core.runconfig.payload import SCRIPT_DIR, Payload
from tau_tui.core.runconfig.profiler import profiler_contract
from tau_tui.core.runconfig.resolve import Resolution
from tau_tui.core.runconfig.rules import PVC_MOUNT_SPEC
from tau_tui.core.runconfig.schema import TauConfig

MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TAU = "tau.azure.com"
SOURCE_DIR = "/tau/source"
TERMINATION_GRACE_SECONDS = 600
RAYJOB_TTL_SECONDS = 15  # releases capacity soon after Kueue frees the quota (§5.2)
TORCHRUN_PORT = 29500
RAY_GPU_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0"
RAY_CPU_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.54.0"
GPU_TOLERATIONS = [
    {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]
# Kueue topology-aware scheduling levels per placement (core/topology/topology.go).
PLACEMENT_LEVELS = {
    "same-host": "kubernetes.io/hostname",
    "same-accelerator-domain": f"{TAU}/accelerator-domain",
    "same-network-domain": f"{TAU}/network-domain",
    "same-site": f"{TAU}/site",
}


def submission_id_for(loaded: LoadedConfig, resolution: Resolution) -> str:
    """Same file, same target: same id, so a re-submit is recognised instead of duplicated."""
    seed = f"{loaded.config_hash}\n{resolution.namespace}\n{loaded.config.run.name}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]



def run_labels(loaded: LoadedConfig, r: Resolution, submission_id: str, with_queue: bool = True) -> dict[str, str]:
    c = loaded.config
    labels: dict[str, str] = {}
    if with_queue:
        labels[QUEUE_LABEL] = r.queue
        if r.workload_priority_class:
            labels[PRIORITY_LABEL] = r.workload_priority_class
    labels[f"{TAU}/managed-by"] = "tau"
    labels[f"{TAU}/run"] = str(c.run.name)
    labels[f"{TAU}/workload-kind"] = loaded.engine
    labels[f"{TAU}/submission-id"] = submission_id
    optional = {
        "team": r.team,
        "lane": r.lane,
        "gpu-class": c.policy.gpu_class if c.policy.gpu_class and c.policy.gpu_class != "any" else None,
        "topology": r.placement,
        "workspace": r.workspace,
        "profile": r.profile.name if r.profile else None,
        "experiment": c.experiment.name,
        "stellar-project": c.experiment.project,
        "stellar-experiment": c.experiment.name,
        "stellar-group": c.experiment.group,
        "shape": c.policy.shape,
        "preset": c.policy.preset,
    }
    for key, value in optional.items():
        if value:
            labels[f"{TAU}/{key}"] = str(value)
    return labels


def run_annotations(loaded: LoadedConfig, r: Resolution, payload: Payload | None) -> dict[str, str]:
    c = loaded.config
    notes: dict[str, str] = {f"{TAU}/config-hash": loaded.config_hash}
    if r.profile is not None:
        notes[f"{TAU}/tau-cluster-generation"] = str(r.profile_set.generation)
        notes[f"{TAU}/workload-profile-set-hash"] = r.profile_set.profile_set_hash
        notes[f"{TAU}/workload-profile"] = r.profile.name
    if r.cluster_queue:
        notes[f"{TAU}/cluster-queue"] = r.cluster_queue
    if c.runtime.image:
        notes[f"{TAU}/image"] = c.runtime.image
    if payload is not None:
        notes[f"{TAU}/payload-digest"] = payload.digest
    execution = {
        "engine": loaded.engine,
        "launcher": c.execution.launcher or ("python" if loaded.engine == "job" else "ray-train"),
        "nodes": r.nodes,
        "gpus": r.gpus if loaded.engine == "job" else r.gpus_per_worker,
        "workers": r.workers,
        "maxRetries": c.resilience.max_retries,
        "retryOn": list(c.resilience.retry_on),
        "backoffInitial": c.resilience.backoff_initial,
        "backoffMax": c.resilience.backoff_max,
    }
    if c.execution.launcher == "ray-tune":
        execution.update(metric=c.execution.metric, mode=c.execution.mode, numSamples=c.execution.num_samples,
                         maxConcurrentTrials=c.execution.max_concurrent_trials, configs=c.execution.configs)
    if c.compute.cpu_workers is not None:
        execution["cpuWorkers"] = c.compute.cpu_workers
    notes[f"{TAU}/workloadspec-execution"] = json.dumps(execution, sort_keys=True, separators=(",", ":"))
    if c.storage.checkpoint:
        notes[f"{TAU}/checkpoint-artifact"] = c.storage.checkpoint
    if r.output:
        notes[f"{TAU}/result-path"] = r.output
    if c.storage.data_pvc:
        notes[f"{TAU}/result-pvc"] = c.storage.data_pvc
    if r.nodes > 1:
        notes[f"{TAU}/multikueue-incompatible"] = "indexed-job-headless-service"
    notes.update(profiler_contract(loaded, r)[1])
    notes.update(history_annotations(loaded, r))
    return notes


def topology_annotations(r: Resolution) -> dict[str, str]:
    # Only when the profile resolved a Kueue Topology: TAS annotations on a flavor without one make the workload inadmissible.
    if r.profile is None or not r.profile.topologies or not r.placement:
        return {}
    level = PLACEMENT_LEVELS.get(r.placement)
    if level:
        return {"kueue.x-k8s.io/podset-required-topology": level}
    return {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}


def container_env(loaded: LoadedConfig, r: Resolution, extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    c = loaded.config
    env: list[dict[str, Any]] = []
    if r.output:
        env.append({"name": "TAU_OUTPUT_DIR", "value": r.output})
    if c.storage.publish == "staged":
        env.append({"name": "TAU_OUTPUT_STAGING_DIR", "value": "/mnt/output-staging"})
    resume = c.resilience.checkpoint_path or (f"/data/checkpoints/finetunes/{c.run.name}" if c.storage.data_pvc else None)
    if resume and "TAU_RESUME_FROM" not in c.runtime.env:
        env.append({"name": "TAU_RESUME_FROM", "value": resume})
    if c.resilience.max_retries and "TAU_RETRY_MAX" not in c.runtime.env:
        env.append({"name": "TAU_RETRY_MAX", "value": str(c.resilience.max_retries)})
    env.extend(profiler_contract(loaded, r)[0])
    env.extend(extra)
    env.extend({"name": k, "value": v} for k, v in c.runtime.env.items())
    for name, ref in c.runtime.env_secret.items():
        secret, _, key = ref.partition(":")
        env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    return env


def resource_block(requests: dict[str, str | None], limits: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    req = {k: v for k, v in requests.items() if v is not None}
    lim = {k: v for k, v in limits.items() if v is not None}
    if req:
        out["requests"] = req
    if lim:
        out["limits"] = lim
    return out


def storage_volumes(loaded: LoadedConfig, payload: Payload | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Volumes and the main container's mounts."""
    c = loaded.config
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if payload is not None:
        volumes.append({"name": "tau-payload", "emptyDir": {}})
        mounts.append({"name": "tau-payload", "mountPath": SCRIPT_DIR})
    if c.storage.data_pvc:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": c.storage.data_pvc}})
        mounts.append({"name": "data", "mountPath": "/data"})
    volumes.append({"name": "tau-hot", "emptyDir": {}})
    mounts.append({"name": "tau-hot", "mountPath": "/mnt"})
    for index, spec in enumerate([*c.storage.volumes, *c.storage.mounts]):
        match = PVC_MOUNT_SPEC.match(spec)
        assert match is not None  # rules.py rejected malformed specs
        name = f"pvc-{index}"
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": match["claim"], "readOnly": match["mode"] == "ro"}})
        mounts.append({"name": name, "mountPath": match["path"], "readOnly": match["mode"] == "ro"})
    return volumes, mounts


def restricted_security(c: TauConfig) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    if c.runtime.security.mode != "restricted":
        return None, None
    pod = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    container = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return pod, container
