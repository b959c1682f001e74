"""Tier 3 wiring: one MultiKueue manager and two workers, each a full ControlPlane with Kueue.

Applies manifests/multikueue/ (the example setup shipped to users) and connects the manager to
each worker through a kubeconfig Secret that holds a TokenRequest token for multikueue-sa.
"""

from __future__ import annotations

import time
from pathlib import Path

from kubernetes import client as k8s

from .binaries import REPO_ROOT
from .controlplane import KUEUE_NAMESPACE, ControlPlane
from .manifests import create_from_file
from .processes import HarnessStartError

MULTIKUEUE_DIR = REPO_ROOT / "manifests" / "multikueue"
WORKER_NAMES = ("worker1", "worker2")
MULTIKUEUE_NAMESPACE = "taugrid-default"
MULTIKUEUE_LOCAL_QUEUE = "multikueue"
MULTIKUEUE_CLUSTER_QUEUE = "multikueue"
MULTIKUEUE_ADMISSION_CHECK = "multikueue"
WIRING_TIMEOUT = 120.0


def _conditions_true(obj: dict, cond_type: str) -> bool:
    return any(c.get("type") == cond_type and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def wire_worker(manager: ControlPlane, worker: ControlPlane, cluster_name: str) -> None:
    create_from_file(worker.api_client(), MULTIKUEUE_DIR / "worker-rbac.yaml")
    create_from_file(worker.api_client(), MULTIKUEUE_DIR / "worker.yaml")
    kubeconfig = Path(worker.kubeconfig_for_serviceaccount(KUEUE_NAMESPACE, "multikueue-sa"))
    k8s.CoreV1Api(manager.api_client()).create_namespaced_secret(KUEUE_NAMESPACE, {
        "metadata": {"name": f"{cluster_name}-secret"},
        "stringData": {"kubeconfig": kubeconfig.read_text()},
    })


def wire(manager: ControlPlane, workers: list[ControlPlane]) -> None:
    for name, worker in zip(WORKER_NAMES, workers, strict=True):
        wire_worker(manager, worker, name)
    create_from_file(manager.api_client(), MULTIKUEUE_DIR / "manager.yaml")
    custom = k8s.CustomObjectsApi(manager.api_client())
    deadline = time.monotonic() + WIRING_TIMEOUT
    waiting: list[str] = []
    while time.monotonic() < deadline:
        waiting = [
            f"MultiKueueCluster {name}" for name in WORKER_NAMES
            if not _conditions_true(custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "multikueueclusters", name), "Active")
        ]
        if not _conditions_true(custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "admissionchecks", MULTIKUEUE_ADMISSION_CHECK), "Active"):
            waiting.append(f"AdmissionCheck {MULTIKUEUE_ADMISSION_CHECK}")
        if not _conditions_true(custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "clusterqueues", MULTIKUEUE_CLUSTER_QUEUE), "Active"):
            waiting.append(f"ClusterQueue {MULTIKUEUE_CLUSTER_QUEUE}")
        if not waiting:
            return
        time.sleep(0.5)
    raise HarnessStartError(
        f"MultiKueue not Active after {WIRING_TIMEOUT:.0f}s: {', '.join(waiting)}. "
        f"Manager Kueue log: {manager.logs_dir / 'kueue.log'}"
    )
