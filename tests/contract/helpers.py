"""Manifests the contract tests create (Kueue v1beta2, batch/v1)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.changes import ChangeType
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView
from tests import builders
from tests.harness.kwok import KEEP_RUNNING_ANNOTATIONS

KUEUE = "kueue.x-k8s.io/v1beta2"


def flavor(name: str) -> dict:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def priority_class(name: str, value: int) -> dict:
    return {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def cluster_queue(name: str, flavor_name: str, gpus: int, strategy: str = "BestEffortFIFO", checks: list[str] | None = None) -> dict:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": strategy,
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": flavor_name, "resources": [
                {"name": "cpu", "nominalQuota": 1000}, {"name": "memory", "nominalQuota": "10000Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}],
        }],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace: str, name: str, cq: str) -> dict:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def job(namespace: str, name: str, queue: str, gpus: int = 1, workers: int = 1, priority_class: str | None = None,
        submission_id: str | None = None, keep_running: bool = True, restarted: bool = False) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": queue, "tau.azure.com/managed-by": "tau", "tau.azure.com/job": name}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    if submission_id:
        labels["tau.azure.com/submission-id"] = submission_id
    resources = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    annotations = dict(KEEP_RUNNING_ANNOTATIONS) if keep_running else {}
    if restarted:  # the simulator gives such pods a terminated previous container; KWOK serves one for every pod
        annotations["sim.tau-tui.io/restarts"] = "1"
    return builders.job(
        name, namespace, labels=labels, suspend=True, api=True,
        spec={"parallelism": workers, "completions": workers, "backoffLimit": 0},
        pod_metadata={"annotations": annotations},
        pod_spec={"restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                  "containers": [{"name": "main", "image": "registry.local/tau/train:1",
                                  "resources": {"requests": resources, "limits": resources}}]})


def node(name: str, gpus: int = 8) -> dict:
    return builders.node(name, ready=None, gpus=gpus, capacity={"cpu": "96", "memory": "1843Gi", "pods": "110"},
                         labels={"kubernetes.io/hostname": name}, api=True)


def pod_on_node(namespace: str, name: str, node_name: str) -> dict:
    return builders.pod(name, namespace, node=node_name, image="registry.local/tau/idle:1", phase=None,
                        spec={"tolerations": [{"operator": "Exists"}]}, api=True)


@dataclass(frozen=True)
class SeenChange:
    """A change a reader of the change feed saw: what it was, and the object (its last state when
    it was deleted)."""

    type: ChangeType
    obj: ObjectView


class Recorder:
    """A reader of the cache's change feed (a JournalCursor on one kind), as the app's readers
    follow it: each time it is asked it reads the keys changed since it last asked, and notes an
    ADDED, MODIFIED (a new resourceVersion) or DELETED for each object it finds changed.  What the
    cache held when it first read is known, not a change."""

    def __init__(self, backend, kind: ResourceKind):
        self.backend = backend
        self.kind = kind
        self.cursor = JournalCursor(kind)
        self.events: list[SeenChange] = []
        self.lock = threading.Lock()
        self._seen: dict[tuple[str, str], ObjectView] = {}
        self._primed = False
        self.poll()

    def poll(self) -> None:
        with self.lock:
            keys = self.cursor.read(self.backend).keys
            if keys is None:
                now = {view.key: view for view in self.backend.views(self.kind)}
                if not self._primed:
                    self._seen, self._primed = now, True
                    return
                keys = set(now) | set(self._seen)
            for namespace, name in sorted(keys):
                view = self.backend.get(self.kind, name, namespace or None)
                before = self._seen.get((namespace, name))
                if view is None and before is not None:
                    self.events.append(SeenChange(ChangeType.DELETED, before))
                    del self._seen[(namespace, name)]
                elif view is not None and (before is None or before.resource_version != view.resource_version):
                    self.events.append(SeenChange(ChangeType.ADDED if before is None else ChangeType.MODIFIED, view))
                    self._seen[(namespace, name)] = view

    def of(self, name):
        self.poll()
        with self.lock:
            return [e for e in self.events if e.obj.name == name]
