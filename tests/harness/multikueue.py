"""Tier 3 wiring: one MultiKueue manager and two workers, each a full ControlPlane with Kueue.

Applies manifests/multikueue/ (the example setup shipped to users) and connects the manager to
each worker through a kubeconfig Secret that holds a worker credential (below).

Worker credentials. The identity is ServiceAccount `multikueue-sa` in `kueue-system` on the
worker, bound to the ClusterRole of worker-rbac.yaml (no cluster-admin). Each credential is a
TokenRequest token *bound to its own Secret* on the worker (`boundObjectRef`). kube-apiserver
checks on every request that this Secret still exists with the same UID, so deleting it revokes
exactly that token: it then gets 401 Unauthorized, while other credentials of the same identity
keep working. That gives rotation a real "old credential no longer works" check. Client
certificates were not used: kube-apiserver has no revocation list, and removing an identity's
RBAC only turns 401 into 403, undone by the next binding.
"""

from __future__ import annotations

import ssl
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from .binaries import REPO_ROOT
from .controlplane import KUEUE_NAMESPACE, ControlPlane, kubeconfig_yaml
from .manifests import create_from_file
from .processes import HarnessStartError, ManagedProcess, free_port, port_open

MULTIKUEUE_DIR = REPO_ROOT / "manifests" / "multikueue"
WORKER_NAMES = ("worker1", "worker2")
MULTIKUEUE_NAMESPACE = "taugrid-default"
MULTIKUEUE_LOCAL_QUEUE = "multikueue"
MULTIKUEUE_CLUSTER_QUEUE = "multikueue"
MULTIKUEUE_ADMISSION_CHECK = "multikueue"
WORKER_IDENTITY = "multikueue-sa"
WORKER_CLUSTER_ROLE = "multikueue-sa-role"
CREDENTIAL_LABEL = "tau.azure.com/multikueue-credential-of"
WIRING_TIMEOUT = 120.0
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
# A request every worker identity may make (worker-rbac.yaml): proves a credential authenticates.
CREDENTIAL_PROBE_PATH = f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/workloads?limit=1"


def _condition(obj: dict, cond_type: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == cond_type), None)


def _conditions_true(obj: dict, cond_type: str) -> bool:
    return (_condition(obj, cond_type) or {}).get("status") == "True"


@dataclass(frozen=True)
class WorkerCredential:
    """One token for a worker identity; `binding_secret` on the worker is what revocation deletes."""

    worker: str
    service_account: str
    binding_secret: str
    server: str
    ca_pem: bytes = field(repr=False)
    token: str = field(repr=False)

    def kubeconfig(self) -> str:
        return kubeconfig_yaml(f"{self.worker}-{self.service_account}", self.server, self.ca_pem,
                               {"token": self.token})

    def probe(self, path: str = CREDENTIAL_PROBE_PATH) -> int:
        """HTTP status of one GET with this credential: 200 works, 401 revoked, 403 not allowed."""
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        request = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, context=ctx, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as err:
            return err.code


def ensure_service_account(worker: ControlPlane, name: str) -> None:
    try:
        k8s.CoreV1Api(worker.api_client()).create_namespaced_service_account(
            KUEUE_NAMESPACE, {"metadata": {"name": name}})
    except ApiException as err:
        if err.status != 409:
            raise


def mint_worker_credential(worker: ControlPlane, *, service_account: str = WORKER_IDENTITY,
                           server: str | None = None, expiration_seconds: int = 86400) -> WorkerCredential:
    """A new token for `service_account` on `worker`, bound to a fresh Secret there (see module doc).

    `server` overrides the URL written into the kubeconfig (e.g. a version proxy in front of the worker).
    """
    core = k8s.CoreV1Api(worker.api_client())
    ensure_service_account(worker, service_account)
    secret = core.create_namespaced_secret(KUEUE_NAMESPACE, {
        "metadata": {"generateName": f"{service_account}-credential-",
                     "labels": {CREDENTIAL_LABEL: service_account}},
        "type": "Opaque",
    })
    token = core.create_namespaced_service_account_token(service_account, KUEUE_NAMESPACE, {"spec": {
        "expirationSeconds": expiration_seconds,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": secret.metadata.name,
                           "uid": secret.metadata.uid},
    }}).status.token
    return WorkerCredential(worker=worker.name, service_account=service_account,
                            binding_secret=secret.metadata.name, server=server or worker.server,
                            ca_pem=worker.ca.cert_pem(), token=token)


def revoke_worker_credential(worker: ControlPlane, credential: WorkerCredential, timeout: float = 30.0) -> None:
    """Delete the credential's binding Secret and return once the token is refused (401)."""
    try:
        k8s.CoreV1Api(worker.api_client()).delete_namespaced_secret(credential.binding_secret, KUEUE_NAMESPACE)
    except ApiException as err:
        if err.status != 404:
            raise
    deadline = time.monotonic() + timeout
    status = credential.probe()
    while status != 401 and time.monotonic() < deadline:
        time.sleep(0.25)
        status = credential.probe()
    if status != 401:
        raise AssertionError(f"credential {credential.binding_secret} still answers {status} after revocation")


