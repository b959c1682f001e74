"""A simulated MultiKueue fleet: the manager world plus one world per worker,
each an API server of its own with bearer tokens, RBAC, versions and CRDs.

It gives the MultiKueue steps what a real fleet gives them: worker
kubeconfigs by context name (tokens minted as ServiceAccount token Secrets,
revoked by deleting them), workers reached by their server URL, reachability
(``world.api_outage``) and reported versions (``settings.kubernetes_version``
and the CRDs' ``app.kubernetes.io/version`` label)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tau_tui.core.cluster.clock import ManualClock
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.operations.multikueue_steps.access import (
    CRD,
    NETWORK_POLICY,
    SECRET,
    SERVICE_ACCOUNT,
    STORAGE_CLASS,
    AccessError,
    BackendAccess,
)
from tau_tui.core.operations.multikueue_steps.credentials import (
    CredentialError,
    WorkerCredential,
    credential_from_document,
    load_kubeconfig_file,
    standalone,
)
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.settings import SimSettings
from tau_tui.core.sim.store import ADMIN_NAME
from tau_tui.core.sim.world import SimulatedCluster

if TYPE_CHECKING:  # lab_plan imports the plan only when called, as before
    from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan

R = ResourceKind
TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
SA_ANNOTATION = "kubernetes.io/service-account.name"
#: A certificate-shaped placeholder: the simulation does not do TLS, but the kubeconfig check needs CA data.
SIM_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nc2ltdWxhdGVkIGNh\n-----END CERTIFICATE-----\n").decode()
CRD_VERSIONS = {"workloads.kueue.x-k8s.io": ("kueue.x-k8s.io", ["v1beta1", "v1beta2"], "v0.17.0"),
                "rayjobs.ray.io": ("ray.io", ["v1"], "v1.4.2"),
                "rayclusters.ray.io": ("ray.io", ["v1"], "v1.4.2")}
WORKER_IDENTITY = "system:serviceaccount:kueue-system:multikueue-worker"
KUEUE_WORKER_RESOURCES = ("jobs.batch", "jobs/status.batch", "pods", "workloads.kueue.x-k8s.io",
                          "workloads/status.kueue.x-k8s.io", "rayjobs.ray.io", "rayjobs/status.ray.io",
                          "rayclusters.ray.io")


def seed_crds(world: SimulatedCluster, kueue: str = "v0.17.0", kuberay: str = "v1.4.2") -> None:
    for name, (group, versions, _version) in CRD_VERSIONS.items():
        label = kueue if group == "kueue.x-k8s.io" else kuberay
        # the last version listed is the storage version (Kueue v0.16+ stores v1beta2)
        world.store.put(CRD, {"metadata": {"name": name, "labels": {"app.kubernetes.io/version": label}},
                              "spec": {"group": group, "versions": [{"name": v, "served": True, "storage": v == versions[-1]}
                                                                     for v in versions]}})


def tenant_network_policy(namespace: str) -> dict[str, Any]:
    """Ingress only from the namespace's own pods: the policy every lab cluster holds in a tenant namespace."""
    return {"metadata": {"name": "tenant-isolation", "namespace": namespace},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]}}


def server_of(worker: str) -> str:
    return f"https://{worker}.workers.sim:6443"


