"""The owner's MultiKueue plan: which workers, which names, which tenants.

One YAML file serves the wizard and the CLI (``tau-tui multikueue ... --plan
FILE``), so an exercise repeats exactly.  Unknown keys and wrong types are
refused with ``file:line:col key: message``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError, Position
from tau_tui.core.runconfig.yamlsource import KeyPath, load_mapping_file

DEFAULT_QUEUE = "jobqueue"
KUEUE_NAMESPACE = "kueue-system"


@dataclass(frozen=True)
class WorkerPlan:
    name: str
    #: Where the least-privilege credential comes from: a kubeconfig file, or a context of the owner's kubeconfig.
    kubeconfig: str | None = None
    context: str | None = None
    #: The owner's own context for this worker (inspection when the credential cannot read, and revocation).
    admin_context: str | None = None

    @property
    def secret_name(self) -> str:
        return f"{self.name}-kubeconfig"


@dataclass(frozen=True)
class MultiKueuePlan:
    workers: tuple[WorkerPlan, ...]
    namespaces: tuple[str, ...]
    teams: tuple[str, ...] = ()
    lanes: tuple[str, ...] = ()
    admission_check: str = "multikueue-dedicated"
    config: str = "multikueue-dedicated"
    cluster_queue: str = "multikueue-dedicated-cq"
    local_queue: str = "multikueue-dedicated"
    profile: str = "azure.research.multicluster.dedicated"
    flavor: str = "multikueue-gpu"
    gpu_quota: int = 16
    #: Kueue admits a workload only when the ClusterQueue covers every resource it requests, and every
    #: TauGrid pod requests cpu and memory besides GPUs; these bound them on the manager (workers keep their own).
    cpu_quota: str = "384"
    memory_quota: str = "7372Gi"
    gpus_per_worker: int = 8
    worker_count: int = 1
    priority_class: str = "taugrid-default"
    kueue_namespace: str = KUEUE_NAMESPACE
    #: Identities that must NOT read the credential Secret (default: each tenant namespace's default ServiceAccount).
    tenants: tuple[str, ...] = ()
    source: str = "plan"

    def tenant_identities(self) -> tuple[str, ...]:
        return self.tenants or tuple(f"system:serviceaccount:{ns}:default" for ns in self.namespaces)

    def worker(self, name: str) -> WorkerPlan | None:
        return next((w for w in self.workers if w.name == name), None)


_FIELDS = {"admissionCheck": "admission_check", "config": "config", "clusterQueue": "cluster_queue",
           "localQueue": "local_queue", "profile": "profile", "flavor": "flavor", "gpuQuota": "gpu_quota",
           "cpuQuota": "cpu_quota", "memoryQuota": "memory_quota",
           "gpusPerWorker": "gpus_per_worker", "workerCount": "worker_count", "priorityClass": "priority_class",
           "kueueNamespace": "kueue_namespace"}
_QUANTITIES = ("cpuQuota", "memoryQuota")
_LISTS = {"namespaces": "namespaces", "teams": "teams", "lanes": "lanes", "tenants": "tenants"}
_WORKER_FIELDS = {"name": "name", "kubeconfig": "kubeconfig", "context": "context", "adminContext": "admin_context"}


def plan_from_mapping(data: dict[str, Any], source: str,
                      position: Callable[[KeyPath], Position | None] = lambda path: None) -> MultiKueuePlan:
    problems: list[Diagnostic] = []

    def bad(path: KeyPath, message: str, hint: str) -> None:
        problems.append(Diagnostic(source, message, path=".".join(str(p) for p in path), position=position(path), hint=hint))

    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key in _QUANTITIES:
            # A Kubernetes quantity: 384 and "384" alike, or "7372Gi".
            if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() == "":
                bad((key,), "must be a Kubernetes quantity such as 384 or 7372Gi", "fix the value")
            else:
                kwargs[_FIELDS[key]] = str(value)
        elif key in _FIELDS:
            want = int if key in ("gpuQuota", "gpusPerWorker", "workerCount") else str
            if not isinstance(value, want) or isinstance(value, bool):
                bad((key,), f"must be {'an integer' if want is int else 'a string'}", "fix the value")
            else:
                kwargs[_FIELDS[key]] = value
        elif key in _LISTS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                bad((key,), "must be a list of strings", "write it as [a, b]")
            else:
                kwargs[_LISTS[key]] = tuple(value)
        elif key != "workers":
            bad((key,), f"unknown key {key!r}", "known keys: workers, " + ", ".join([*_FIELDS, *_LISTS]))
    workers = []
    raw_workers = data.get("workers")
    if not isinstance(raw_workers, list) or not raw_workers:
        bad(("workers",), "must list at least one worker", "add workers: [{name: worker-1, context: worker-1}]")
        raw_workers = []
    for i, entry in enumerate(raw_workers):
        if not isinstance(entry, dict):
            bad(("workers", i), "must be a mapping", "give name and kubeconfig or context")
            continue
        unknown = [k for k in entry if k not in _WORKER_FIELDS]
        for k in unknown:
            bad(("workers", i, k), f"unknown key {k!r}", "known keys: " + ", ".join(_WORKER_FIELDS))
        if not isinstance(entry.get("name"), str) or not entry.get("name"):
            bad(("workers", i, "name"), "a worker needs a name (the MultiKueueCluster's name)", "add name: ...")
            continue
        if not entry.get("kubeconfig") and not entry.get("context"):
            bad(("workers", i), f"worker {entry['name']} needs kubeconfig (a path) or context (a kubeconfig context)",
                "add one of them")
        workers.append(WorkerPlan(**{_WORKER_FIELDS[k]: v for k, v in entry.items() if k in _WORKER_FIELDS}))
    if not kwargs.get("namespaces"):
        bad(("namespaces",), "a MultiKueue profile must name its tenant namespaces (an empty list would make it global)",
            "add namespaces: [team-a]")
    if problems:
        raise DiagnosticError(problems)
    return MultiKueuePlan(workers=tuple(workers), source=source, **kwargs)


def load_plan(path: str | Path) -> MultiKueuePlan:
    data, smap = load_mapping_file(Path(path))
    return plan_from_mapping(data, str(path), smap.position_of)
