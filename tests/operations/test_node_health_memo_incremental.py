"""Every node's GPU fault, the runs a fault hit and the banner's GPU problems, kept from the cache's
journal: the same as working every node, pod and report out afresh (``node_gpu_faults``,
``runs_hit_by_node``, ``gpu_problems``), at every moment
around the heartbeat deadlines, with work only for what changed or aged out (counts, never time)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tau_tui.core.cluster.convert import SIMPLE_VIEW_BUILDERS, node_view
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.gpufaults import gpu_problems, node_gpu_faults, runs_hit_by_node
from tau_tui.core.operations.live_gpu_problems import LiveGpuProblems
from tau_tui.core.operations.live_node_faults import LiveNodeFaults
from tau_tui.core.operations.live_runs_hit import LiveRunsHit
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tests import builders
from tests.builders import node_condition as condition
from tests.operations.test_node_health_memo import T0, gpu_node, moments, nodes_of_every_kind


class Journal:
    """What the readers use of a backend: views by kind, a generation and the keys each change made,
    "read everything" for a reader that has not asked before (as the cache's ``changes``)."""

    def __init__(self) -> None:
        self.held: dict[ResourceKind, dict[tuple[str, str], Any]] = {kind: {} for kind in ResourceKind}
        self.log: list[tuple[int, ResourceKind, tuple[str, str]]] = []

    def put(self, kind: ResourceKind, view: Any) -> None:
        self.held[kind][(view.namespace or "", view.name)] = view
        self.log.append((len(self.log) + 1, kind, (view.namespace or "", view.name)))

    def remove(self, kind: ResourceKind, name: str, namespace: str = "") -> None:
        del self.held[kind][(namespace, name)]
        self.log.append((len(self.log) + 1, kind, (namespace, name)))

    def generation(self, kind: ResourceKind) -> int:
        return len(self.log)

    def changes(self, kind: ResourceKind, since: int | None, cost_ratio: int = 1) -> tuple[int, set[tuple[str, str]] | None]:
        if since is None:
            return len(self.log), None
        return len(self.log), {key for at, of, key in self.log[since:] if of is kind}

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Any:
        return self.held[kind].get((namespace or "", name))

    def list(self, kind: ResourceKind) -> list[Any]:
        return [view for _, view in sorted(self.held[kind].items())]

    def views(self, kind: ResourceKind) -> list[Any]:
        return list(self.held[kind].values())

    def nodes(self) -> list[Any]:
        return self.list(ResourceKind.NODE)


def journal_of(nodes) -> Journal:
    journal = Journal()
    for node in nodes:
        journal.put(ResourceKind.NODE, node)
    return journal


def test_every_nodes_fault_is_the_fresh_judgements_at_every_moment_and_only_deadlines_passed_are_looked_at():
    nodes = nodes_of_every_kind()
    journal = journal_of(nodes)
    live = LiveNodeFaults(NodeHealthMemo())
    walk = moments()
    looked = []
    for now in walk:
        before = live.nodes_looked_at
        assert live.current(journal, now) == node_gpu_faults(nodes, now), now
        looked.append(live.nodes_looked_at - before)
    assert looked[0] == len(nodes) and live.full_reads == 1
    # every later moment looks at the nodes one of whose heartbeats went stale since the moment
    # before, never at every node (each node has at most two deadlines in this walk)
    assert sum(looked[1:]) <= 2 * len(nodes) and max(looked[1:]) <= 3, looked
    assert looked[1] == 0  # 60 s on: no deadline passed


def test_a_few_of_ten_thousand_nodes_changed_are_the_only_ones_looked_at():
    beat = T0 + timedelta(seconds=30)
    nodes = [gpu_node(f"n{i:05}", condition("GPUUnhealthy", "False", beat, "AllGPUsHealthy")) for i in range(10_000)]
    journal = journal_of(nodes)
    live = LiveNodeFaults(NodeHealthMemo())
    now = T0 + timedelta(seconds=60)
    assert live.current(journal, now) == {}
    assert live.nodes_looked_at == 10_000
    assert live.current(journal, now + timedelta(seconds=1)) == {} and live.nodes_looked_at == 10_000
    for index in (17, 4321, 9000):
        journal.put(ResourceKind.NODE, gpu_node(f"n{index:05}", condition("GPUUnhealthy", "True", now, "Xid79")))
    journal.remove(ResourceKind.NODE, "n00001")
    later = now + timedelta(seconds=2)
    faults = live.current(journal, later)
    # the Runs read: 10,000 nodes looked at per refresh before, whatever changed; now the 4 changed
    assert live.nodes_looked_at - 10_000 == 4
    assert faults == node_gpu_faults(journal.nodes(), later) and sorted(faults) == ["n00017", "n04321", "n09000"]
    assert live.moved == {"n00017", "n04321", "n09000", "n00001"}


def test_a_clock_moved_back_or_another_backend_reads_every_node_again():
    nodes = nodes_of_every_kind()
    journal = journal_of(nodes)
    memo = NodeHealthMemo()
    live = LiveNodeFaults(memo)
    walk = moments()
    live.current(journal, walk[-1])
    assert live.current(journal, walk[0]) == node_gpu_faults(nodes, walk[0])  # a replay moved back
    assert live.full_reads == 2
    other = journal_of(nodes[:3])
    assert live.current(other, walk[0]) == node_gpu_faults(nodes[:3], walk[0])
    assert live.full_reads == 3 and len(memo._entries) == 3  # the nodes the other backend lacks are forgotten


def pod_view(name: str, node: str | None, phase: str = "Running", **labels: str) -> Any:
    return SIMPLE_VIEW_BUILDERS[ResourceKind.POD](builders.pod(name, "team-a", node=node, phase=phase, labels=labels))


def ray_job_view(name: str, cluster: str) -> Any:
    return SIMPLE_VIEW_BUILDERS[ResourceKind.RAY_JOB]({
        "metadata": {"name": name, "namespace": "team-a", "labels": {"tau.azure.com/run": name}},
        "spec": {}, "status": {"rayClusterName": cluster}})


def test_the_runs_a_fault_hit_are_the_fresh_ones_and_a_read_reads_only_the_pods_that_changed():
    bad = gpu_node("bad", condition("GPUUnhealthy", "True", T0, "Xid79"))
    good = gpu_node("good", condition("GPUUnhealthy", "False", T0, "AllGPUsHealthy"))
    journal = journal_of([bad, good])
    for index in range(2_000):
        journal.put(ResourceKind.POD, pod_view(f"p{index}", "good", **{"job-name": f"run-{index}"}))
    journal.put(ResourceKind.POD, pod_view("trainer-0", "bad", **{"job-name": "train"}))
    journal.put(ResourceKind.POD, pod_view("head", "bad", **{"ray.io/cluster": "rc"}))
    journal.put(ResourceKind.RAY_JOB, ray_job_view("ray-run", "rc"))
    now = T0 + timedelta(seconds=10)
    faults = node_gpu_faults(journal.nodes(), now)
    hits = LiveRunsHit()

    def fresh() -> dict[str, list[str]]:
        ray_jobs = [job for job in journal.list(ResourceKind.RAY_JOB) if job.tau_managed]
        return runs_hit_by_node(journal.list(ResourceKind.POD), ray_jobs, faults)

    assert hits.current(journal, faults) == fresh() == {"bad": ["team-a/ray-run", "team-a/train"]}
    read = hits.objects_read
    journal.put(ResourceKind.POD, pod_view("trainer-1", "bad", **{"job-name": "other"}))
    journal.put(ResourceKind.RAY_JOB, ray_job_view("ray-run-b", "rc"))  # the later name names the cluster
    journal.remove(ResourceKind.POD, "trainer-0", "team-a")
    assert hits.current(journal, faults) == fresh() == {"bad": ["team-a/other", "team-a/ray-run-b"]}
    assert hits.objects_read - read == 3 and hits.full_reads == 2  # pods and RayJobs listed once each
    journal.put(ResourceKind.POD, pod_view("head", "bad", phase="Succeeded", **{"ray.io/cluster": "rc"}))
    assert hits.current(journal, faults) == fresh() == {"bad": ["team-a/other"]}
    journal.put(ResourceKind.NODE, node_view(dict(bad.raw), {}, None))
    assert hits.current(journal, {}) == {}


def report_view(node: str, verdict: str = "healthy", *codes: str) -> Any:
    return SIMPLE_VIEW_BUILDERS[ResourceKind.GPU_HEALTH]({
        "metadata": {"name": node}, "spec": {"nodeName": node},
        "status": {"nodeName": node, "verdict": verdict, "reasons": [{"code": code} for code in codes]}})


def test_the_banners_gpu_problems_are_the_fresh_ones_and_a_read_reads_only_the_reports_that_changed():
    journal = Journal()
    journal.gpu_health = lambda: journal.list(ResourceKind.GPU_HEALTH)  # type: ignore[attr-defined]
    for index in range(10_000):
        journal.put(ResourceKind.GPU_HEALTH, report_view(f"n{index:05}"))
    journal.put(ResourceKind.GPU_HEALTH, report_view("n00007", "degraded", "ThermalSlowdown"))
    problems = LiveGpuProblems()
    assert problems.current(journal) == gpu_problems(journal.gpu_health()) == {"n00007": "degraded (ThermalSlowdown)"}
    assert problems.current(journal) == {"n00007": "degraded (ThermalSlowdown)"} and problems.objects_read == 0
    journal.put(ResourceKind.GPU_HEALTH, report_view("n00017", "unhealthy", "Xid79"))
    journal.put(ResourceKind.GPU_HEALTH, report_view("n00007"))
    journal.remove(ResourceKind.GPU_HEALTH, "n04321")
    # the queue and Runs banners: 10,000 reports per read before; now the 3 changed
    assert problems.current(journal) == gpu_problems(journal.gpu_health()) == {"n00017": "unhealthy (Xid79)"}
    assert problems.objects_read == 3 and problems.full_reads == 1
