"""`tau-tui logs RUN -f` on a real control plane (tier 2): a Job's pods by `job-name`, followed across
the Job's next pod when the first is evicted, every line of both pods exactly once, and the command
ends when the run does.  (A RayJob's driver output under the real KubeRay operator:
test_rayjob_kuberay_t2.py.)"""

from __future__ import annotations

import datetime
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions
from tests.agent.harness_support import gpu_queue, kwok_test_nodes, on_test_nodes
from tests.harness.kwok import FAKE_LOG_LINES, KEEP_RUNNING_ANNOTATIONS
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NS, QUEUE, CQ = "logs-t2", "logs", "logs-cq"
NODES = ("logs-gpu-a",)
GRACE_SECONDS = 2
SMP = "application/strategic-merge-patch+json"


@pytest.fixture(scope="module")
def admin(t2):
    from kubernetes import config as k8s_config

    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def test_nodes(t2, admin):
    gpu_queue(admin, NS, QUEUE, CQ, gpus=8)
    with kwok_test_nodes(admin, NODES):
        yield NODES


def submit_job(t2, tmp_path: Path, name: str) -> None:
    """A one-pod Job that may be retried twice; its pods stay Running (KWOK) until the test says."""
    (tmp_path / "tau.yaml").write_text(f"name: {name}\nimage: registry.invalid/tau/trainer:1\nentrypoint: train.py\n"
                                       f"compute:\n  gpus: 1\nresilience:\n  max_retries: 2\npolicy:\n  queue: {QUEUE}\n")
    (tmp_path / "train.py").write_text("print('training')\n")
    run = render_run(load_config(tmp_path / "tau.yaml"), ProfileSet("none", None, "", []), RenderOptions(NS, None, None, None))
    run.manifests[0]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = GRACE_SECONDS
    backend = KubernetesBackend(kubeconfig=t2.kubeconfig, namespace=NS)
    try:
        results = backend.submit(on_test_nodes(run.manifests, NODES, KEEP_RUNNING_ANNOTATIONS))
    finally:
        backend.close()
    assert all(r.ok for r in results), [r.message for r in results]


def running_pod(core: k8s.CoreV1Api, job: str, not_named: set[str]) -> str:
    def found():
        for pod in core.list_namespaced_pod(NS, label_selector=f"job-name={job}").items:
            if pod.metadata.name not in not_named and pod.status.phase == "Running" and not pod.metadata.deletion_timestamp:
                return pod.metadata.name
        return None
    def explain() -> str:  # why no pod ran: the Job's pods, its status and its events
        pods = [(p.metadata.name, p.status.phase, bool(p.metadata.deletion_timestamp), p.spec.node_name,
                 p.metadata.finalizers, [(c.type, c.status, c.reason) for c in p.status.conditions or []])
                for p in core.list_namespaced_pod(NS, label_selector=f"job-name={job}").items]
        status = k8s.BatchV1Api(core.api_client).read_namespaced_job_status(job, NS).status
        events = [(e.involved_object.kind, e.involved_object.name, e.reason, e.message)
                  for e in core.list_namespaced_event(NS).items]
        return f"pods: {pods}\njob: {status}\nevents: {events[-20:]}"
    return wait_for(found, f"a Running pod of {job} (other than {sorted(not_named)})", timeout=180, explain=explain)


def stopped_by_the_kubelet(core: k8s.CoreV1Api, pod_name: str) -> None:
    """What a kubelet does with a deleted pod, which KWOK's stages do not while a finalizer holds it (the
    Job's job-tracking one): its containers stop at SIGTERM and the pod ends Failed.  The Job waits for
    that (tau-tui renders a podFailurePolicy, so only failed pods are replaced), then lets it go."""
    pod = wait_for(lambda: (p := core.read_namespaced_pod(pod_name, NS)).metadata.deletion_timestamp and p,
                   f"{pod_name} terminating", timeout=60)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    stopped = [{**k8s.ApiClient().sanitize_for_serialization(cs), "ready": False, "started": False,
                "state": {"terminated": {"exitCode": 143, "reason": "Error", "finishedAt": now,
                                         "startedAt": k8s.ApiClient().sanitize_for_serialization(cs.state.running.started_at)
                                         if cs.state and cs.state.running else now}}}
               for cs in pod.status.container_statuses or []]
    core.patch_namespaced_pod_status(pod_name, NS, {"status": {"phase": "Failed", "containerStatuses": stopped}})


class Lines:
    """A subprocess's stdout, line by line, read in a thread."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self._queue.put(line.rstrip("\n")) for line in proc.stdout or ()],
                         daemon=True).start()

    def until(self, predicate, what: str, timeout: float = 120) -> None:
        import time

        deadline = time.monotonic() + timeout
        while not predicate(self.seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {what}; lines: {self.seen[-20:]}")
            try:
                self.seen.append(self._queue.get(timeout=min(left, 1.0)))
            except queue.Empty:
                continue

    def drain(self) -> None:
        while not self._queue.empty():
            self.seen.append(self._queue.get())


def test_logs_follow_a_job_across_its_next_pod_and_end_with_it(t2, admin, test_nodes, tmp_path):
    name = "logs-restart"
    core = k8s.CoreV1Api(admin)
    submit_job(t2, tmp_path, name)
    first = running_pod(core, name, set())
    env = {**os.environ, "KUBECONFIG": t2.kubeconfig, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen([sys.executable, "-m", "tau_tui", "logs", name, "-n", NS, "-f", "--all"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = Lines(proc)
    try:
        main_lines = [f"[{first}/main] {text}" for text in FAKE_LOG_LINES]
        out.until(lambda seen: all(line in seen for line in main_lines), f"the lines of {first}")
        # The pod is evicted (as a drain or a preemption does): the Job makes its next pod.
        core.create_namespaced_pod_eviction(first, NS, {"metadata": {"name": first, "namespace": NS}})
        stopped_by_the_kubelet(core, first)
        second = running_pod(core, name, {first})
        second_lines = [f"[{second}/main] {text}" for text in FAKE_LOG_LINES]
        out.until(lambda seen: all(line in seen for line in second_lines), f"the lines of {second}, the next pod")
        assert proc.poll() is None, "logs -f ended while the run still runs"
        # The run ends: its pod completes (KWOK's completion stage, no longer held back).
        core.patch_namespaced_pod(second, NS, {"metadata": {"annotations": {
            "pod-complete.stage.kwok.x-k8s.io/delay": "1s", "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1s"}}},
            _content_type=SMP)
        assert proc.wait(timeout=180) == 0, proc.stderr.read() if proc.stderr else ""
        out.drain()
    finally:
        if proc.poll() is None:
            proc.kill()
        try:
            k8s.BatchV1Api(admin).delete_namespaced_job(name, NS, propagation_policy="Background")
        except ApiException as err:
            if err.status != 404:
                raise
    lines = out.seen
    for pod in (first, second):
        for container in ("tau-payload", "main"):
            of_it = [line for line in lines if line.startswith(f"[{pod}/{container}] ")]
            assert of_it == [f"[{pod}/{container}] {text}" for text in FAKE_LOG_LINES], (pod, container, lines)
    assert len(lines) == 4 * len(FAKE_LOG_LINES), lines  # nothing else, nothing twice
