"""Logs of a run that MultiKueue placed on a worker: its pods live on the
worker, so they are read there, through a kubeconfig context the user maps to
the MultiKueueCluster in config.yaml (``worker_contexts``).  Without a mapping
the Logs pane says which worker holds the pods and how to map it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def placed_worker(backend: Any, namespace: str, owner_uid: str) -> str | None:
    """The MultiKueueCluster a Job/RayJob's Workload was placed on (status.clusterName), if any."""
    workload = backend.workload_for_owner(namespace, owner_uid) if owner_uid else None
    return getattr(workload, "cluster_name", None) or None


def unmapped_message(worker: str, what: str, config_path: str) -> str:
    return (f"the pods of {what} run on MultiKueue worker {worker}, not on this manager. To read them here, map the "
            f"worker to a kubeconfig context in {config_path}:\n  worker_contexts:\n    {worker}: <kubeconfig context>")


def worker_log_backend(backend: Any, worker: str, contexts: Mapping[str, str]) -> Any | None:
    """A backend (never started: no watches) that reads pods and logs on ``worker``, or None when unmapped."""
    context = contexts.get(worker)
    if not context:
        return None
    fleet = getattr(getattr(getattr(backend, "world", None), "multikueue", None), "fleet", None)
    if fleet is not None:
        from tau_tui.core.operations.multikueue_steps.simulated_fleet import SimFleetConnector

        return SimFleetConnector(fleet).admin(context).backend
    from tau_tui.core.cluster.real import KubernetesBackend

    return KubernetesBackend(context=context)
