"""The per-worker dependency matrix (seed: "Worker dependency and security
contract"; taugrid.md §9.1): before tenants are authorised, every eligible
worker must match the manager's Kubernetes, Kueue, KubeRay and workload CRD
*minor* versions and hold the queue, ServiceAccount, Secrets, StorageClass,
PVCs, images' pull secrets, dataset and checkpoint claims, GPU capacity,
flavors, topology and network policies the workloads need.

Each cell is ✓ (proven from what both API servers serve), ✗ with the reason,
or ``? unknown`` naming what could not be read or established.  Unknown is
not healthy: the step verifies only when every cell is ✓.

Versions come from the servers: Kubernetes from ``/version``, the workload
CRDs from ``spec.versions`` (served and storage sets compared exactly), and
Kueue's and KubeRay's release from their CRDs' ``app.kubernetes.io/version``
label (set by the Helm charts) or, without it, from the image tag of their
controller Deployment.  Neither found on a side: that cell is unknown."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.operations.multikueue_steps.access import (
    CRD,
    DEPLOYMENT,
    NETWORK_POLICY,
    PVC,
    SECRET,
    SERVICE_ACCOUNT,
    STORAGE_CLASS,
    TOPOLOGY,
    AccessError,
    BackendAccess,
)
from tau_tui.core.operations.multikueue_steps.engine import StepContext
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan

R = ResourceKind
OK, BAD, UNKNOWN = "ok", "bad", "unknown"
MARK = {OK: "✓", BAD: "✗", UNKNOWN: "?"}
COLUMNS = ("Kubernetes", "Kueue", "KubeRay", "Workload CRDs", "Queue", "ServiceAccount", "Secret", "StorageClass",
           "PVC", "Image pull secrets", "GPU capacity", "Flavors", "Images", "Dataset/checkpoint", "Topology",
           "Network")
KUEUE_CRD = "workloads.kueue.x-k8s.io"
KUBERAY_CRD = "rayjobs.ray.io"
WORKLOAD_CRDS = ("workloads.kueue.x-k8s.io", "rayjobs.ray.io", "rayclusters.ray.io")
VERSION_LABEL = "app.kubernetes.io/version"
#: Each release's controller Deployment (label selector, container), read when its CRDs carry no
#: version label: Kueue's chart and kustomize manifests and KubeRay's chart set these labels.
KUEUE_CONTROLLER = ("app.kubernetes.io/name=kueue", "manager")
KUBERAY_CONTROLLER = ("app.kubernetes.io/name=kuberay-operator", "kuberay-operator")
#: The runs whose pod specs say what a tenant's workloads need on a worker.
RUN_TYPES = (R.JOB.type, R.RAY_JOB.type, R.POD.type)
_MINOR = re.compile(r"v?(\d+)\.(\d+)")


@dataclass(frozen=True)
class Cell:
    status: str
    text: str

    @property
    def mark(self) -> str:
        return MARK[self.status]

    def __str__(self) -> str:
        return f"{self.mark} {self.text}"


def unknown(what: str) -> Cell:
    return Cell(UNKNOWN, f"unknown: {what}")


@dataclass(frozen=True)
class MatrixRow:
    worker: str
    cells: tuple[tuple[str, Cell], ...]

    @property
    def ok(self) -> bool:
        return all(cell.status == OK for _, cell in self.cells)

    def problems(self) -> list[str]:
        return [f"{self.worker} {col}: {cell}" for col, cell in self.cells if cell.status != OK]


def minor(version: str | None) -> str | None:
    m = _MINOR.match(version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _cell(read: Callable[[], Cell]) -> Cell:
    try:
        return read()
    except AccessError as exc:
        return unknown(exc.message)


def _compare(what: str, mine: str | None, theirs: str | None) -> Cell:
    """Two releases by minor version; None: not installed on that side."""
    if theirs is None:
        return Cell(BAD, f"{what} not installed on the worker")
    if mine is None:
        return Cell(BAD, f"{what} not installed on the manager")
    for side, version in (("manager", mine), ("worker", theirs)):
        if minor(version) is None:
            return unknown(f"the {side}'s {what} release {version!r} is not a version")
    if minor(mine) != minor(theirs):
        return Cell(BAD, f"{theirs} vs manager {mine}: minor differs (out of contract)")
    return Cell(OK, theirs)


# -- releases -------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """A component's release on one cluster: ``version``, or why it is not known."""

    installed: bool
    version: str | None = None
    why_unknown: str = ""


