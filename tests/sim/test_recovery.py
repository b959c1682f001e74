"""Retry, resume and GPU-fault marking on the simulated backend: a run
rendered from a tau.yaml with ``resilience.max_retries: 2`` is preempted again and again and is
retried twice, not a third time; a node whose agent reports XID 79 marks the run it hit, and the
resume lands on another node with ``TAU_RESUME_FROM`` set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.gpufaults import runs_hit_by_node
from tau_tui.core.operations.recovery import (
    AVOID_NODES_ANNOTATION,
    RESUMED_AS_ANNOTATION,
    RETRIED_AS_ANNOTATION,
    RETRY_ATTEMPT_ANNOTATION,
    perform_resume,
    perform_retry,
    resume_plan,
    retry_decision,
)
from tau_tui.core.operations.rundocument import read_gpu_faults, read_run
from tau_tui.core.operations.runstatus import compute_run_status
from tests.recovery_world import NS, recovery_world, running_pod


@pytest.fixture
def cluster(tmp_path: Path):
    return recovery_world(tmp_path)


def objects(world, backend, name: str):
    return read_run(backend, NS, name, read_gpu_faults(backend, world.now()))


def test_a_preempted_run_is_retried_within_max_retries_and_not_beyond(cluster):
    world, backend = cluster
    name, seen = "finetune", []
    for attempt in (1, 2):
        pod = running_pod(world, backend, name)
        world.disrupt_pod(NS, pod.name, "PreemptionByScheduler")
        world.advance(2)
        objs = objects(world, backend, name)
        assert compute_run_status(objs).state == "failed"
        waiting = retry_decision(objs, world.now())
        assert waiting.verdict == "wait" and waiting.reason == "Preempted" and waiting.attempt == attempt
        world.advance(30 * 2 ** (attempt - 1))  # backoff_initial 30s, doubled per attempt
        decision, results = perform_retry(backend, objects(world, backend, name), world.now(), dry_run=False)
        assert decision.verdict == "retry" and all(r.ok for r in results), [r.message for r in results]
        old = backend.fetch(ResourceKind.JOB, NS)
        assert {j.name: j.annotations.get(RETRIED_AS_ANNOTATION) for j in old}[name] == decision.new_name
        name = decision.new_name
        seen.append(name)
        new = next(j for j in backend.fetch(ResourceKind.JOB, NS) if j.name == name)
        assert new.annotations[RETRY_ATTEMPT_ANNOTATION] == str(attempt)
        env = {e["name"]: e.get("value") for e in new.raw["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["TAU_RETRY_ATTEMPT"] == str(attempt) and env["TAU_RETRY_REASON"] == "Preempted"
        # acting twice (the app and the CLI) creates nothing new: the old run records its retry
        again, nothing = perform_retry(backend, objects(world, backend, seen[-2] if attempt > 1 else "finetune"),
                                       world.now(), dry_run=False)
        assert again.verdict == "refused" and nothing == []
    assert seen == ["finetune-retry-1", "finetune-retry-2"]
    pod = running_pod(world, backend, name)
    world.disrupt_pod(NS, pod.name, "PreemptionByScheduler")
    world.advance(600)
    beyond, results = perform_retry(backend, objects(world, backend, name), world.now(), dry_run=False)
    assert beyond.verdict == "refused" and results == []
    assert beyond.message.startswith("retries exhausted: 2 of resilience.max_retries 2")
    assert sorted(j.name for j in backend.fetch(ResourceKind.JOB, NS)) == ["finetune", *seen]


def test_a_run_whose_node_reports_xid_79_is_marked_and_resumed_on_another_node(cluster):
    world, backend = cluster
    pod = running_pod(world, backend, "finetune")
    bad = pod.node_name
    # the scheduler fills nodes in name order: without the anti-affinity the resume would land here again
    assert bad == min(n.name for n in backend.fetch(ResourceKind.NODE))
    world.gpu_fault(bad, "unhealthy", "Xid79", "GPU has fallen off the bus (Xid 79)", 3)
    world.advance(2)
    objs = objects(world, backend, "finetune")
    status = compute_run_status(objs)
    assert status.state == "failed" and status.display_state == "failed, GPU fault"
    (hit,) = status.gpu_hits
    assert (hit.fault.node, hit.fault.reason, hit.failed) == (bad, "Xid79", True)
    assert hit.fault.gpus == (f"gpu3 GPU-{bad}-03",) and hit.fault.sources == ("tau-agent",)
    fault = next(d for d in status.diagnostics if d.code == "GPU_FAULT")
    assert bad in fault.message and "Xid79" in fault.message
    assert runs_hit_by_node(backend.fetch(ResourceKind.POD, NS), [], read_gpu_faults(backend, world.now())) == {
        bad: [f"{NS}/finetune"]}

    # the agent recovers the node: resume must still keep off it (the mark is on the run's pods)
    plan = resume_plan(objs)
    assert plan.allowed and plan.avoid_nodes == (bad,) and plan.new_name == "finetune-resume-1"
    assert all(r.ok for r in perform_resume(backend, objs, plan, dry_run=True))
    assert [j.name for j in backend.fetch(ResourceKind.JOB, NS)] == ["finetune"]  # dry-run created nothing
    world.gpu_recover(bad)
    results = perform_resume(backend, objs, plan, dry_run=False)
    assert all(r.ok for r in results), [r.message for r in results]
    resumed = running_pod(world, backend, "finetune-resume-1")
    assert resumed.node_name != bad
    env = {e["name"]: e.get("value") for e in resumed.raw["spec"]["containers"][0]["env"]}
    assert env["TAU_RESUME_FROM"] == "/data/checkpoints/finetunes/finetune"
    jobs = {j.name: j for j in backend.fetch(ResourceKind.JOB, NS)}
    assert jobs["finetune"].annotations[RESUMED_AS_ANNOTATION] == "finetune-resume-1"
    assert jobs["finetune-resume-1"].annotations[AVOID_NODES_ANNOTATION] == bad
    assert jobs["finetune-resume-1"].labels["tau.azure.com/submission-id"] != jobs["finetune"].labels["tau.azure.com/submission-id"]
