from __future__ import annotations

import pytest

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.runconfig import profiles
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world, scenario_names

R = ResourceKind


@pytest.fixture(scope="module")
def demo():
    world = build_world("demo")
    backend = SimulatedBackend(world)
    backend.start()
    yield world, backend
    backend.close()


def test_packaged_scenarios():
    assert {"demo", "large", "faults"} <= set(scenario_names())
    with pytest.raises(ClusterError, match="unknown scenario"):
        build_world("nope")


def test_demo_lights_up_every_pane(demo):
    world, backend = demo
    assert len(backend.cluster_queues()) >= 3 and len(backend.local_queues()) >= 3
    assert len(backend.resource_flavors()) >= 3 and backend.cohorts() and len(backend.workload_priority_classes()) >= 2
    words = {w.status_word for w in backend.workloads()}
    assert {"pending", "admitted", "finished"} <= words
    assert any(w.owner_kind == "RayJob" and w.status_word == "admitted" for w in backend.workloads())
    assert any(w.owner_kind == "RayJob" and w.status_word == "finished" for w in backend.workloads())
    mk = [w for w in backend.workloads() if w.cluster_name]
    assert mk and mk[0].admission_checks[0].state == "Ready"
    assert backend.multikueue_configs() and len(backend.multikueue_clusters()) == 2
    assert any(ac.is_multikueue and ac.condition("Active").is_true for ac in backend.admission_checks())
    assert backend.ray_jobs() and backend.jobs() and backend.events() and backend.tau_workspaces()
    nodes = {n.name: n for n in backend.nodes()}
    assert nodes["h100-node-5"].condition("GPUUnhealthy").is_true
    assert nodes["h100-node-5"].gpu_health.status["verdict"] == "unhealthy"
    assert nodes["a100-node-3"].condition("GPUDegraded").is_true
    assert nodes["a100-mig-node-0"].gpu["nvidia.com/mig-1g.10gb"].capacity == 28
    assert nodes["t4-shared-node-0"].gpu["nvidia.com/gpu.shared"].allocatable == 16
    assert nodes["t4-shared-node-0"].gpu_conditions == ()  # no agent: unknown, not healthy
    busy = [n for n in nodes.values() if n.gpu.get("nvidia.com/gpu") and n.gpu["nvidia.com/gpu"].allocated]
    assert busy
    for kind in R:
        assert backend.view_state(kind).status is ViewStatus.READY, kind


def test_demo_tau_cluster_passes_the_profile_gate(demo):
    _, backend = demo
    tc = backend.tau_cluster()
    assert tc is not None
    profile_set = profiles.profile_set_from_taucluster(dict(tc.raw))
    assert profile_set.gate_open, profile_set.gate_problems
    ready = {p.name for p in profile_set.profiles if p.condition("Ready").status == "True"}
    assert "azure.research.training.xl" in ready and "azure.research.multicluster.h100" in ready
    assert tc.condition("MultiKueueReady").is_true


def test_demo_logs_for_job_and_rayjob(demo, tmp_path):
    world, backend = demo
    stream = backend.open_logs(LogRequest(namespace="taugrid-default", job="llama-70b-sft", all_containers=True, tail_lines=5),
                               spool_dir=str(tmp_path))
    assert stream.wait_done(10)
    lines = stream.spool.lines()
    assert lines and all(line.startswith("[llama-70b-sft-") for line in lines)
    assert {"fetch-data", "trainer", "metrics"} <= {line.split("/", 1)[1].split("]")[0] for line in lines}
    ray = backend.open_logs(LogRequest(namespace="team-nlp", ray_job="ray-rlhf-ppo", tail_lines=3), spool_dir=str(tmp_path))
    assert ray.wait_done(10)
    first = ray.spool.lines()[0]
    assert first.startswith("[driver]")  # a RayJob's driver output first, as TauGrid reads it (#45)
    prev = backend.open_logs(LogRequest(namespace="team-nlp", job="eval-mmlu-0301", previous=True), spool_dir=str(tmp_path))
    assert prev.wait_done(10)
    assert any("uncorrectable ECC error" in line for line in prev.spool.lines())


def test_demo_positions_come_from_simulated_visibility_api(demo):
    _, backend = demo
    report = backend.pending_positions_cluster_queue("jobqueue")
    assert not report.estimated and report.entries
    backend.use_visibility_api = False
    try:
        estimate = backend.pending_positions_cluster_queue("jobqueue")
    finally:
        backend.use_visibility_api = True
    assert [e.name for e in estimate.entries] == [e.name for e in report.entries]