def store_worker_credential(manager: ControlPlane, secret_name: str, credential: WorkerCredential) -> None:
    """Create or replace the manager's kubeconfig Secret (`kubeconfig` key) that a MultiKueueCluster names."""
    core = k8s.CoreV1Api(manager.api_client())
    body = {"metadata": {"name": secret_name, "namespace": KUEUE_NAMESPACE},
            "stringData": {"kubeconfig": credential.kubeconfig()}}
    try:
        core.create_namespaced_secret(KUEUE_NAMESPACE, body)
    except ApiException as err:
        if err.status != 409:
            raise
        core.replace_namespaced_secret(secret_name, KUEUE_NAMESPACE, body)


def grant_cluster_role(worker: ControlPlane, service_account: str, role: str) -> None:
    """ClusterRoleBinding `<service_account>-crb` from the ServiceAccount in kueue-system to `role`."""
    k8s.RbacAuthorizationV1Api(worker.api_client()).create_cluster_role_binding({
        "metadata": {"name": f"{service_account}-crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": KUEUE_NAMESPACE}],
    })


def worker_cluster_role_rules() -> list[dict]:
    """The rules of the worker ClusterRole in manifests/multikueue/worker-rbac.yaml."""
    docs = yaml.safe_load_all((MULTIKUEUE_DIR / "worker-rbac.yaml").read_text())
    role = next(d for d in docs if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == WORKER_CLUSTER_ROLE)
    return role["rules"]


def add_cluster(manager: ControlPlane, name: str, credential: WorkerCredential) -> None:
    """Secret `<name>-secret` + MultiKueueCluster `<name>` on the manager (not added to any MultiKueueConfig)."""
    store_worker_credential(manager, f"{name}-secret", credential)
    k8s.CustomObjectsApi(manager.api_client()).create_cluster_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", {
            "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "MultiKueueCluster",
            "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"{name}-secret"}}},
        })


def remove_cluster(manager: ControlPlane, name: str) -> None:
    custom = k8s.CustomObjectsApi(manager.api_client())
    core = k8s.CoreV1Api(manager.api_client())
    for delete in (lambda: custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", name),
                   lambda: core.delete_namespaced_secret(f"{name}-secret", KUEUE_NAMESPACE)):
        try:
            delete()
        except ApiException as err:
            if err.status != 404:
                raise


def cluster_active_condition(manager: ControlPlane, name: str) -> dict | None:
    """The `Active` condition of MultiKueueCluster `name` on the manager (None before Kueue set one)."""
    obj = k8s.CustomObjectsApi(manager.api_client()).get_cluster_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", name)
    return _condition(obj, "Active")


def admission_check_active_condition(manager: ControlPlane, name: str = MULTIKUEUE_ADMISSION_CHECK) -> dict | None:
    obj = k8s.CustomObjectsApi(manager.api_client()).get_cluster_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", name)
    return _condition(obj, "Active")


def wire_worker(manager: ControlPlane, worker: ControlPlane, cluster_name: str) -> WorkerCredential:
    create_from_file(worker.api_client(), MULTIKUEUE_DIR / "worker-rbac.yaml")
    create_from_file(worker.api_client(), MULTIKUEUE_DIR / "worker.yaml")
    credential = mint_worker_credential(worker)
    store_worker_credential(manager, f"{cluster_name}-secret", credential)
    return credential


