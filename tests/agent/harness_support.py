"""Shared set-up for the agent's tier-2 tests: kubectl, `kubectl apply -k manifests/agent`,
test-only KWOK GPU nodes, and API clients that carry the agent's pod-bound token."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_agent.kube import KubernetesWriter
from tau_gpuhealth.names import API_GROUP, HEALTH_PLURAL
from tests.harness.kwok import KEEP_RUNNING_ANNOTATIONS
from tests.harness.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
AGENT_MANIFESTS = REPO / "manifests" / "agent"
NAMESPACE = "tau-system"
EVENTS_NAMESPACE = "default"
SERVICE_ACCOUNT = "tau-agent"
DAEMONSET = "tau-agent"
KUBECTL_ENV = "TAU_KUBECTL"
# Keeps the shared tier's workloads off these test-only nodes (the agent tolerates every taint).
TEST_TAINT = {"key": "tau-tui.io/agent-test", "value": "true", "effect": "NoSchedule"}


def harness_kubectl_path() -> Path:
    """Where harness/build.sh puts kubectl: beside kube-apiserver, same version."""
    from tests.harness.binaries import cache_root, locate

    return cache_root() / f"kubernetes-{locate().k8s_version}" / "kubectl"


def kubectl_binary() -> str:
    """kubectl from $TAU_KUBECTL, else the harness build (version-matched), else PATH."""
    harness_built = harness_kubectl_path()
    candidates = [
        (f"${KUBECTL_ENV}", os.environ.get(KUBECTL_ENV, "")),
        ("harness build", str(harness_built)),
        ("PATH", shutil.which("kubectl") or ""),
    ]
    for _source, path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise AssertionError(
        f"no kubectl found: not in ${KUBECTL_ENV}, not at {harness_built} (built by `bash harness/build.sh k8s` "
        "next to kube-apiserver), not on PATH. Build the harness, or set "
        f"{KUBECTL_ENV}=/path/to/kubectl (within one minor version of the harness's kube-apiserver)."
    )


def kubectl_version(kubectl: str) -> str:
    result = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        return f"unknown ({result.stderr.strip()[:200]})"
    return json.loads(result.stdout).get("clientVersion", {}).get("gitVersion", "unknown")




def kwok_gpu_node(name: str) -> dict:
    """A KWOK GPU node like the tier's own (8 × H100, nvidia.com/gpu.count=8), with the test taint."""
    from tests.harness.kwok import gpu_node_manifest

    node = gpu_node_manifest(name)
    node["spec"]["taints"] = [TEST_TAINT]
    return node


@contextlib.contextmanager
def agent_manifests_applied(plane, admin: k8s.ApiClient, nodes: list[str]) -> Iterator[str]:
    """`kubectl apply -k manifests/agent`, wait for the CRD, create `nodes` as KWOK GPU nodes.

    Yields kubectl's output. Afterwards deletes the DaemonSet (its fake pods would otherwise sit on
    every KWOK GPU node of the shared tier) and the nodes; the CRD, RBAC and policy stay (shared).
    """
    kubectl = kubectl_binary()
    result = subprocess.run(
        [kubectl, "--kubeconfig", plane.kubeconfig, "apply", "-k", str(AGENT_MANIFESTS)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, (
        f"{kubectl} ({kubectl_version(kubectl)}) apply -k manifests/agent failed:\n{result.stdout}\n{result.stderr}"
    )
    ext = k8s.ApiextensionsV1Api(admin)

    def established():
        crd = ext.read_custom_resource_definition(f"{HEALTH_PLURAL}.{API_GROUP}")
        return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))

    wait_for(established, "GPUNodeHealth CRD established")
    with kwok_test_nodes(admin, nodes):
        try:
            yield result.stdout
        finally:
            try:
                k8s.AppsV1Api(admin).delete_namespaced_daemon_set(DAEMONSET, NAMESPACE)
            except ApiException as err:
                if err.status != 404:
                    raise


@contextlib.contextmanager
def kwok_test_nodes(admin: k8s.ApiClient, nodes: list[str] | tuple[str, ...]) -> Iterator[list[str]]:
    """`nodes` as tainted KWOK GPU nodes (kept if they exist), deleted afterwards."""
    core = k8s.CoreV1Api(admin)
    for name in nodes:
        try:
            core.create_node(kwok_gpu_node(name))
        except ApiException as err:
            if err.status != 409:
                raise
    try:
        yield list(nodes)
    finally:
        for name in nodes:
            try:
                core.delete_node(name)
            except ApiException as err:
                if err.status != 404:
                    raise


