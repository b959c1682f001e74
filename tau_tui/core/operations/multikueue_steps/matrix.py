"""The per-worker dependency matrix (seed: "Worker dependency and security
contract"; taugrid.md §9.1): before tenants are authorised, every eligible
worker must match the manager's Kubernetes, Kueue, KubeRay and workload CRD
*minor* versions and hold the queue, ServiceAccount, Secrets, StorageClass,
PVCs, image pull secrets, GPU capacity and flavors the workloads need.

Each cell is ✓, ✗ with the reason, or "not readable" with the permission
that is missing.  Unreadable is not healthy: the step verifies only when
every cell is ✓."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import is_gpu_resource
from tau_tui.core.operations.multikueue_steps.access import (
    CRD,
    PVC,
    SECRET,
    SERVICE_ACCOUNT,
    STORAGE_CLASS,
    AccessError,
    BackendAccess,
)
from tau_tui.core.operations.multikueue_steps.engine import StepContext
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan

R = ResourceKind
OK, BAD, UNREADABLE = "ok", "bad", "unreadable"
MARK = {OK: "✓", BAD: "✗", UNREADABLE: "?"}
COLUMNS = ("Kubernetes", "Kueue", "KubeRay", "Workload CRDs", "Queue", "ServiceAccount", "Secret", "StorageClass",
           "PVC", "Image pull secrets", "GPU capacity", "Flavors")
KUEUE_CRD = "workloads.kueue.x-k8s.io"
KUBERAY_CRD = "rayjobs.ray.io"
WORKLOAD_CRDS = ("workloads.kueue.x-k8s.io", "rayjobs.ray.io", "rayclusters.ray.io")
VERSION_LABEL = "app.kubernetes.io/version"
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
        if exc.code in (401, 403):
            return Cell(UNREADABLE, f"not readable: {exc.message}")
        return Cell(UNREADABLE, f"not readable: {exc.message}")


def _compare(what: str, mine: str | None, theirs: str | None) -> Cell:
    if theirs is None:
        return Cell(BAD, f"{what} not installed on the worker")
    if mine is None:
        return Cell(BAD, f"{what} not installed on the manager")
    if minor(mine) != minor(theirs):
        return Cell(BAD, f"{theirs} vs manager {mine}: minor differs (out of contract)")
    return Cell(OK, theirs)


def _crd_version(access: BackendAccess, name: str) -> str | None:
    crd = access.get(CRD, name)
    if crd is None:
        return None
    labels = (crd.get("metadata") or {}).get("labels") or {}
    return labels.get(VERSION_LABEL) or "served " + ",".join(
        sorted(v.get("name", "") for v in (crd.get("spec") or {}).get("versions") or () if v.get("served")))


def _served(access: BackendAccess, name: str) -> list[str] | None:
    crd = access.get(CRD, name)
    if crd is None:
        return None
    return sorted(v.get("name", "") for v in (crd.get("spec") or {}).get("versions") or () if v.get("served"))


def worker_row(manager: BackendAccess, worker: BackendAccess, name: str, plan: MultiKueuePlan) -> MatrixRow:
    namespaces = list(plan.namespaces)
    cells: list[tuple[str, Cell]] = []
    mgr_k8s = manager.version()
    cells.append(("Kubernetes", _cell(lambda: _compare("Kubernetes", mgr_k8s, worker.version()))))
    cells.append(("Kueue", _cell(lambda: _compare("Kueue", _crd_version(manager, KUEUE_CRD), _crd_version(worker, KUEUE_CRD)))))
    cells.append(("KubeRay", _cell(lambda: _compare("KubeRay", _crd_version(manager, KUBERAY_CRD), _crd_version(worker, KUBERAY_CRD)))))

    def crds() -> Cell:
        bad = []
        for crd in WORKLOAD_CRDS:
            mine, theirs = _served(manager, crd), _served(worker, crd)
            if mine != theirs:
                bad.append(f"{crd} serves {', '.join(theirs or ['nothing'])} vs manager {', '.join(mine or ['nothing'])}")
        return Cell(BAD, "; ".join(bad)) if bad else Cell(OK, "same served versions")
    cells.append(("Workload CRDs", _cell(crds)))

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
        sc_cell = pvc_cell = Cell(UNREADABLE, f"not readable: {exc.message}")
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
    return MatrixRow(name, tuple(cells))


def dependency_matrix(ctx: StepContext) -> list[MatrixRow]:
    rows = []
    for wp in ctx.plan.workers:
        try:
            worker = ctx.inspector(wp.name)
            rows.append(worker_row(ctx.manager, worker, wp.name, ctx.plan))
        except AccessError as exc:
            rows.append(MatrixRow(wp.name, tuple((col, Cell(UNREADABLE, f"not readable: {exc.message}")) for col in COLUMNS)))
    return rows
