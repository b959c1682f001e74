"""Retry and resume on a real control plane (tier 2): a preempted run is
retried within ``resilience.max_retries`` and not beyond, and a run whose node reports XID 79
through the agent is marked and resumed on another node with TAU_RESUME_FROM set.

Preemption is what the scheduler leaves on a pod it preempts (``DisruptionTarget`` with reason
``PreemptionByScheduler``, phase Failed), written to the pod's status; the Job controller then
applies the run's podFailurePolicy and backoffLimit for real.

A run rendered from a tau.yaml is admitted by Kueue and runs (KWOK) on one of two test GPU nodes.
The real agent loop on that node (fake NVML, the real KubernetesWriter with the node's own
pod-bound token) loses GPU 3 with XID 79. tau-tui's core, reading the real API, marks the run
with the node, the GPU and the reason; the pod then fails (as the process would), the Job fails
through its podFailurePolicy, and the resume lands on the other node with TAU_RESUME_FROM set and
an anti-affinity to the bad node.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.recovery import (
    AVOID_NODES_ANNOTATION,
    perform_resume,
    perform_retry,
    resume_plan,
    retry_decision,
)
from tau_tui.core.operations.rundocument import read_gpu_faults, read_run
from tau_tui.core.operations.runstatus import compute_run_status
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions
from tests.harness.kwok import KEEP_RUNNING_ANNOTATIONS
from tests.harness.waiting import wait_for

from .fake_nvml import h100_node
from .harness_support import (
    EVENTS_NAMESPACE,
    SimulatedTimeWriter,
    agent_client,
    agent_manifests_applied,
    gpu_queue,
    on_test_nodes,
)
from .sim import FakeClock, SimNode, fast_config
from .test_agent_tui_harness import settle_reports

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NODES = ("recovery-gpu-a", "recovery-gpu-b")
NS, RUN, QUEUE, CQ = "recovery", "xidrun", "recovery", "recovery-cq"
CHECKPOINT = "/ckpt/xidrun"
LOST_GPU = 3
KEEP_RUNNING = KEEP_RUNNING_ANNOTATIONS  # the delay alone ends a pod within 5 s
PREEMPTED = "preempted"


def tau_yaml(name: str, backoff_initial: str = "30s") -> str:
    """One 8-GPU run with max_retries 1 and a checkpoint path (no PVC: KWOK would wait for it)."""
    return (f"name: {name}\nimage: registry.invalid/tau/trainer:1\nentrypoint: train.py\ncompute:\n  gpus: 8\n"
            f"policy:\n  queue: {QUEUE}\nresilience:\n  max_retries: 1\n  backoff_initial: {backoff_initial}\n"
            f"  checkpoint_path: /ckpt/{name}\n")


PREEMPTED_CONFIG = tau_yaml(PREEMPTED, backoff_initial="1s")
CONFIG = tau_yaml(RUN)


@pytest.fixture(scope="module")
def plane(t2):
    return t2


@pytest.fixture(scope="module")
def test_nodes(t2, admin):
    """Two tainted KWOK GPU nodes only these runs may use, and a queue of 8 GPUs for them."""
    _queues(admin)
    with agent_manifests_applied(t2, admin, list(NODES)):
        yield NODES


def _submit(t2, tmp_path: Path, config: str) -> tuple[KubernetesBackend, list]:
    backend = KubernetesBackend(kubeconfig=t2.kubeconfig, namespace=NS)
    (tmp_path / "tau.yaml").write_text(config)
    (tmp_path / "train.py").write_text("print('training')\n")
    run = render_run(load_config(tmp_path / "tau.yaml"), ProfileSet("none", None, "", []), RenderOptions(NS, None, None, None))
    results = backend.submit(_on_test_nodes(run.manifests))
    assert all(r.ok for r in results), [r.message for r in results]
    return backend, results


def _job_failed(batch: k8s.BatchV1Api, name: str) -> bool:
    return any(c.type == "Failed" and c.status == "True" for c in (batch.read_namespaced_job(name, NS).status.conditions or []))


def _preempt_until_failed(admin: k8s.ApiClient, name: str) -> int:
    """Preempt the run's running pod until the Job controller fails the Job (its backoffLimit is
    max_retries, and podFailurePolicy counts DisruptionTarget failures); returns the preemptions."""
    core, batch = k8s.CoreV1Api(admin), k8s.BatchV1Api(admin)
    for count in range(1, 6):
        pod = _running_pod(core, name, admin)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        core.patch_namespaced_pod_status(pod.metadata.name, NS, {"status": {
            "phase": "Failed",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                            "message": "Preempted in order to admit critical pod", "lastTransitionTime": stamp}],
            "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0, "image": "registry.invalid/tau/trainer:1",
                                   "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "Error",
                                                                           "finishedAt": stamp, "startedAt": stamp}}}]}})
        old = pod.metadata.name
        wait_for(lambda old=old: _job_failed(batch, name) or _replaced(core, name, old), f"{name} failed or replaced",
                 timeout=90)
        if _job_failed(batch, name):
            return count
    raise AssertionError(f"{name} never failed")


def _replaced(core: k8s.CoreV1Api, name: str, old: str) -> bool:
    return any(p.metadata.name != old for p in core.list_namespaced_pod(NS, label_selector=f"job-name={name}").items
               if p.status.phase in ("Pending", "Running"))


def test_a_preempted_run_is_retried_within_max_retries_and_not_beyond(t2, admin, test_nodes, tmp_path):
    backend, _ = _submit(t2, tmp_path, PREEMPTED_CONFIG)
    name = PREEMPTED
    assert _preempt_until_failed(admin, name) == 2  # backoffLimit = max_retries = 1: the second preemption fails it

    def decide():
        objs = read_run(backend, NS, name)
        return objs, retry_decision(objs, datetime.now(UTC))
    objs, decision = decide()
    assert decision.reason == "Preempted" and decision.attempt == 1 and decision.verdict in ("wait", "retry"), decision
    objs, decision = wait_for(lambda: (lambda o, d: (o, d) if d.verdict == "retry" else None)(*decide()),
                              "the backoff (1s) to pass", timeout=30)
    decision, results = perform_retry(backend, objs, datetime.now(UTC), dry_run=False)
    assert decision.new_name == f"{name}-retry-1" and all(r.ok for r in results), [r.message for r in results]

    retried = decision.new_name
    assert _preempt_until_failed(admin, retried) == 2
    time.sleep(3)  # past the second backoff (2s): only max_retries can refuse now
    beyond, results = perform_retry(backend, read_run(backend, NS, retried), datetime.now(UTC), dry_run=False)
    assert beyond.verdict == "refused" and results == [], beyond
    assert beyond.message.startswith("retries exhausted: 1 of resilience.max_retries 1 used (Preempted)")
    jobs = sorted(j.metadata.name for j in k8s.BatchV1Api(admin).list_namespaced_job(NS).items if j.metadata.name.startswith(name))
    assert jobs == [name, retried]
    for job in jobs:
        backend.cancel(ResourceKind.JOB, NS, job)


def _queues(admin: k8s.ApiClient) -> None:
    gpu_queue(admin, NS, QUEUE, CQ, gpus=8)


def _on_test_nodes(manifests: list[dict]) -> list[dict]:
    """KWOK keeps the pod running; it tolerates the test nodes' taint and may run only on them."""
    return on_test_nodes(manifests, NODES, KEEP_RUNNING)


