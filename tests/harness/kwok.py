"""KWOK for tier 2: fake GPU nodes that run pods and serve fake container logs.

Stages come from the kwok module directory: node "fast" initialize, heartbeat-with-lease, and the
"general" pod stages. A Job pod becomes Running about 1-6 s after binding and Succeeded 1-6 s
later. The annotation `pod-complete.stage.kwok.x-k8s.io/delay` alone postpones completion by at most 5 s (KWOK
caps the delay at the stage's jitter); `KEEP_RUNNING_ANNOTATIONS` (delay and jitter-delay) keep a pod Running.
Logs: every container of every pod serves the lines of `FAKE_LOG_LINES`, followed live, and
`FAKE_PREVIOUS_LOG_LINES` as its previous (terminated) container.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from kubernetes import client as k8s

from .processes import HarnessStartError, ManagedProcess, port_open

if TYPE_CHECKING:
    from .controlplane import ControlPlane

KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
GPU_NODE_COUNT = 2
GPUS_PER_NODE = 8
GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
GPU_CLASS = "h100-80gb"
FAKE_LOG_LINES = [f"tau-harness fake log line {n}" for n in range(1, 6)]
FAKE_PREVIOUS_LOG_LINES = [f"tau-harness previous container line {n}" for n in range(1, 4)]
POD_CIDR = "10.244.0.0/16"
#: Set on every pod tau-tui renders (the run's name); see keep_tau_runs_running.
TAU_RUN_LABEL = "tau.azure.com/run"
# KWOK caps the pod-complete stage's delay at its jitter (5 s unless the jitter-delay annotation says
# otherwise), so a pod stays Running for an hour only with both annotations.
KEEP_RUNNING_ANNOTATIONS = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h",
                            "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h"}


def gpu_node_manifest(name: str) -> dict:
    capacity = {"cpu": "96", "memory": "1843Gi", "pods": "110", "nvidia.com/gpu": str(GPUS_PER_NODE),
                "ephemeral-storage": "2Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1],
                            "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": GPU_PRODUCT,
                "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                "tau.azure.com/gpu-class": GPU_CLASS,
            },
        },
        "spec": {},
        "status": {"allocatable": capacity, "capacity": capacity},
    }


#: node-initialize writes `addresses` only when one is missing, and KWOK writes the whole status: a node
#: that went NotReady (its apiserver down longer than the lease) and is initialized again loses its
#: addresses, and the apiserver can no longer reach it for logs ("no preferred addresses found").
_INITIALIZE_ADDRESSES = ("{{ $hasInternalIP := false }}", "{{ with NodePort }}")
#: What the heartbeat stage writes instead (node-heartbeat-with-lease.yaml): the addresses it has, else new ones.
_KEPT_ADDRESSES = """addresses:
{{ with .status.addresses }}
{{ YAML . 1 }}
{{ else }}
{{ with NodeIP }}
- address: {{ . | Quote }}
  type: InternalIP
{{ end }}
{{ with NodeName }}
- address: {{ . | Quote }}
  type: Hostname
{{ end }}
{{ end }}

"""


def node_addresses_kept(stage: dict) -> dict:
    """The node-initialize stage, writing the node's addresses every time (see _INITIALIZE_ADDRESSES)."""
    if (stage.get("metadata") or {}).get("name") != "node-initialize":
        return stage
    template = stage["spec"]["next"]["statusTemplate"]
    start, end = (template.find(marker) for marker in _INITIALIZE_ADDRESSES)
    if start < 0 or end < start:
        raise HarnessStartError("KWOK's node-initialize stage changed: its addresses block was not found")
    stage["spec"]["next"]["statusTemplate"] = template[:start] + _KEPT_ADDRESSES + template[end:]
    return stage


def keep_tau_runs_running(stages: list[dict]) -> list[dict]:
    """The stages for T3 workers: a pod of a run rendered by tau-tui (label `TAU_RUN_LABEL`, e.g.
    `tau-tui submit`) stays Running until it is deleted, as a training run does, and once deleted
    goes within about a second (its process exits at SIGTERM), instead of KWOK's jitter up to the
    run's 600 s grace period. Other pods keep KWOK's general stages."""
    tau_run = {"key": f'.metadata.labels["{TAU_RUN_LABEL}"]', "operator": "Exists"}
    not_tau_run = {"key": f'.metadata.labels["{TAU_RUN_LABEL}"]', "operator": "DoesNotExist"}
    out = []
    for stage in stages:
        name = (stage.get("metadata") or {}).get("name")
        if name == "pod-complete":
            stage["spec"]["selector"]["matchExpressions"].append(not_tau_run)
        elif name == "pod-delete":
            quick = yaml.safe_load(yaml.safe_dump(stage))
            quick["metadata"]["name"] = "pod-delete-tau-run"
            quick["spec"]["selector"]["matchExpressions"].append(tau_run)
            quick["spec"]["delay"] = {"durationMilliseconds": 1000}
            stage["spec"]["selector"]["matchExpressions"].append(not_tau_run)
            out.append(quick)
        out.append(stage)
    return out