class SimFleet:
    """``manager`` plus ``workers`` by name; ``contexts`` are kubeconfig contexts the owner may name."""

    def __init__(self, manager: SimulatedCluster, workers: Mapping[str, SimulatedCluster]):
        self.manager = manager
        self.workers = dict(workers)
        self.contexts: dict[str, dict[str, Any]] = {}
        self._minted = 0
        #: The demo's in-memory keyring (``demo_fleet.DemoKeyring``), set only by the demo's fleet.
        self.demo_keyring: Any = None
        for world in self.workers.values():
            world.store.delete_hooks.append(self._on_delete(world))
        manager.multikueue.fleet = self

    @staticmethod
    def _on_delete(world: SimulatedCluster) -> Callable[[ResourceType, dict[str, Any]], None]:
        def hook(rt: ResourceType, obj: dict[str, Any]) -> None:
            if rt.plural == "secrets" and obj.get("type") == TOKEN_SECRET_TYPE:
                token = base64.b64decode((obj.get("data") or {}).get("token") or "").decode()
                world.store.tokens.pop(token, None)
        return hook

    def worker_by_server(self, server: str) -> tuple[str, SimulatedCluster] | None:
        for name, world in self.workers.items():
            if server_of(name) == server.rstrip("/"):
                return name, world
        return None

    def mint(self, worker: str, identity: str = WORKER_IDENTITY, *, context: str | None = None,
             insecure: bool = False) -> dict[str, Any]:
        """A ServiceAccount token for ``identity`` on ``worker`` (a token Secret in
        kube-system), as a kubeconfig; also offered as kubeconfig context ``context``."""
        world = self.workers[worker]
        self._minted += 1
        token = hashlib.sha256(f"{worker}/{identity}/{self._minted}/{world.store.rng.random()}".encode()).hexdigest()
        sa_ns, _, sa_name = identity.removeprefix("system:serviceaccount:").partition(":")
        world.store.put(SECRET, {"metadata": {"name": f"{sa_name or 'user'}-token-{self._minted}", "namespace": sa_ns or "kube-system",
                                              "annotations": {SA_ANNOTATION: sa_name, "tau.sim/identity": identity}},
                                 "type": TOKEN_SECRET_TYPE,
                                 "data": {"token": base64.b64encode(token.encode()).decode()}})
        world.store.tokens[token] = identity
        name = context or f"{worker}-{self._minted}"
        cluster: dict[str, Any] = {"server": server_of(worker)}
        if insecure:
            cluster["insecure-skip-tls-verify"] = True
        else:
            cluster["certificate-authority-data"] = SIM_CA
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": name,
               "clusters": [{"name": worker, "cluster": cluster}],
               "users": [{"name": f"{worker}-user", "user": {"token": token}}],
               "contexts": [{"name": name, "context": {"cluster": worker, "user": f"{worker}-user"}}]}
        self.contexts[name] = doc
        return doc

    def grant_kueue_verbs(self, worker: str, namespaces: Iterable[str], identity: str = WORKER_IDENTITY) -> None:
        store = self.workers[worker].store
        store.grant(identity, ("list", "watch"), ("workloads.kueue.x-k8s.io",))
        for ns in namespaces:
            store.grant(identity, ("create", "delete", "get", "list", "watch", "update", "patch"), KUEUE_WORKER_RESOURCES, ns)

    def token_secrets(self, worker: str, identity: str) -> list[dict[str, Any]]:
        return [s for s in self.workers[worker].store.items(SECRET)
                if s.get("type") == TOKEN_SECRET_TYPE and (s["metadata"].get("annotations") or {}).get("tau.sim/identity") == identity]


class _TokenBackend(SimulatedBackend):
    """A worker reached with a bearer token: every call authenticates it first,
    so a revoked token fails at once (401), and an outage fails like a dead socket."""

    def __init__(self, world: SimulatedCluster, token: str | None, name: str):
        super().__init__({name: world})
        self._token = token

    def _check_online(self) -> None:
        if self.world.api_down is not None:
            from tau_tui.core.cluster.api_failure import ApiFailure

            raise ApiFailure(0, "", f"the API server is unreachable: {self.world.api_down}")
        if self._token is not None:
            self.identity = self.world.store.authenticate(self._token)


class SimFleetConnector:
    """The :class:`WorkerConnector` of a simulated fleet."""

    def __init__(self, fleet: SimFleet):
        self.fleet = fleet

    def load(self, worker: str, path: str | None = None, context: str | None = None) -> WorkerCredential:
        if path:
            doc = standalone(load_kubeconfig_file(path, f"worker {worker}"), context, path)
            return credential_from_document(worker, doc, f"file {path}")
        if not context or context not in self.fleet.contexts:
            known = ", ".join(sorted(self.fleet.contexts)) or "none"
            raise CredentialError(f"worker {worker}: kubeconfig context {context!r} not found; known contexts: {known}")
        return credential_from_document(worker, standalone(self.fleet.contexts[context], context, "kubeconfig"),
                                        f"context {context}")

    def connect(self, credential: WorkerCredential) -> BackendAccess:
        found = self.fleet.worker_by_server(credential.server)
        if found is None:
            raise AccessError(f"worker {credential.worker}: {credential.server} does not answer (no such host)")
        name, world = found
        user = (credential.document().get("users") or [{}])[0].get("user") or {}
        return BackendAccess(_TokenBackend(world, str(user.get("token") or ""), name), f"worker {credential.worker}")

    def admin(self, context: str) -> BackendAccess:
        """A worker's name: its cluster admin; a context minted with :meth:`SimFleet.mint`: that token's identity."""
        if context in self.fleet.contexts and context not in self.fleet.workers:
            doc = self.fleet.contexts[context]
            found = self.fleet.worker_by_server(str(doc["clusters"][0]["cluster"]["server"]))
            if found is None:
                raise AccessError(f"context {context}: its server does not answer (no such host)")
            token = str((doc["users"][0].get("user") or {}).get("token") or "")
            return BackendAccess(_TokenBackend(found[1], token, found[0]), f"context {context}")
        if context not in self.fleet.workers:
            raise AccessError(f"no admin context {context!r}; the simulated fleet's workers are {', '.join(sorted(self.fleet.workers))}")
        return BackendAccess(_TokenBackend(self.fleet.workers[context], None, context), f"context {context} ({ADMIN_NAME})")