def _running_pod(core: k8s.CoreV1Api, job: str, admin: k8s.ApiClient) -> k8s.V1Pod:
    def running():
        pods = core.list_namespaced_pod(NS, label_selector=f"job-name={job}").items
        return next((p for p in pods if p.status.phase == "Running" and p.spec.node_name), None)
    try:
        return wait_for(running, f"a Running pod of {job}", timeout=120)
    except AssertionError as err:
        # Say where it stuck: the Workloads' conditions, the pods' phases and scheduling.
        workloads = k8s.CustomObjectsApi(admin).list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NS, "workloads")
        seen = [(w["metadata"]["name"], [(c["type"], c["status"], c.get("message", "")[:120])
                                         for c in (w.get("status") or {}).get("conditions") or ()]) for w in workloads["items"]]
        pods = [(p.metadata.name, p.status.phase, [(c.type, c.status, c.message) for c in p.status.conditions or ()])
                for p in core.list_namespaced_pod(NS).items]
        events = [(e.involved_object.name, e.reason, (e.message or "")[:160]) for e in core.list_namespaced_event(NS).items][-15:]
        raise AssertionError(f"{err}\nworkloads: {seen}\npods: {pods}\nevents: {events}") from None


def test_a_run_whose_node_reports_xid_79_is_marked_and_resumed_on_another_node(t2, admin, test_nodes, tmp_path):
    core, batch = k8s.CoreV1Api(admin), k8s.BatchV1Api(admin)
    backend, _ = _submit(t2, tmp_path, CONFIG)
    pod = _running_pod(core, RUN, admin)
    bad = pod.spec.node_name
    other = next(n for n in NODES if n != bad)

    # The agent on that node: healthy first, then GPU 3 falls off the bus (XID 79).
    agent = SimNode(h100_node(8), node_name=bad, writer=SimulatedTimeWriter(agent_client(t2, admin, bad), bad, EVENTS_NAMESPACE),
                    clock=FakeClock(time.time() - 200), config=fast_config(events_namespace=EVENTS_NAMESPACE))
    settle_reports(agent, Verdict.HEALTHY, 60)
    agent.nvml.emit_xid(LOST_GPU, 79)
    agent.nvml.gpus[LOST_GPU].lost = True
    settle_reports(agent, Verdict.UNHEALTHY, 130)

    # Marked: the running pod is on a node whose GPU turned unhealthy, with node, GPU and reason.
    now = datetime.now(UTC)
    status = compute_run_status(read_run(backend, NS, RUN, read_gpu_faults(backend, now)))
    (hit,) = status.gpu_hits
    assert hit.fault.node == bad and hit.fault.verdict == "unhealthy" and not hit.failed
    assert any(f"gpu{LOST_GPU}" in g for g in hit.fault.gpus) and "79" in hit.fault.reason, hit.fault
    assert status.display_state.endswith("GPU fault")
    assert any(d.code == "GPU_FAULT" and bad in d.message for d in status.diagnostics)

    # The process dies with the GPU: the pod fails, the Job fails through its podFailurePolicy.
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    core.patch_namespaced_pod_status(pod.metadata.name, NS, {"status": {"phase": "Failed", "containerStatuses": [
        {"name": "main", "ready": False, "restartCount": 0, "image": "registry.invalid/tau/trainer:1", "imageID": "",
         "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": stamp, "startedAt": stamp}}}]}})
    wait_for(lambda: _job_failed(batch, RUN), "the Job failed", timeout=90)

    objs = read_run(backend, NS, RUN, read_gpu_faults(backend, datetime.now(UTC)))
    plan = resume_plan(objs)
    assert plan.allowed and plan.avoid_nodes == (bad,), plan.message
    results = perform_resume(backend, objs, plan, dry_run=False)
    assert all(r.ok for r in results), [r.message for r in results]

    resumed = _running_pod(core, plan.new_name, admin)
    assert resumed.spec.node_name == other
    env = {e.name: e.value for e in resumed.spec.containers[0].env or []}
    assert env["TAU_RESUME_FROM"] == CHECKPOINT
    job = batch.read_namespaced_job(plan.new_name, NS)
    assert job.metadata.annotations[AVOID_NODES_ANNOTATION] == bad
    for name in (RUN, plan.new_name):
        backend.cancel(ResourceKind.JOB, NS, name)
