"""What the Pods and Events views show: every object the app reads, one namespace's, or one run's.

A run's pods are found as TauGrid finds them (``job-name=<job>``, or ``ray.io/cluster=<the RayJob's
status.rayClusterName>``); its events are those about the run, its Workloads, its pods and its
RayCluster."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import EventView, JobView, ObjectView, PodView, RayJobView

ALL_WORDS = ("all", "-A", "*")


@dataclass(frozen=True)
class ObjectScope:
    namespace: str | None = None
    run: str | None = None

    @property
    def label(self) -> str:
        if self.run:
            return f"run {self.namespace}/{self.run}"
        return f"namespace {self.namespace}" if self.namespace else "every namespace"

    @property
    def crumb(self) -> str:
        return f"{self.namespace}/{self.run}" if self.run else (self.namespace or "all")


def parse_scope(word: str, namespaces: Iterable[str]) -> ObjectScope | None:
    """``NS/RUN`` a run, ``NS`` a known namespace, ``all`` every one; None: not a scope (a filter)."""
    if word in ALL_WORDS:
        return ObjectScope()
    namespace, slash, run = word.partition("/")
    if slash and namespace and run:
        return ObjectScope(namespace, run)
    if word in set(namespaces):
        return ObjectScope(word)
    return None


@dataclass(frozen=True)
class RunIdentity:
    """What picks a run's pods: it exists as a Job, and the RayCluster of its RayJob."""

    job: bool
    ray_cluster: str | None


def run_identity(backend: ClusterBackend, scope: ObjectScope) -> RunIdentity | None:
    if not scope.run:
        return None
    found = backend.get(ResourceKind.JOB, scope.run, scope.namespace)
    job = isinstance(found, JobView) and not found.owned_by_rayjob  # not a RayJob's submitter
    ray_job = backend.get(ResourceKind.RAY_JOB, scope.run, scope.namespace)
    cluster = ray_job.ray_cluster_name if isinstance(ray_job, RayJobView) else None
    return RunIdentity(job, cluster)


def pod_in_scope(view: ObjectView, scope: ObjectScope, run: RunIdentity | None) -> bool:
    if not isinstance(view, PodView):
        return False
    if scope.namespace and view.namespace != scope.namespace:
        return False
    if not scope.run:
        return True
    if run is None:
        return False
    # a Job's name can outlive it in its pods' label (a cancelled run's pods still terminating); a
    # RayJob's submitter pod carries it too (KubeRay names the submitter Job as its RayJob)
    if view.labels.get("job-name") == scope.run:
        return True
    return bool(run.ray_cluster) and view.labels.get("ray.io/cluster") == run.ray_cluster


def run_object_names(backend: ClusterBackend, scope: ObjectScope, run: RunIdentity | None,
                     pods: Iterable[ObjectView]) -> frozenset[str]:
    """The names events of a run are about: the run, its Workloads, its pods, its RayCluster."""
    if not scope.run:
        return frozenset()
    names = {scope.run, *(p.name for p in pods)}
    if run is not None and run.ray_cluster:
        names.add(run.ray_cluster)
    for kind in (ResourceKind.JOB, ResourceKind.RAY_JOB):
        owner = backend.get(kind, scope.run, scope.namespace)
        if owner is not None and owner.uid:
            workload = backend.workload_for_owner(scope.namespace or "", owner.uid)
            if workload is not None:
                names.add(workload.name)
    return frozenset(names)


def event_in_scope(view: ObjectView, scope: ObjectScope, names: frozenset[str]) -> bool:
    if not isinstance(view, EventView):
        return False
    if scope.namespace and view.namespace != scope.namespace:
        return False
    return not scope.run or view.involved_name in names


class RayJobsByCluster:
    """(namespace, RayCluster) → the RayJob that made it, kept from the cache's journal of RayJobs, so
    that a Ray pod's row names its run: KubeRay labels the pods with their cluster only."""

    def __init__(self) -> None:
        self._changes = JournalCursor(ResourceKind.RAY_JOB)
        self.by_cluster: dict[tuple[str, str], str] = {}
        self._cluster_of: dict[tuple[str, str], tuple[str, str]] = {}

    def update(self, backend: ClusterBackend) -> None:
        kind = ResourceKind.RAY_JOB
        changed = self._changes.read(backend).keys  # taken before the data: a change in between is read next time
        try:
            if changed is None:
                self.by_cluster, self._cluster_of = {}, {}
                for view in backend.views(kind):
                    self._put(view.key, view)
            else:
                for namespace, name in changed:
                    self._put((namespace, name), backend.get(kind, name, namespace or None))
        except BaseException:
            self._changes.forget()  # one stopped half way: the next reads everything
            raise

    def _put(self, key: tuple[str, str], view: ObjectView | None) -> None:
        old = self._cluster_of.pop(key, None)
        if old is not None and self.by_cluster.get(old) == key[1]:
            del self.by_cluster[old]
        if isinstance(view, RayJobView) and view.ray_cluster_name:
            cluster = (view.namespace or "", view.ray_cluster_name)
            self._cluster_of[key] = cluster
            self.by_cluster[cluster] = view.name


def open_object_view(app: Any, mode: str, scope: ObjectScope) -> None:
    """The Pods or Events view (``mode``) for a run, a namespace or every one (``p``/``e`` on a run,
    ``:pods NS/RUN``)."""
    app.action_switch_pane(mode)
    set_scope = getattr(app.screen, "set_scope", None)
    if set_scope is not None:
        set_scope(scope)