def harness_app(plane, tmp_path: Path, monkeypatch, start_pane: str, kinds: list) -> tuple[Any, Any]:
    """The Textual app on a KubernetesBackend of `plane` (all namespaces, synced for `kinds`), its
    settings, audit log and XDG directories under `tmp_path`. Returns (app, backend); close the backend."""
    from tau_tui.app import TauApp
    from tau_tui.core.cluster.real import KubernetesBackend
    from tau_tui.core.operations.audit import AuditLog
    from tau_tui.settings.settings_file import AppSettings, LoadedSettings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TAU_TUI_CONFIG", raising=False)
    backend = KubernetesBackend(kubeconfig=plane.kubeconfig, all_namespaces=True)
    backend.start()
    assert backend.wait_synced(60, kinds=kinds), "backend did not sync"
    app = TauApp(backend, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"), start_pane=start_pane)
    return app, backend


def token_client(plane, admin: k8s.ApiClient, token: str) -> k8s.ApiClient:
    config = k8s.Configuration()
    config.host = admin.configuration.host
    config.ssl_ca_cert = admin.configuration.ssl_ca_cert
    config.verify_ssl = True
    config.api_key = {"authorization": token}
    config.api_key_prefix = {"authorization": "Bearer"}
    return k8s.ApiClient(config)


def agent_client(plane, admin: k8s.ApiClient, node: str) -> k8s.ApiClient:
    """A client authenticated as the tau-agent service account, its token bound to a pod on `node`
    (so the token carries the node-name claim, as the DaemonSet's projected token does)."""
    core = k8s.CoreV1Api(admin)
    pod_name = f"tau-agent-token-{node}"
    try:
        pod = core.create_namespaced_pod(NAMESPACE, {
            "metadata": {"name": pod_name,
                         "annotations": KEEP_RUNNING_ANNOTATIONS},
            "spec": {
                "nodeName": node,
                "serviceAccountName": SERVICE_ACCOUNT,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "agent", "image": "registry.invalid/tau/agent:test"}],
            },
        })
    except ApiException as err:
        if err.status != 409:
            raise
        pod = core.read_namespaced_pod(pod_name, NAMESPACE)
    token = core.create_namespaced_service_account_token(SERVICE_ACCOUNT, NAMESPACE, {
        "spec": {
            "audiences": [plane.server],
            "expirationSeconds": 3600,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod.metadata.uid},
        }
    }).status.token
    return token_client(plane, admin, token)


def gpu_queue(admin: k8s.ApiClient, namespace: str, queue: str, cluster_queue: str, gpus: int) -> None:
    """A namespace with a LocalQueue on its own ClusterQueue of `gpus` H100s (the renderer's default
    flavor and priority class), for runs on test-only nodes; returns once pods can be created there."""
    from tests.harness.manifests import create_from_file

    for name in ("resourceflavors.yaml", "workloadpriorityclasses.yaml"):
        create_from_file(admin, REPO / "manifests" / "kueue" / name)
    core = k8s.CoreV1Api(admin)
    custom = k8s.CustomObjectsApi(admin)
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cluster_queue},
          "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                   "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                       {"name": "taugrid-h100-80gb", "resources": [{"name": "cpu", "nominalQuota": str(8 * gpus)},
                                                                   {"name": "memory", "nominalQuota": f"{64 * gpus}Gi"},
                                                                   {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": queue, "namespace": namespace},
          "spec": {"clusterQueue": cluster_queue}}
    for create in (lambda: core.create_namespace({"metadata": {"name": namespace}}),
                   lambda: custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", cq),
                   lambda: custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", namespace, "localqueues", lq)):
        try:
            create()
        except ApiException as err:
            if err.status != 409:
                raise
    wait_for(lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(namespace).items),
             "default ServiceAccount", timeout=90)


def on_test_nodes(manifests: list[dict], nodes: list[str] | tuple[str, ...], annotations: dict[str, str]) -> list[dict]:
    """The Job's pods tolerate the test nodes' taint, may run only on `nodes`, and carry `annotations`
    (KWOK's stage delays)."""
    for manifest in manifests:
        if manifest.get("kind") != "Job":
            continue
        template = manifest["spec"]["template"]
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
        spec = template["spec"]
        spec.setdefault("tolerations", []).append({"key": TEST_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"})
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}]}}}
    return manifests


def conditions_of(admin: k8s.ApiClient, node: str) -> dict:
    status = k8s.CoreV1Api(admin).read_node_status(node).status
    return {c.type: c for c in (status.conditions or [])}


class SimulatedTimeWriter(KubernetesWriter):
    """The agent's real writer for an agent that runs on simulated time (a FakeClock that moves
    faster than the wall clock): a condition time it has not written before is stamped with the
    wall clock when it is first written, and keeps that stamp afterwards. The admission policy
    accepts a changed lastTransitionTime or lastHeartbeatTime only within 60 s of the request
    (manifests/agent/admission-policy.yaml); a real agent stamps its writes with its own clock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wall: dict[str, str] = {}

    def write_conditions(self, conditions: list[dict[str, Any]]) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        stamped = [{**c, **{k: self._wall.setdefault(f"{c['type']}/{k}/{c[k]}", now)
                            for k in ("lastTransitionTime", "lastHeartbeatTime") if c.get(k)}} for c in conditions]
        super().write_conditions(stamped)