def image_tag(image: str) -> str | None:
    """``registry.k8s.io/kueue/kueue:v0.17.0`` → ``v0.17.0``; None for a digest-only or untagged image."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None


def release_label(crd: dict[str, Any]) -> str | None:
    """The release a CRD's :data:`VERSION_LABEL` names (Kueue's and KubeRay's charts set it); None without one."""
    label = ((crd.get("metadata") or {}).get("labels") or {}).get(VERSION_LABEL)
    return str(label) if label else None


def _release(access: BackendAccess, crd_name: str, controller: tuple[str, str], namespace: str | None) -> Release:
    """The release from the CRD's version label, else from the controller container's image tag
    (``namespace`` None: any namespace)."""
    crd = access.get(CRD, crd_name)
    if crd is None:
        return Release(False)
    label = release_label(crd)
    if label:
        return Release(True, label)
    selector, container = controller
    where = f"in {namespace}" if namespace else "in any namespace"
    missing = f"no {VERSION_LABEL} label on {crd_name}"
    try:
        deployments = access.list(DEPLOYMENT, namespace, label_selector=selector)
    except AccessError as exc:
        return Release(True, None, f"{missing}, and its controller Deployment is not readable ({exc.message})")
    tags = sorted({tag for d in deployments
                   for c in (((d.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ()
                   if c.get("name") == container and (tag := image_tag(str(c.get("image") or ""))) and minor(tag)})
    if len(tags) == 1:
        return Release(True, tags[0])
    if not tags:
        return Release(True, None, f"{missing} and no Deployment labelled {selector} {where} whose {container} "
                                   "container image has a version tag")
    return Release(True, None, f"{missing}, and the Deployments labelled {selector} {where} disagree: {', '.join(tags)}")


def _release_cell(what: str, mine: Release, theirs: Release) -> Cell:
    if not theirs.installed:
        return Cell(BAD, f"{what} not installed on the worker")
    if not mine.installed:
        return Cell(BAD, f"{what} not installed on the manager")
    for side, release in (("manager", mine), ("worker", theirs)):
        if release.version is None:
            return unknown(f"{what} release on the {side}: {release.why_unknown}")
    return _compare(what, mine.version, theirs.version)


# -- workload CRDs ----------------------------------------------------------------


def _crd_versions(access: BackendAccess, name: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(served, storage) version names of a CRD; None when it is not installed."""
    crd = access.get(CRD, name)
    if crd is None:
        return None
    versions = [v for v in (crd.get("spec") or {}).get("versions") or () if isinstance(v, dict)]
    return (frozenset(str(v.get("name")) for v in versions if v.get("served")),
            frozenset(str(v.get("name")) for v in versions if v.get("storage")))


def _shown(names: Iterable[str]) -> str:
    return ",".join(sorted(names)) or "none"


def _workload_crds(manager: BackendAccess, worker: BackendAccess) -> Cell:
    bad, unproven, neither = [], [], []
    for crd in WORKLOAD_CRDS:
        mine, theirs = _crd_versions(manager, crd), _crd_versions(worker, crd)
        if mine is None and theirs is None:
            neither.append(crd)
            continue
        if mine is None or theirs is None:
            bad.append(f"{crd} not installed on the {'manager' if mine is None else 'worker'}")
            continue
        for side, (served, storage) in (("manager", mine), ("worker", theirs)):
            if not served or len(storage) != 1:
                unproven.append(f"{crd} on the {side} lists served {_shown(served)}, storage {_shown(storage)}")
        if mine[0] != theirs[0]:
            bad.append(f"{crd} serves {_shown(theirs[0])} vs manager {_shown(mine[0])}")
        if mine[1] != theirs[1]:
            bad.append(f"{crd} stores {_shown(theirs[1])} vs manager {_shown(mine[1])}")
    if bad:
        return Cell(BAD, "; ".join(bad))
    if unproven:
        return unknown("; ".join(unproven))
    return Cell(OK, "same served & storage" + (f" ({', '.join(neither)} on neither)" if neither else ""))


# -- what the tenants' runs need ----------------------------------------------------------------


@dataclass(frozen=True)
class RunNeeds:
    """What the manager's runs in the tenant namespaces use, each with the first run that uses it."""

    runs: int
    images: dict[str, str]
    pull_secrets: dict[tuple[str, str], str]
    service_accounts: dict[tuple[str, str], str]
    claims: dict[tuple[str, str], str]


def pod_specs(rt: ResourceType, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs of a Job, a RayJob (head, worker groups, submitter) or a Pod."""
    spec = obj.get("spec") or {}
    if rt.kind == "Pod":
        return [spec]
    if rt.kind == "Job":
        return [(spec.get("template") or {}).get("spec") or {}]
    cluster = spec.get("rayClusterSpec") or {}
    templates = [(cluster.get("headGroupSpec") or {}).get("template"), spec.get("submitterPodTemplate"),
                 *((group or {}).get("template") for group in cluster.get("workerGroupSpecs") or ())]
    return [(t.get("spec") or {}) for t in templates if isinstance(t, dict)]


def run_needs(manager: BackendAccess, namespaces: Iterable[str]) -> RunNeeds:
    """Read every Job, RayJob and pod the manager holds in the tenant namespaces (the recent runs:
    finished ones stay until their TTL) for images, pull secrets, ServiceAccounts and claims."""
    runs = 0
    images: dict[str, str] = {}
    pull: dict[tuple[str, str], str] = {}
    accounts: dict[tuple[str, str], str] = {}
    claims: dict[tuple[str, str], str] = {}
    for ns in namespaces:
        for rt in RUN_TYPES:
            for obj in manager.list(rt, ns):
                runs += 0 if rt.kind == "Pod" else 1
                run = f"{rt.kind} {ns}/{(obj.get('metadata') or {}).get('name')}"
                for spec in pod_specs(rt, obj):
                    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
                        if container.get("image"):
                            images.setdefault(str(container["image"]), run)
                    for ref in spec.get("imagePullSecrets") or ():
                        if ref.get("name"):
                            pull.setdefault((ns, str(ref["name"])), run)
                    accounts.setdefault((ns, str(spec.get("serviceAccountName") or "default")), run)
                    for volume in spec.get("volumes") or ():
                        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                        if claim:
                            claims.setdefault((ns, str(claim)), run)
    return RunNeeds(runs, images, pull, accounts, claims)


def _images(manager: BackendAccess, worker: BackendAccess, needs: RunNeeds) -> Cell:
    """The images' pull credentials: the pods' imagePullSecrets and those of the ServiceAccounts they run as."""
    missing = []
    secrets = dict(needs.pull_secrets)
    for (ns, account), run in sorted(needs.service_accounts.items()):
        if worker.get(SERVICE_ACCOUNT, account, ns) is None:
            missing.append(f"ServiceAccount {ns}/{account} ({run})")
        for ref in (manager.get(SERVICE_ACCOUNT, account, ns) or {}).get("imagePullSecrets") or ():
            if ref.get("name"):
                secrets.setdefault((ns, str(ref["name"])), f"ServiceAccount {ns}/{account}")
    for (ns, name), user in sorted(secrets.items()):
        if worker.get(SECRET, name, ns) is None:
            missing.append(f"pull secret {ns}/{name} ({user})")
    if missing:
        return Cell(BAD, "missing on the worker: " + ", ".join(missing))
    if not needs.images:
        return Cell(OK, "no runs in the tenant namespaces to read images from")
    pulls = f"pull secrets {', '.join(f'{ns}/{n}' for ns, n in sorted(secrets))} present" if secrets else "no pull secret"
    return Cell(OK, f"{len(needs.images)} images, {pulls}: " + ", ".join(sorted(needs.images)))


def _claims(worker: BackendAccess, needs: RunNeeds) -> Cell:
    missing = [f"{ns}/{claim} ({run})" for (ns, claim), run in sorted(needs.claims.items())
               if worker.get(PVC, claim, ns) is None]
    if missing:
        return Cell(BAD, "PVCs the runs mount missing on the worker: " + ", ".join(missing))
    if not needs.claims:
        return Cell(OK, f"the {needs.runs} runs mount no PVC")
    return Cell(OK, f"{len(needs.claims)} present: " + ", ".join(f"{ns}/{c}" for ns, c in sorted(needs.claims)))


# -- topology and network -------------------------------------------------------------------


def _levels(topology: dict[str, Any]) -> list[str]:
    return [str(level.get("nodeLabel")) for level in (topology.get("spec") or {}).get("levels") or ()]


def _topology(manager: BackendAccess, worker: BackendAccess, plan: MultiKueuePlan) -> Cell:
    flavor = manager.get(R.RESOURCE_FLAVOR.type, plan.flavor)
    if flavor is None:
        return Cell(BAD, f"ResourceFlavor {plan.flavor} missing on the manager")
    name = (flavor.get("spec") or {}).get("topologyName")
    if not name:
        return Cell(OK, f"flavor {plan.flavor} names no topology")
    problems = []
    mine, theirs = manager.get(TOPOLOGY, name), worker.get(TOPOLOGY, name)
    if mine is None:
        problems.append(f"Topology {name} (named by flavor {plan.flavor}) missing on the manager")
    if theirs is None:
        problems.append(f"Topology {name} missing on the worker")
    elif mine is not None and _levels(mine) != _levels(theirs):
        problems.append(f"Topology {name} levels {_levels(theirs)} vs manager {_levels(mine)}")
    worker_flavor = worker.get(R.RESOURCE_FLAVOR.type, plan.flavor)
    worker_name = ((worker_flavor or {}).get("spec") or {}).get("topologyName")
    if worker_flavor is None:
        problems.append(f"ResourceFlavor {plan.flavor} missing on the worker")
    elif worker_name != name:
        problems.append(f"worker flavor {plan.flavor} names topology {worker_name or 'none'}, the manager's {name}")
    return Cell(BAD, "; ".join(problems)) if problems else Cell(OK, f"{name} on flavor {plan.flavor}")


def _network(manager: BackendAccess, worker: BackendAccess, namespaces: Iterable[str]) -> Cell:
    wanted = [(ns, str((p.get("metadata") or {}).get("name"))) for ns in namespaces for p in manager.list(NETWORK_POLICY, ns)]
    missing = [f"{ns}/{name}" for ns, name in wanted if worker.get(NETWORK_POLICY, name, ns) is None]
    if missing:
        return Cell(BAD, "NetworkPolicies missing on the worker: " + ", ".join(missing))
    if not wanted:
        return Cell(OK, "no NetworkPolicy in the tenant namespaces")
    return Cell(OK, f"{len(wanted)} present: " + ", ".join(f"{ns}/{name}" for ns, name in sorted(wanted)))


# -- the row ------------------------------------------------------------------------------


def _kubernetes(manager: BackendAccess, worker: BackendAccess) -> Cell:
    mine, theirs = manager.version(), worker.version()
    for side, version in (("manager", mine), ("worker", theirs)):
        if (minor(version) or "0.").startswith("0."):
            # v0.0.0-master…: a server built without version information cannot prove its minor.
            return unknown(f"the {side} reports Kubernetes {version!r} on /version, not a release")
    return _compare("Kubernetes", mine, theirs)


def worker_row(manager: BackendAccess, worker: BackendAccess, name: str, plan: MultiKueuePlan) -> MatrixRow:
    namespaces = list(plan.namespaces)
    cells: list[tuple[str, Cell]] = []
    cells.append(("Kubernetes", _cell(lambda: _kubernetes(manager, worker))))
    cells.append(("Kueue", _cell(lambda: _release_cell(
        "Kueue", _release(manager, KUEUE_CRD, KUEUE_CONTROLLER, plan.kueue_namespace),
        _release(worker, KUEUE_CRD, KUEUE_CONTROLLER, plan.kueue_namespace)))))
    cells.append(("KubeRay", _cell(lambda: _release_cell(
        "KubeRay", _release(manager, KUBERAY_CRD, KUBERAY_CONTROLLER, None),
        _release(worker, KUBERAY_CRD, KUBERAY_CONTROLLER, None)))))
    cells.append(("Workload CRDs", _cell(lambda: _workload_crds(manager, worker))))

    def queue() -> Cell:
        missing = []
        for ns in namespaces:
            lq = worker.get(R.LOCAL_QUEUE.type, plan.local_queue, ns)
            if lq is None:
                missing.append(f"LocalQueue {ns}/{plan.local_queue} missing")
            elif worker.get(R.CLUSTER_QUEUE.type, (lq.get("spec") or {}).get("clusterQueue", "")) is None:
                missing.append(f"ClusterQueue {(lq.get('spec') or {}).get('clusterQueue')} behind {ns}/{plan.local_queue} missing")
        return Cell(BAD, "; ".join(missing)) if missing else Cell(OK, f"{plan.local_queue} in {', '.join(namespaces)}")
    cells.append(("Queue", _cell(queue)))

    def service_accounts() -> Cell:
        missing = [ns for ns in namespaces if worker.get(SERVICE_ACCOUNT, "default", ns) is None]
        return Cell(BAD, "ServiceAccount default missing in " + ", ".join(missing)) if missing else Cell(OK, "default in every namespace")
    cells.append(("ServiceAccount", _cell(service_accounts)))

    def referenced(field: str) -> Cell:
        missing, wanted = [], 0
        for ns in namespaces:
            sa = manager.get(SERVICE_ACCOUNT, "default", ns) or {}
            for ref in sa.get(field) or ():
                wanted += 1
                if worker.get(SECRET, ref.get("name", ""), ns) is None:
                    missing.append(f"{ns}/{ref.get('name')}")
        if missing:
            return Cell(BAD, "missing on the worker: " + ", ".join(missing))
        return Cell(OK, f"{wanted} present" if wanted else "none referenced")
    cells.append(("Secret", _cell(lambda: referenced("secrets"))))

    def pvcs() -> tuple[Cell, Cell]:
        claims = [c for ns in namespaces for c in manager.list(PVC, ns)]
        classes = sorted({(c.get("spec") or {}).get("storageClassName") or "" for c in claims} - {""})
        missing_classes = [sc for sc in classes if worker.get(STORAGE_CLASS, sc) is None]
        sc_cell = (Cell(BAD, "missing on the worker: " + ", ".join(missing_classes)) if missing_classes
                   else Cell(OK, ", ".join(classes) if classes else "no PVC names a StorageClass"))
        missing = [f"{c['metadata']['namespace']}/{c['metadata']['name']}" for c in claims
                   if worker.get(PVC, c["metadata"]["name"], c["metadata"]["namespace"]) is None]
        pvc_cell = (Cell(BAD, "missing on the worker: " + ", ".join(missing)) if missing
                    else Cell(OK, f"{len(claims)} present" if claims else "no PVCs in the tenant namespaces"))
        return sc_cell, pvc_cell
    try:
        sc_cell, pvc_cell = pvcs()
    except AccessError as exc:
        sc_cell = pvc_cell = unknown(exc.message)
    cells += [("StorageClass", sc_cell), ("PVC", pvc_cell)]
    cells.append(("Image pull secrets", _cell(lambda: referenced("imagePullSecrets"))))

    def gpus() -> Cell:
        total = 0.0
        for node in worker.list(R.NODE.type):
            for res, qty in ((node.get("status") or {}).get("allocatable") or {}).items():
                if is_gpu_resource(res):
                    try:
                        total += float(qty)
                    except ValueError:
                        pass
        if total < plan.gpus_per_worker:
            return Cell(BAD, f"{total:g} GPUs allocatable, the profile needs {plan.gpus_per_worker} per worker")
        return Cell(OK, f"{total:g} GPUs allocatable")
    cells.append(("GPU capacity", _cell(gpus)))

    def flavors() -> Cell:
        wanted = [plan.flavor]
        missing = [f for f in wanted if worker.get(R.RESOURCE_FLAVOR.type, f) is None]
        return Cell(BAD, "ResourceFlavor missing: " + ", ".join(missing)) if missing else Cell(OK, ", ".join(wanted))
    cells.append(("Flavors", _cell(flavors)))

    try:
        needs = run_needs(manager, namespaces)
    except AccessError as exc:
        unread = unknown(f"the tenants' runs: {exc.message}")
        cells += [("Images", unread), ("Dataset/checkpoint", unread)]
    else:
        cells.append(("Images", _cell(lambda: _images(manager, worker, needs))))
        cells.append(("Dataset/checkpoint", _cell(lambda: _claims(worker, needs))))
    cells.append(("Topology", _cell(lambda: _topology(manager, worker, plan))))
    cells.append(("Network", _cell(lambda: _network(manager, worker, namespaces))))
    return MatrixRow(name, tuple(cells))


def eligible_workers(ctx: StepContext) -> list[str]:
    """Every worker Kueue may dispatch to: the plan's, and every cluster the live MultiKueueConfig lists."""
    config = ctx.manager.get(R.MULTIKUEUE_CONFIG.type, ctx.plan.config)
    listed = [str(c) for c in ((config or {}).get("spec") or {}).get("clusters") or ()]
    return list(dict.fromkeys([*(w.name for w in ctx.plan.workers), *listed]))


def dependency_matrix(ctx: StepContext) -> list[MatrixRow]:
    """One row per eligible worker. A cluster of the config that the plan does not list cannot be read (the
    plan gives neither a credential nor an adminContext for it): every cell of its row is unknown."""
    rows = []
    try:
        names = eligible_workers(ctx)
    except AccessError as exc:
        names = [w.name for w in ctx.plan.workers]
        rows.append(MatrixRow(f"MultiKueueConfig {ctx.plan.config}", tuple((col, unknown(exc.message)) for col in COLUMNS)))
    for name in names:
        if ctx.plan.worker(name) is None:
            why = unknown(f"{name} is in MultiKueueConfig {ctx.plan.config} but not in the plan: no credential or "
                          "adminContext to read it with; add it to the plan's workers")
            rows.append(MatrixRow(name, tuple((col, why) for col in COLUMNS)))
            continue
        try:
            worker = ctx.inspector(name)
            rows.append(worker_row(ctx.manager, worker, name, ctx.plan))
        except AccessError as exc:
            rows.append(MatrixRow(name, tuple((col, unknown(exc.message)) for col in COLUMNS)))
    return rows
