"""node → the runs its GPU fault hit (:func:`~tau_tui.core.operations.gpufaults.runs_hit_by_node`),
from pods indexed by node and RayJobs by cluster, both kept current from the cache's change feed.

The Nodes pane names the runs a bad node hit on every read; going over every pod and RayJob for it
costs the cluster's size.  :meth:`LiveRunsHit.current` reads only the pods and RayJobs its cursors name
since its last call (every one when a cursor says so: the first time, a journal that does not reach
back) and then looks at
the pods on the faulty nodes alone.  Not thread safe: one reader thread owns an instance."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tau_tui.core.cluster.interfaces import ClusterBackend, is_tau_run
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView, PodView, RayJobView
from tau_tui.core.operations.gpufaults import NodeGpuFault, gpu_hits, run_key_of_pod

Key = tuple[str, str]
#: Makes the index hold an object's view under its key from now on (None: nothing).
_Put = Callable[[Key, "ObjectView | None"], None]


class LiveRunsHit:
    def __init__(self) -> None:
        self._backend: ClusterBackend | None = None
        #: Whole lists read, and objects read one by one (tests bound a read's work by them).
        self.full_reads = 0
        self.objects_read = 0
        self._forget()

    def _forget(self) -> None:
        self._cursors = {kind: JournalCursor(kind) for kind in (ResourceKind.POD, ResourceKind.RAY_JOB)}
        self._pods_by_node: dict[str, dict[Key, PodView]] = {}
        self._node_of_pod: dict[Key, str] = {}
        #: (namespace, Ray cluster) → the Tau RayJobs' names on it; and the one a pod's run is named after
        self._jobs_of_cluster: dict[Key, set[str]] = {}
        self._cluster_of_job: dict[Key, Key] = {}
        self._clusters: dict[Key, str] = {}

    def current(self, backend: ClusterBackend, faults: Mapping[str, NodeGpuFault]) -> dict[str, list[str]]:
        """What ``runs_hit_by_node(backend.pods(), backend.ray_jobs(), faults)`` gives."""
        if backend is not self._backend:
            self._forget()  # another cluster: nothing kept holds
            self._backend = backend
        self._follow(backend, ResourceKind.POD, self._put_pod)
        self._follow(backend, ResourceKind.RAY_JOB, self._put_ray_job)
        out: dict[str, list[str]] = {}
        for node in faults:
            keys = set()
            for pod in self._pods_by_node.get(node, {}).values():
                if gpu_hits((pod,), faults):
                    key = run_key_of_pod(pod, self._clusters)
                    if key:
                        keys.add(key)
            if keys:
                out[node] = sorted(keys)
        return out

    def _follow(self, backend: ClusterBackend, kind: ResourceKind, put: _Put) -> None:
        changed = self._cursors[kind].read(backend).keys
        if changed is None:
            self.full_reads += 1
            listed = {view.key: view for view in backend.views(kind)}
            held = self._node_of_pod if kind is ResourceKind.POD else self._cluster_of_job
            for key in [key for key in held if key not in listed]:
                put(key, None)
            for key, view in listed.items():
                put(key, view)
        else:
            for namespace, name in changed:
                put((namespace, name), backend.get(kind, name, namespace or None))
            self.objects_read += len(changed)

    def _put_pod(self, key: Key, view: ObjectView | None) -> None:
        old_node = self._node_of_pod.pop(key, None)
        if old_node is not None:
            on_node = self._pods_by_node[old_node]
            on_node.pop(key, None)
            if not on_node:
                del self._pods_by_node[old_node]
        if isinstance(view, PodView) and view.node_name:
            self._node_of_pod[key] = view.node_name
            self._pods_by_node.setdefault(view.node_name, {})[key] = view

    def _put_ray_job(self, key: Key, view: ObjectView | None) -> None:
        old = self._cluster_of_job.pop(key, None)
        if old is not None:
            self._jobs_of_cluster[old].discard(key[1])
            self._name_cluster(old)
        if isinstance(view, RayJobView) and view.ray_cluster_name and is_tau_run(view):
            cluster = (view.namespace or "", view.ray_cluster_name)
            self._cluster_of_job[key] = cluster
            self._jobs_of_cluster.setdefault(cluster, set()).add(view.name)
            self._name_cluster(cluster)

    def _name_cluster(self, cluster: Key) -> None:
        """A cluster several RayJobs name is named after the last of them in the list's order."""
        names = self._jobs_of_cluster.get(cluster)
        if names:
            self._clusters[cluster] = max(names)
        else:
            self._jobs_of_cluster.pop(cluster, None)
            self._clusters.pop(cluster, None)

