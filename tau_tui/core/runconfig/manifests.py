"""Render a resolved run to `batch/v1` Job (+ headless Service) or `ray.io/v1` RayJob (taugrid.md §5).

Output is plain dicts in a fixed key order, so the same input gives byte-identical YAML.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import io
import json
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import DiagnosticError, shown
from tau_tui.core.runconfig.resolve import Resolution
from tau_tui.core.runconfig.rules import PVC_MOUNT_SPEC
from tau_tui.core.runconfig.schema import TauConfig
from tau_tui.core.runconfig.yamlsource import FileRefused, read_regular_file, resolve_inside

MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TAU = "tau.azure.com"
MAX_PAYLOAD_BYTES = 45 * 1024  # rayjobrender.MaxProjectArchiveBytes; keeps the object far below etcd's limit
# What the project archive may read before compression, and how many files it may look at.
MAX_PROJECT_READ_BYTES = 8 * 1024 * 1024
MAX_PROJECT_ENTRIES = 10_000
SCRIPT_DIR = "/script"
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


@dataclass(frozen=True)
class Payload:
    """Script or project archive carried inside the object, so it is self-contained for MultiKueue."""

    data_b64: str
    digest: str
    is_archive: bool
    entry: str


def submission_id_for(loaded: LoadedConfig, resolution: Resolution) -> str:
    """Same file, same target: same id, so a re-submit is recognised instead of duplicated."""
    seed = f"{loaded.config_hash}\n{resolution.namespace}\n{loaded.config.run.name}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def _payload(loaded: LoadedConfig) -> Payload | None:
    c = loaded.config
    if c.run.source is not None or not c.run.entrypoint:
        return None
    working_dir = c.run.working_dir
    is_archive = working_dir is not None
    key, what = ("working_dir", "the project archive") if is_archive else ("entrypoint", "the script")
    try:
        if working_dir is not None:
            raw = _project_archive(resolve_inside(loaded.base_dir, working_dir), c.run.working_dir_excludes)
        else:
            # stat first, then read at most one byte past the limit: a 200 MB file is never read whole.
            raw = read_regular_file(resolve_inside(loaded.base_dir, c.run.entrypoint), MAX_PAYLOAD_BYTES)
    except FileRefused as refused:
        if refused.size is not None:
            raise DiagnosticError([loaded.diagnostic(("run", key), f"{what} is {refused.size} bytes; the limit is {MAX_PAYLOAD_BYTES} (45 KiB)", "put large code in the image or on storage")]) from None
        raise DiagnosticError([loaded.diagnostic(("run", key), f"{what}: {refused.message}", refused.hint)]) from None
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise DiagnosticError([loaded.diagnostic(("run", key), f"{what} is {len(raw)} bytes; the limit is {MAX_PAYLOAD_BYTES} (45 KiB)", "put large code in the image or on storage")])
    return Payload(base64.b64encode(raw).decode(), "sha256:" + hashlib.sha256(raw).hexdigest(), is_archive, c.run.entrypoint)


def _project_archive(root: Path, excludes: list[str]) -> bytes:
    """A reproducible tar.gz: sorted names, zero mtimes and owners.

    Only regular files and directories go in: a symbolic link anywhere in the project is refused (it
    could carry a file from outside), as is a FIFO or device, and the bytes read are bounded."""
    excludes = [e for e in excludes if e.strip("/")]  # an empty pattern matches nothing, and Path.match refuses it
    files: list[tuple[tuple[str, ...], Path]] = []
    seen = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in sorted(dirs):
            rel = (here / name).relative_to(root).as_posix()
            if name.startswith(".") or name == "__pycache__" or any(rel == e.rstrip("/") or rel.startswith(e.rstrip("/") + "/") for e in excludes):
                continue
            if (here / name).is_symlink():
                raise FileRefused(f"{shown(rel)} in the project is a symbolic link", "replace the link with the files, or list it in run.working_dir_excludes")
            kept.append(name)
        dirs[:] = kept
        for name in names:
            seen += 1
            if seen > MAX_PROJECT_ENTRIES:
                raise FileRefused(f"holds more than {MAX_PROJECT_ENTRIES:,} files", "exclude data and build output with run.working_dir_excludes")
            path = here / name
            rel = path.relative_to(root).as_posix()
            if any(rel == e or rel.startswith(e.rstrip("/") + "/") or path.match(e) for e in excludes):
                continue
            if any(part.startswith(".") or part == "__pycache__" for part in Path(rel).parts):
                continue
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise FileRefused(f"{shown(rel)} in the project is a symbolic link", "replace the link with the file, or list it in run.working_dir_excludes")
            if not stat.S_ISREG(mode):
                raise FileRefused(f"{shown(rel)} in the project is not a regular file", "remove it or list it in run.working_dir_excludes")
            files.append((tuple(rel.split("/")), path))
    buffer = io.BytesIO()
    budget = MAX_PROJECT_READ_BYTES
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for parts, path in sorted(files):
            try:
                data = read_regular_file(path, budget)
            except FileRefused as refused:
                if refused.size is not None:
                    raise FileRefused(f"holds more than {MAX_PROJECT_READ_BYTES:,} bytes of files", "exclude data and build output with run.working_dir_excludes") from None
                raise FileRefused(f"{shown('/'.join(parts))} in the project: {refused.message}", refused.hint) from None
            budget -= len(data)
            info = tarfile.TarInfo("/".join(parts))
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _payload_init(payload: Payload, image: str) -> dict[str, Any]:
    if payload.is_archive:
        script = f'printf %s "$TAU_PAYLOAD" | base64 -d | tar -xz -C {SCRIPT_DIR}'
    else:
        target = posixpath.join(SCRIPT_DIR, payload.entry)
        script = f'mkdir -p {posixpath.dirname(target)} && printf %s "$TAU_PAYLOAD" | base64 -d > {target} && chmod +x {target}'
    return {
        "name": "tau-payload",
        "image": image,
        "command": ["sh", "-c", script],
        "env": [{"name": "TAU_PAYLOAD", "value": payload.data_b64}],
        "volumeMounts": [{"name": "tau-payload", "mountPath": SCRIPT_DIR}],
    }


def _script_command(entry: str) -> list[str]:
    path = posixpath.join(SCRIPT_DIR, entry)
    if entry.endswith(".py"):
        return ["python", path]
    if entry.endswith(".sh"):
        return ["sh", path]
    return [path]


def _labels(loaded: LoadedConfig, r: Resolution, submission_id: str, with_queue: bool = True) -> dict[str, str]:
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
        "workspace": c.policy.workspace,
        "profile": r.profile.name if r.profile else None,
        "experiment": c.experiment.name,
    }
    for key, value in optional.items():
        if value:
            labels[f"{TAU}/{key}"] = str(value)
    return labels


def _annotations(loaded: LoadedConfig, r: Resolution, payload: Payload | None) -> dict[str, str]:
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
        execution.update(metric=c.execution.metric, mode=c.execution.mode, numSamples=c.execution.num_samples, maxConcurrentTrials=c.execution.max_concurrent_trials)
    notes[f"{TAU}/workloadspec-execution"] = json.dumps(execution, sort_keys=True, separators=(",", ":"))
    if c.storage.checkpoint:
        notes[f"{TAU}/checkpoint-artifact"] = c.storage.checkpoint
    if c.storage.output:
        notes[f"{TAU}/result-path"] = c.storage.output
    if c.storage.data_pvc:
        notes[f"{TAU}/result-pvc"] = c.storage.data_pvc
    if r.nodes > 1:
        notes[f"{TAU}/multikueue-incompatible"] = "indexed-job-headless-service"
    return notes


def _topology_annotations(r: Resolution) -> dict[str, str]:
    # Only when the profile resolved a Kueue Topology: TAS annotations on a flavor without one make the workload inadmissible.
    if r.profile is None or not r.profile.topologies or not r.placement:
        return {}
    level = PLACEMENT_LEVELS.get(r.placement)
    if level:
        return {"kueue.x-k8s.io/podset-required-topology": level}
    return {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}


def _env(loaded: LoadedConfig, extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    c = loaded.config
    env: list[dict[str, Any]] = []
    if c.storage.output:
        env.append({"name": "TAU_OUTPUT_DIR", "value": c.storage.output})
    if c.storage.publish == "staged":
        env.append({"name": "TAU_OUTPUT_STAGING_DIR", "value": "/mnt/output-staging"})
    resume = c.resilience.checkpoint_path or (f"/data/checkpoints/finetunes/{c.run.name}" if c.storage.data_pvc else None)
    if resume and "TAU_RESUME_FROM" not in c.runtime.env:
        env.append({"name": "TAU_RESUME_FROM", "value": resume})
    if c.resilience.max_retries and "TAU_RETRY_MAX" not in c.runtime.env:
        env.append({"name": "TAU_RETRY_MAX", "value": str(c.resilience.max_retries)})
    env.extend(extra)
    env.extend({"name": k, "value": v} for k, v in c.runtime.env.items())
    for name, ref in c.runtime.env_secret.items():
        secret, _, key = ref.partition(":")
        env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    return env


def _resources(requests: dict[str, str | None], limits: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    req = {k: v for k, v in requests.items() if v is not None}
    lim = {k: v for k, v in limits.items() if v is not None}
    if req:
        out["requests"] = req
    if lim:
        out["limits"] = lim
    return out


def _storage(loaded: LoadedConfig, payload: Payload | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
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


def _restricted(c: TauConfig) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    if c.runtime.security.mode != "restricted":
        return None, None
    pod = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    container = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return pod, container


def _pod_failure_policy(c: TauConfig) -> dict[str, Any]:
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
    payload = _payload(loaded)
    labels = _labels(loaded, r, submission_id)
    annotations = _annotations(loaded, r, payload)
    volumes, mounts = _storage(loaded, payload)
    pod_security, container_security = _restricted(c)
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
            command = _script_command(c.run.entrypoint) if c.run.source is None else ["python", script]
    if launcher == "torchrun" and processes > 1:
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    init_containers: list[dict[str, Any]] = []
    if payload is not None:
        init_containers.append(_payload_init(payload, c.runtime.image))
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
    env = _env(loaded, extra_env)
    if env:
        container["env"] = env
    resources = _resources(
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
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = volumes
    template_meta: dict[str, Any] = {"labels": dict(labels)}
    topology = _topology_annotations(r)
    if topology:
        template_meta["annotations"] = topology
    spec: dict[str, Any] = {"suspend": True}
    if r.multikueue:
        spec["managedBy"] = MANAGED_BY_MULTIKUEUE
    spec["backoffLimit"] = c.resilience.max_retries
    spec["ttlSecondsAfterFinished"] = c.run.ttl_seconds_after_finished
    if r.nodes > 1:
        spec.update(completionMode="Indexed", completions=r.nodes, parallelism=r.nodes)
    spec["podFailurePolicy"] = _pod_failure_policy(c)
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
            "metadata": {"name": f"{name}-headless", "namespace": r.namespace, "labels": _labels(loaded, r, submission_id, with_queue=False)},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"job-name": name}},
        })
    return out


def render_rayjob(loaded: LoadedConfig, r: Resolution, submission_id: str) -> list[dict[str, Any]]:
    c = loaded.config
    name = str(c.run.name)
    payload = _payload(loaded)
    assert payload is not None  # rules.py requires an entrypoint for RayJob
    image = c.runtime.image or (RAY_GPU_IMAGE if r.gpus_per_worker else RAY_CPU_IMAGE)
    labels = _labels(loaded, r, submission_id)
    annotations = _annotations(loaded, r, payload)
    pod_security, container_security = _restricted(c)
    volumes, mounts = _storage(loaded, payload)
    env = _env(loaded, [])
    pod_annotations = {"adx-mon/scrape": "true", "adx-mon/port": "8080"}

    def pod(container: dict[str, Any], extra_spec: dict[str, Any], annotations_: dict[str, str]) -> dict[str, Any]:
        container["volumeMounts"] = [dict(m) for m in mounts]
        if env:
            container["env"] = [dict(e) for e in env]
        if container_security:
            container["securityContext"] = container_security
        init = _payload_init(payload, image)
        if container_security:
            init["securityContext"] = container_security
        spec: dict[str, Any] = {"terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS}
        if r.pod_priority_class:
            spec["priorityClassName"] = r.pod_priority_class
        spec.update(extra_spec)
        if pod_security:
            spec["securityContext"] = pod_security
        spec["initContainers"] = [init]
        spec["containers"] = [container]
        spec["volumes"] = copy.deepcopy(volumes)
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
    head_resources = _resources(
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
    worker_resources = _resources(
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
        entrypoint = " ".join(_script_command(payload.entry))
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
            "template": pod(head_container, {"affinity": head_affinity}, pod_annotations),
        },
        "workerGroupSpecs": [{
            "groupName": f"{name}-w",
            "replicas": r.workers,
            "minReplicas": r.workers,
            "maxReplicas": r.workers,
            "rayStartParams": {"num-gpus": str(r.gpus_per_worker)},
            "template": pod(worker_container, worker_spec, {**pod_annotations, **_topology_annotations(r)}),
        }],
    }
    return [{
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": r.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }]


def render(loaded: LoadedConfig, resolution: Resolution, submission_id: str | None = None) -> list[dict[str, Any]]:
    sid = submission_id or submission_id_for(loaded, resolution)
    if loaded.engine == "job":
        return render_job(loaded, resolution, sid)
    return render_rayjob(loaded, resolution, sid)


class _PlainDumper(yaml.SafeDumper):
    """Never writes &anchors/*aliases: manifests are read by people and by kubectl."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(manifests: list[dict[str, Any]]) -> str:
    return yaml.dump_all(manifests, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=120, explicit_start=True)