def test_reading_every_queue_position_builds_the_pending_lists_once_per_change(monkeypatch):
    """The visibility endpoint shares one build of the pending lists until the store changes
    (a scan of every workload per LocalQueue made the first read of `large` take minutes)."""
    world = build_world("demo")
    backend = SimulatedBackend(world)
    backend.start()
    try:
        builds = []
        original = world.kueue._build_pending_by_cluster_queue
        monkeypatch.setattr(world.kueue, "_build_pending_by_cluster_queue", lambda: builds.append(1) or original())
        cache_reads = []
        original_get = backend.cache.get
        monkeypatch.setattr(backend.cache, "get", lambda *a, **k: cache_reads.append(a) or original_get(*a, **k))
        queues = backend.local_queues()

        def touch() -> None:
            world.store.update(R.LOCAL_QUEUE.type, queues[0].name, queues[0].namespace,
                               lambda o: o["metadata"].setdefault("labels", {}).update(touched=str(len(builds))))

        touch()
        reports = [backend.pending_positions_local_queue(lq.namespace, lq.name) for lq in queues]
        assert len(queues) > 1 and any(r.entries for r in reports)
        assert len(builds) == 1
        # Per report: the LocalQueue itself, then one look-up per entry for its queue time.
        assert len(cache_reads) == len(queues) + sum(len(r.entries) for r in reports)
        touch()
        backend.pending_positions_local_queue(queues[0].namespace, queues[0].name)
        assert len(builds) == 2
    finally:
        backend.close()


def test_simulated_visibility_positions_are_worked_out_once_per_cluster_queue_and_change(monkeypatch):
    """Each LocalQueue's answer reads its ClusterQueue's positions worked out once, and they match a
    walk of that queue's pending list (the ClusterQueue endpoint counts LocalQueues by name only)."""
    from tau_tui.core.sim.pending_positions import PendingPositions

    world = build_world("large")
    backend = SimulatedBackend(world)
    made: list[int] = []
    original = PendingPositions.of.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(PendingPositions, "of", classmethod(lambda cls, items: made.append(len(items)) or original(cls, items)))
    queues = [(lq["metadata"]["namespace"], lq["metadata"]["name"], lq["spec"]["clusterQueue"])
              for lq in world.store.items(R.LOCAL_QUEUE.type)]
    by_cq = world.kueue.pending_by_cluster_queue()
    for ns, name, cluster_queue in queues:
        summary = backend._visibility_get(
            f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/{name}/pendingworkloads", {})
        items = by_cq.get(cluster_queue, [])
        mine = [w for w in items if w["metadata"]["namespace"] == ns and w["spec"]["queueName"] == name]
        assert [i["metadata"]["name"] for i in summary["items"]] == [w["metadata"]["name"] for w in mine][:1000]
        assert [i["positionInLocalQueue"] for i in summary["items"]] == list(range(len(summary["items"])))
        assert [i["positionInClusterQueue"] for i in summary["items"]] == [items.index(w) for w in mine][:1000]
    assert len(queues) == 50 and len(made) == len(by_cq) == 10  # once per ClusterQueue, not per LocalQueue
    cq = next(iter(by_cq))
    summary = backend._visibility_get(f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads",
                                      {"limit": 5000})
    seen: dict[str, int] = {}
    for item in summary["items"]:
        assert item["positionInLocalQueue"] == seen.get(item["localQueueName"], 0)
        seen[item["localQueueName"]] = item["positionInLocalQueue"] + 1
    assert len(made) == 10  # the same positions served that endpoint too


def test_faults_scenario_requeues_from_stalled_worker():
    world = build_world("faults")
    backend = SimulatedBackend(world)
    backend.start()
    clusters = {c.name: c for c in backend.multikueue_clusters()}
    assert clusters["worker-a"].connected is False
    assert clusters["worker-a"].condition("Active").reason == "ClientConnectionFailed"
    remote = [w for w in backend.workloads() if w.owner_name == "remote-train"][0]
    assert remote.cluster_name == "worker-b"  # lost worker-a, requeued, placed again
    assert any(e.reason == "EvictedDueToAdmissionCheck" for e in backend.events())
    ac = backend.get(R.ADMISSION_CHECK, "mk-check")
    assert ac.condition("Active").reason == "SomeActiveClusters"
    nodes = {n.name: n for n in backend.nodes()}
    assert nodes["gpu-node-1"].condition("GPUUnhealthy").is_true
    assert any(t.get("key") == "tau-tui.io/gpu-unhealthy" for t in nodes["gpu-node-1"].taints)
    world.advance(61)
    assert backend.get(R.NODE, "gpu-node-6").condition("GPUUnhealthy").is_true
    world.advance(540)
    assert not backend.get(R.NODE, "gpu-node-1").condition("GPUUnhealthy").is_true
    backend.close()


def test_large_scenario_shape():
    # Shape only: how long building takes is benchmarks/cluster_large.py's job, never a test's.
    world = build_world("large")
    backend = SimulatedBackend(world)
    backend.start()
    assert len(backend.workloads()) == 20_000
    assert len(backend.local_queues()) == 50 and len(backend.cluster_queues()) == 10
    nodes = backend.nodes()
    assert len(nodes) == 2000 and all(n.gpu["nvidia.com/gpu"].capacity == 8 for n in nodes)
    assert {w.status_word for w in backend.workloads()} >= {"pending", "admitted"}
    backend.close()


def test_deterministic_for_a_seed():
    a = build_world("faults")
    b = build_world("faults")

    def names(w):
        return sorted((o["metadata"]["namespace"], o["metadata"]["name"], o["metadata"]["uid"]) for o in w.store.items(R.POD.type))

    assert names(a) == names(b)