def ray_pods_go_at_once(stages: list[dict]) -> list[dict]:
    """The stages for a plane running KubeRay: a deleted pod of a RayCluster (label ``ray.io/node-type``)
    goes within about a second, as Ray's processes exit at SIGTERM, instead of KWOK's jitter up to the
    600 s grace period tau-tui renders.  A finalizer still holds it (a test's, to watch a cancel wait)."""
    ray_pod = {"key": '.metadata.labels["ray.io/node-type"]', "operator": "Exists"}
    not_ray_pod = {"key": '.metadata.labels["ray.io/node-type"]', "operator": "DoesNotExist"}
    out = []
    for stage in stages:
        if (stage.get("metadata") or {}).get("name") == "pod-delete":
            quick = yaml.safe_load(yaml.safe_dump(stage))
            quick["metadata"]["name"] = "pod-delete-ray-node"
            quick["spec"]["selector"]["matchExpressions"].append(ray_pod)
            quick["spec"]["delay"] = {"durationMilliseconds": 1000}
            stage["spec"]["selector"]["matchExpressions"].append(not_ray_pod)
            out.append(quick)
        out.append(stage)
    return out


def _cri_log_file(path: Path, texts: list[str] = FAKE_LOG_LINES) -> None:
    # KWOK replays the file in the CRI log format that kubelet writes.
    stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    lines = []
    for n, text in enumerate(texts):
        ts = (stamp + datetime.timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
        lines.append(f"{ts} stdout F {text}\n")
    path.write_text("".join(lines))


def _kwok_config(plane: ControlPlane, directory: Path, extra: list[dict]) -> Path:
    stages = plane.binaries.kwok_module_dir / "kustomize" / "stage"
    stage_files = [
        stages / "node" / "fast" / "node-initialize.yaml",
        stages / "node" / "heartbeat-with-lease" / "node-heartbeat-with-lease.yaml",
        *sorted((stages / "pod" / "general").glob("pod-*.yaml")),
    ]
    missing = [str(p) for p in stage_files if not p.is_file()]
    if missing or len(stage_files) < 3:
        raise HarnessStartError(f"KWOK stage files missing: {missing or stages}; rerun `bash harness/build.sh`")
    logs_file = directory / "container.log"
    _cri_log_file(logs_file)
    previous_file = directory / "previous.log"
    _cri_log_file(previous_file, FAKE_PREVIOUS_LOG_LINES)
    docs = [node_addresses_kept(yaml.safe_load(p.read_text())) for p in stage_files]
    if plane.kwok_keeps_tau_runs:
        docs = keep_tau_runs_running(docs)
    if plane.kuberay:
        docs = ray_pods_go_at_once(docs)
    docs.append({
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "tau-harness-logs"},
        "spec": {"logs": [{"logsFile": str(logs_file), "previousLogsFile": str(previous_file), "follow": True}]},
    })
    docs += extra
    path = directory / "kwok.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def start_kwok(plane: ControlPlane, extra: list[dict] | None = None, env: dict[str, str] | None = None) -> ManagedProcess:
    """``extra``: more KWOK configuration documents (the Ray head's ClusterExec); ``env``: for its
    process (the PATH its exec commands are looked up on)."""
    directory = plane.state_dir / "kwok"
    directory.mkdir(parents=True, exist_ok=True)
    config = _kwok_config(plane, directory, list(extra or ()))
    serving = plane.ca.issue("kwok-serving", "kwok", server=True, ip_addresses=("127.0.0.1",))
    port = plane.ports["kwok"]
    proc = ManagedProcess(f"{plane.name}/kwok", [
        str(plane.binaries.kwok),
        f"--kubeconfig={plane.kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION[0]}={KWOK_NODE_ANNOTATION[1]}",
        # Explicit: otherwise KWOK picks a detected address that the apiserver would dial for logs.
        "--node-ip=127.0.0.1",
        f"--node-port={port}",
        f"--server-address=127.0.0.1:{port}",
        f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
        f"--cidr={POD_CIDR}",
        f"--node-lease-duration-seconds={plane.kwok_lease_seconds}",
    ], plane.logs_dir / "kwok.log", env=env)
    proc.start()
    proc.wait_until(lambda: port_open(port), "kubelet port open", 120)
    core = k8s.CoreV1Api(plane.api_client())
    names = [f"kwok-gpu-{n}" for n in range(GPU_NODE_COUNT)]
    for name in names:
        core.create_node(gpu_node_manifest(name))

    def nodes_ready() -> bool:
        for name in names:
            conds = core.read_node(name).status.conditions or []
            if not any(c.type == "Ready" and c.status == "True" for c in conds):
                return False
        return True

    proc.wait_until(nodes_ready, "GPU nodes Ready", 120)
    plane.gpu_nodes = names
    return proc