def build_lab_fleet(manager: SimulatedCluster, workers: Iterable[str] = ("lab-worker-1", "lab-worker-2"),
                    namespaces: Iterable[str] = ("team-nlp",), queue: str = "mk-lab-queue") -> SimFleet:
    """Worker worlds ready for MultiKueue: the tenant namespaces, the same
    LocalQueue and ClusterQueue, a ServiceAccount with an image pull secret,
    the tenant NetworkPolicy (also on the manager), a StorageClass, GPU nodes,
    matching versions and CRDs; one least-privilege
    credential per worker offered as kubeconfig context ``<worker>``."""
    namespaces = list(namespaces)
    seed_crds(manager)
    if manager.store.read(STORAGE_CLASS, "managed-csi") is None:
        manager.store.put(STORAGE_CLASS, {"metadata": {"name": "managed-csi"}, "provisioner": "disk.csi.azure.com"})
    worlds = {}
    for i, name in enumerate(workers):
        world = SimulatedCluster(ManualClock(manager.now()), seed=100 + i,
                                 settings=SimSettings(context=name, kubernetes_version=manager.settings.kubernetes_version))
        store = world.store
        for ns in ["default", "kube-system", "kueue-system", *namespaces]:
            store.put(R.NAMESPACE.type, {"metadata": {"name": ns}})
        seed_crds(world)
        store.put(STORAGE_CLASS, {"metadata": {"name": "managed-csi"}, "provisioner": "disk.csi.azure.com"})
        store.put(R.RESOURCE_FLAVOR.type, {"metadata": {"name": "mk-lab-gpu"}, "spec": {}})
        store.put(R.CLUSTER_QUEUE.type, {"metadata": {"name": "mk-lab-cq"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": "mk-lab-gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}})
        for ns in namespaces:
            store.put(R.LOCAL_QUEUE.type, {"metadata": {"name": queue, "namespace": ns}, "spec": {"clusterQueue": "mk-lab-cq"}})
            store.put(SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": ns}, "imagePullSecrets": [{"name": "acr-pull"}]})
            store.put(SECRET, {"metadata": {"name": "acr-pull", "namespace": ns}, "type": "kubernetes.io/dockerconfigjson",
                               "data": {".dockerconfigjson": base64.b64encode(b"{}").decode()}})
            store.put(NETWORK_POLICY, tenant_network_policy(ns))
        for n in range(2):
            store.put(R.NODE.type, {"metadata": {"name": f"{name}-gpu-{n}", "labels": {"tau.azure.com/gpu-class": "h100-80gb"}},
                                    "spec": {}, "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
                                                           "conditions": [{"type": "Ready", "status": "True"}]}})
        worlds[name] = world
    for ns in namespaces:
        if manager.store.read(SERVICE_ACCOUNT, "default", ns) is None and manager.store.read(R.NAMESPACE.type, ns) is not None:
            manager.store.put(SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": ns}, "imagePullSecrets": [{"name": "acr-pull"}]})
        if manager.store.read(NETWORK_POLICY, "tenant-isolation", ns) is None and manager.store.read(R.NAMESPACE.type, ns) is not None:
            manager.store.put(NETWORK_POLICY, tenant_network_policy(ns))
    if manager.store.read(R.RESOURCE_FLAVOR.type, "mk-lab-gpu") is None:
        manager.store.put(R.RESOURCE_FLAVOR.type, {"metadata": {"name": "mk-lab-gpu"}, "spec": {}})
    fleet = SimFleet(manager, worlds)
    for name in worlds:
        fleet.grant_kueue_verbs(name, namespaces)
        fleet.mint(name, context=name)
    return fleet


def lab_plan(workers: Iterable[str] = ("lab-worker-1", "lab-worker-2"), *, admin: bool = True) -> MultiKueuePlan:
    """The plan that fits :func:`build_lab_fleet` on the demo manager (``--demo``'s MultiKueue wizard)."""
    from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan, WorkerPlan

    return MultiKueuePlan(
        workers=tuple(WorkerPlan(w, context=w, admin_context=w if admin else None) for w in workers),
        namespaces=("team-nlp",), lanes=("multicluster",), admission_check="mk-lab", config="mk-lab-workers",
        cluster_queue="mk-lab-cq", local_queue="mk-lab-queue", profile="azure.research.multicluster.lab",
        flavor="mk-lab-gpu", source="simulated lab plan")