def _default_service_account_ready(worker: ControlPlane) -> bool:
    # Pods of dispatched Jobs need it; kube-controller-manager's serviceaccount controller makes it.
    try:
        k8s.CoreV1Api(worker.api_client()).read_namespaced_service_account("default", MULTIKUEUE_NAMESPACE)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def wire(manager: ControlPlane, workers: list[ControlPlane]) -> dict[str, WorkerCredential]:
    """Wire the workers to the manager; returns each worker's credential, by cluster name."""
    credentials = {name: wire_worker(manager, worker, name) for name, worker in zip(WORKER_NAMES, workers, strict=True)}
    create_from_file(manager.api_client(), MULTIKUEUE_DIR / "manager.yaml")
    custom = k8s.CustomObjectsApi(manager.api_client())
    deadline = time.monotonic() + WIRING_TIMEOUT
    waiting: list[str] = []
    while time.monotonic() < deadline:
        waiting = [
            f"MultiKueueCluster {name}" for name in WORKER_NAMES
            if not _conditions_true(custom.get_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", name), "Active")
        ]
        if not _conditions_true(custom.get_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", MULTIKUEUE_ADMISSION_CHECK), "Active"):
            waiting.append(f"AdmissionCheck {MULTIKUEUE_ADMISSION_CHECK}")
        if not _conditions_true(custom.get_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", MULTIKUEUE_CLUSTER_QUEUE), "Active"):
            waiting.append(f"ClusterQueue {MULTIKUEUE_CLUSTER_QUEUE}")
        waiting += [f"ServiceAccount default in {MULTIKUEUE_NAMESPACE} on {name}"
                    for name, worker in zip(WORKER_NAMES, workers, strict=True) if not _default_service_account_ready(worker)]
        if not waiting:
            return credentials
        time.sleep(0.5)
    raise HarnessStartError(
        f"MultiKueue not Active after {WIRING_TIMEOUT:.0f}s: {', '.join(waiting)}. "
        f"Manager Kueue log: {manager.logs_dir / 'kueue.log'}"
    )


def install_priority_classes(plane: ControlPlane, name: str = "taugrid-default", value: int = 1000) -> None:
    """The PriorityClass and Kueue WorkloadPriorityClass a TauGrid profile names (`priorities`), as
    TauGrid's installation provides them: a profile is Ready only when both exist, and a worker
    admits a dispatched run's pods only when they exist there too."""
    for create in (
        lambda: k8s.SchedulingV1Api(plane.api_client()).create_priority_class({"metadata": {"name": name}, "value": value}),
        lambda: k8s.CustomObjectsApi(plane.api_client()).create_cluster_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", {
                "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value}),
    ):
        try:
            create()
        except ApiException as err:
            if err.status != 409:
                raise


def unwire(manager: ControlPlane) -> None:
    """Delete what `wire` made on the manager (manager.yaml's queue, check, config and clusters, and the
    `<name>-secret` Secrets), and return once they are gone; the workers' side stays as it is."""
    custom = k8s.CustomObjectsApi(manager.api_client())
    core = k8s.CoreV1Api(manager.api_client())
    deletions = [
        lambda: custom.delete_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, MULTIKUEUE_NAMESPACE, "localqueues",
                                                       MULTIKUEUE_LOCAL_QUEUE),
        lambda: custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", MULTIKUEUE_CLUSTER_QUEUE),
        lambda: custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", MULTIKUEUE_ADMISSION_CHECK),
        lambda: custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "multikueueconfigs", "multikueue"),
        *[lambda n=name: custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "multikueueclusters", n)
          for name in WORKER_NAMES],
        *[lambda n=name: core.delete_namespaced_secret(f"{n}-secret", KUEUE_NAMESPACE) for name in WORKER_NAMES],
    ]
    for delete in deletions:
        try:
            delete()
        except ApiException as err:
            if err.status != 404:
                raise

    def gone(read) -> bool:
        try:
            read()
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        return False

    reads = [
        lambda: custom.get_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, MULTIKUEUE_NAMESPACE, "localqueues",
                                                    MULTIKUEUE_LOCAL_QUEUE),
        lambda: custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", MULTIKUEUE_CLUSTER_QUEUE),
        lambda: custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "admissionchecks", MULTIKUEUE_ADMISSION_CHECK),
    ]
    deadline = time.monotonic() + WIRING_TIMEOUT
    while not all(gone(read) for read in reads):
        if time.monotonic() > deadline:
            raise AssertionError(f"the harness's MultiKueue queue and check were not deleted in {WIRING_TIMEOUT:.0f}s "
                                 "(a finalizer of Kueue's is waiting on a Workload?)")
        time.sleep(0.5)


def start_version_proxy(worker: ControlPlane, git_version: str) -> str:
    """Start a proxy that reports `git_version` on /version in front of `worker` (tests/harness/versionproxy.py).

    It runs as one of the worker's components (stopped with it); returns its https URL.
    """
    port = free_port()
    serving = worker.ca.issue(f"version-proxy-{port}", "tau-harness-version-proxy", server=True,
                              ip_addresses=("127.0.0.1",))
    proc = ManagedProcess(f"{worker.name}/version-proxy-{git_version}", [
        sys.executable, "-m", "tests.harness.versionproxy", f"--port={port}", f"--upstream={worker.server}",
        f"--git-version={git_version}", f"--ca={worker.ca.cert_path}",
        f"--serving-cert={serving.cert}", f"--serving-key={serving.key}",
        f"--front-proxy-cert={worker.front_proxy_client.cert}", f"--front-proxy-key={worker.front_proxy_client.key}",
    ], worker.logs_dir / f"version-proxy-{port}.log", env={"PYTHONPATH": str(REPO_ROOT)})
    worker.extra.append(proc)
    proc.start()
    proc.wait_until(lambda: port_open(port), "listening", 30)
    return f"https://127.0.0.1:{port}"

