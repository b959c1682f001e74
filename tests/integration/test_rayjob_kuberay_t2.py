"""A RayJob's life under the real KubeRay operator (tier 2), through tau-tui's own faces.

`tau-tui submit` sends an `engine: rayjob` tau.yaml; Kueue admits it; the operator (built from the
module Kueue's go.mod requires) creates the RayCluster, KWOK runs its head and worker, the operator
creates the submitter Job and follows the Ray job on the head's dashboard (the harness's stand-in,
tests/harness/kuberay.py).  `tau-tui status` and the Runs pane follow its phases, and `p` and `e` there
list its pods and events (the Pods and Events views on the real API); `tau-tui logs`
shows the driver output (`ray job logs` exec'd in the head, run by KWOK's ClusterExec) and `-f`,
its read broken once (that `ray job logs --follow` killed), loses no line, repeats none and ends
with the run; `tau-tui cancel --wait` deletes the RayJob (the operator stops the Ray job) and
reads "releasing compute" while the RayCluster's pods exist (held by the test's finalizer), then
"cancelled; compute released"; Kueue's quota is back.  Retry and resume make new RayJobs that the
operator runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.runconfig.profiles import GROUP, TAUCLUSTER_NAME, TAUCLUSTER_PLURAL, VERSION, taucluster_status
from tau_tui.screens.events import EventsScreen
from tau_tui.screens.pods import PodsScreen
from tau_tui.widgets.keyed_table import KeyedTable
from tests.agent.harness_support import gpu_queue, harness_app
from tests.agent.test_agent_tui_harness import wait_until
from tests.harness.kuberay import RAY_DRIVER_LINES
from tests.harness.waiting import wait_for
from tests.integration.test_logs_t2 import Lines

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NS, QUEUE, CQ = "rayjob-t2", "ray", "rayjob-t2-cq"
HOLD = "tau-tui.test/hold-pod"
SMP = "application/strategic-merge-patch+json"
RAY = ("ray.io", "v1")


@pytest.fixture(scope="module")
def admin(t2):
    from kubernetes import config as k8s_config

    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    gpu_queue(api_client, NS, QUEUE, CQ, gpus=8)
    custom = k8s.CustomObjectsApi(api_client)
    try:  # `tau-tui submit` reads TauCluster/cluster: one with no profiles (the config's own queue is used)
        created = custom.create_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "TauCluster", "metadata": {"name": TAUCLUSTER_NAME}, "spec": {}})
        custom.patch_cluster_custom_object_status(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME, {
            "status": taucluster_status(created["metadata"]["generation"], [])})
    except ApiException as err:
        if err.status != 409:  # another module made it: its profiles stand
            raise
    yield api_client
    api_client.close()


def write_config(folder: Path, name: str, resilience: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text("print('hello from the driver')\n")
    path = folder / "tau.yaml"
    path.write_text(f"name: {name}\nengine: rayjob\nimage: registry.invalid/tau/ray:2.54.0\nentrypoint: main.py\n"
                    f"compute:\n  workers: 1\n  gpus_per_worker: 1\n{resilience}policy:\n  queue: {QUEUE}\n")
    return path


def cli_env(t2, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": t2.kubeconfig, "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


def cli(t2, tmp_path: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tau_tui", *args], capture_output=True, text=True,
                          env=cli_env(t2, tmp_path), timeout=timeout)


def rayjob(admin, name: str) -> dict | None:
    try:
        return k8s.CustomObjectsApi(admin).get_namespaced_custom_object(*RAY, NS, "rayjobs", name)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def ray_log_followers(job_id: str) -> list[int]:
    """The PIDs of the stand-in `ray job logs JOB_ID --follow` that KWOK's exec runs on this host."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue  # gone meanwhile
            words = [a.decode(errors="replace") for a in argv]
            if "job" in words and "logs" in words and job_id in words and "--follow" in words:
                pids.append(int(entry.name))
    return pids


def ray_pods(admin, cluster: str) -> list[k8s.V1Pod]:
    return k8s.CoreV1Api(admin).list_namespaced_pod(NS, label_selector=f"ray.io/cluster={cluster}").items


def running_under_kuberay(t2, admin, name: str) -> dict:
    """Kueue admitted the RayJob; the operator made its RayCluster (Ready: KWOK runs head and worker),
    ran its submitter and follows the Ray job: Running / RUNNING.  Returns the RayJob."""
    def running():
        obj = rayjob(admin, name)
        status = (obj or {}).get("status") or {}
        if status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING":
            return obj
        return None
    obj = wait_for(running, f"RayJob {name} Running under KubeRay", timeout=300)
    cluster = obj["status"]["rayClusterName"]
    rc = k8s.CustomObjectsApi(admin).get_namespaced_custom_object(*RAY, NS, "rayclusters", cluster)
    assert rc["status"]["state"] == "ready"
    assert rc["metadata"]["ownerReferences"][0]["name"] == name
    pods = ray_pods(admin, cluster)
    assert sorted(p.metadata.labels["ray.io/node-type"] for p in pods) == ["head", "worker"]
    assert all(p.status.phase == "Running" and p.spec.node_name for p in pods)
    submitter = k8s.BatchV1Api(admin).read_namespaced_job(name, NS)  # K8sJobMode: a Job named as the RayJob
    assert submitter.metadata.owner_references[0].kind == "RayJob"
    assert t2.ray_dashboard.job(obj["status"]["jobId"]).status == "RUNNING"
    workloads = k8s.CustomObjectsApi(admin).list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NS, "workloads")["items"]
    mine = [w for w in workloads if any(r.get("name") == name and r.get("kind") == "RayJob"
                                        for r in w["metadata"].get("ownerReferences") or ())]
    assert mine and any(c["type"] == "Admitted" and c["status"] == "True" for c in mine[0]["status"]["conditions"])
    return obj


def hold(admin, pods: list[k8s.V1Pod]) -> None:
    core = k8s.CoreV1Api(admin)
    for pod in pods:
        core.patch_namespaced_pod(pod.metadata.name, NS, {"metadata": {"finalizers": [HOLD]}}, _content_type=SMP)


def release(admin, cluster: str) -> None:
    core = k8s.CoreV1Api(admin)
    for pod in ray_pods(admin, cluster):
        if HOLD in (pod.metadata.finalizers or ()):
            core.patch_namespaced_pod(pod.metadata.name, NS, {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}},
                                      _content_type=SMP)


def cluster_queue_usage(admin) -> tuple[int, int]:
    cq = k8s.CustomObjectsApi(admin).get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", CQ)
    status = cq.get("status") or {}
    return int(status.get("admittedWorkloads") or 0), int(status.get("reservingWorkloads") or 0)


def app_follows_the_run(t2, tmp_path, monkeypatch, name: str, cluster: str, pods: set[str]) -> dict[str, object]:
    """The app on the tier's API: the Runs pane's state of the run, then ``p`` (its pods, ``pods``)
    and ``e`` (its events) from there, as their tables show them."""
    key = f"{NS}/{name}"
    app, backend = harness_app(t2, tmp_path, monkeypatch, "runs",
                               [ResourceKind.RAY_JOB, ResourceKind.POD, ResourceKind.EVENT])
    seen: dict[str, object] = {}

    async def drive():
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.screen.query_one("#runs-table", KeyedTable)

            def state() -> str:
                cells = table.cells_of(key)
                return cells[0].plain if cells else ""

            await wait_until(pilot, lambda: "running" in state(), f"{key} running in the Runs pane", timeout=120)
            seen["state"] = state()
            table.focus()
            table.move_cursor(row=table.keys.index(key))
            await pilot.press("p")
            await wait_until(pilot, lambda: isinstance(app.screen, PodsScreen)
                             and set(app.screen.query_one("#pods-table", KeyedTable).keys) == pods, f"the run's pods {pods}",
                             timeout=60)
            shown = app.screen.query_one("#pods-table", KeyedTable)
            seen["pods"] = {k: [c if isinstance(c, str) else c.plain for c in shown.cells_of(k)] for k in shown.keys}
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.current_mode == "runs", "back on Runs")
            table.focus()
            await pilot.press("e")

            def about() -> set[str]:
                events = app.screen.query_one("#events-table", KeyedTable)
                return {str(events.cells_of(k)[3]) for k in events.keys}

            await wait_until(pilot, lambda: isinstance(app.screen, EventsScreen) and f"RayCluster/{cluster}" in about()
                             and f"RayJob/{name}" in about(), "the run's events, KubeRay's among them", timeout=60)
            seen["events"] = about()

    try:
        asyncio.run(drive())
    finally:
        backend.close()
    return seen


def test_a_rayjob_submitted_followed_logged_and_cancelled_under_kuberay(t2, admin, tmp_path, monkeypatch):
    name = "ray-life"
    submitted = cli(t2, tmp_path, "submit", str(write_config(tmp_path / "run", name)), "-n", NS)
    assert submitted.returncode == 0, submitted.stderr
    obj = running_under_kuberay(t2, admin, name)
    job_id, cluster = obj["status"]["jobId"], obj["status"]["rayClusterName"]

    status = cli(t2, tmp_path, "status", name, "-n", NS, "-o", "json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["status"]["workloadKind"] == "RayJob" and doc["status"]["state"] == "running"
    phases = {p["name"]: p["status"] for p in doc["phases"]}
    assert phases["Kueue admission"] == "done" and phases["RayCluster"] == "done" and phases["RayJob"] == "active"
    # the run's pods: its RayCluster's head and worker, and the submitter's (KubeRay's Job, named as the RayJob)
    submitters = k8s.CoreV1Api(admin).list_namespaced_pod(NS, label_selector=f"job-name={name}").items
    assert submitters, "no submitter pod"
    expected = {f"{NS}/{p.metadata.name}" for p in [*ray_pods(admin, cluster), *submitters]}
    shown = app_follows_the_run(t2, tmp_path, monkeypatch, name, cluster, expected)
    assert "running" in str(shown["state"])
    pods = shown["pods"]
    assert isinstance(pods, dict) and set(pods) == expected
    assert all(cells[2] == name for cells in pods.values()), pods
    assert all(pods[f"{NS}/{p.metadata.name}"][4].endswith("Running") for p in ray_pods(admin, cluster)), pods
    events = shown["events"]
    assert isinstance(events, set) and any(e.startswith("Workload/") for e in events), events
    mine = {name, cluster, *(key.split("/", 1)[1] for key in expected)}  # the run, its cluster, its pods
    assert all(e.split("/", 1)[1] in mine or e.startswith("Workload/") for e in events), events
    described = cli(t2, tmp_path, "status", name, "-n", NS, "--events")
    assert described.returncode == 0 and f"RayCluster/{cluster}" in described.stdout, described.stdout

    logs = cli(t2, tmp_path, "logs", name, "-n", NS)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.splitlines() == RAY_DRIVER_LINES  # ray job logs JOB_ID in the head, through the API's exec
    follow = subprocess.Popen([sys.executable, "-m", "tau_tui", "logs", name, "-n", NS, "-f", "--all"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(t2, tmp_path))
    followed = Lines(follow)
    cancel = None
    try:
        followed.until(lambda seen: [line for line in seen if line.startswith("[driver] ")][:3]
                       == [f"[driver] {line}" for line in RAY_DRIVER_LINES], "the driver's history first")
        assert followed.seen[:3] == [f"[driver] {line}" for line in RAY_DRIVER_LINES]
        t2.ray_dashboard.append(job_id, "epoch 1 loss=0.91", "epoch 2 loss=0.73")
        followed.until(lambda seen: "[driver] epoch 2 loss=0.73" in seen, "new driver lines, followed")
        # A broken read: the `ray job logs --follow` that the head's exec runs dies; the follower
        # reads the output again and takes only what it had not (nothing lost, nothing twice).
        broken = ray_log_followers(job_id)
        assert broken, "no `ray job logs --follow` running for the follower"
        for pid in broken:
            os.kill(pid, signal.SIGKILL)
        t2.ray_dashboard.append(job_id, "epoch 3 loss=0.60")
        followed.until(lambda seen: "[driver] epoch 3 loss=0.60" in seen, "the driver line after the read broke")

        pods = ray_pods(admin, cluster)
        hold(admin, pods)
        cancel = subprocess.Popen([sys.executable, "-m", "tau_tui", "cancel", name, "-n", NS, "--wait", "--interval", "0.5s"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(t2, tmp_path))
        said = Lines(cancel)
        said.until(lambda seen: len(seen) >= 2, "the cancel and the first release line", timeout=120)
        assert said.seen[0].startswith(f"RayJob {NS}/{name} cancelled; Kueue releases its quota"), said.seen
        assert said.seen[1].startswith(f"{NS}/{name}: releasing compute"), said.seen
        # The operator stopped the Ray job and let the RayJob go; the cluster's pods are terminating, held.
        wait_for(lambda: rayjob(admin, name) is None, "the RayJob gone (the operator removed its finalizer)", timeout=120)
        assert t2.ray_dashboard.job(job_id).stop_requests >= 1
        wait_for(lambda: all(p.metadata.deletion_timestamp for p in ray_pods(admin, cluster)) and ray_pods(admin, cluster),
                 "the RayCluster's pods terminating", timeout=120)
        for _ in range(4):  # still waiting while they exist
            time.sleep(0.5)
            assert cancel.poll() is None and ray_pods(admin, cluster)
        assert follow.wait(timeout=120) == 0, "logs -f did not end with the run"
        release(admin, cluster)
        assert cancel.wait(timeout=120) == 0, cancel.stderr.read() if cancel.stderr else ""
        said.drain()
        assert said.seen[-1] == f"{NS}/{name}: cancelled; compute released", said.seen
        assert ray_pods(admin, cluster) == []
    finally:
        for proc in (follow, cancel):
            if proc is not None and proc.poll() is None:
                proc.kill()
        release(admin, cluster)
    followed.drain()
    driver = [line for line in followed.seen if line.startswith("[driver] ")]
    assert driver[:6] == [f"[driver] {line}" for line in
                          [*RAY_DRIVER_LINES, "epoch 1 loss=0.91", "epoch 2 loss=0.73", "epoch 3 loss=0.60"]]
    assert len(driver) == len(set(driver)), driver  # no line twice
    assert any("/ray-head] " in line for line in followed.seen) and any("/ray-worker] " in line for line in followed.seen)
    wait_for(lambda: cluster_queue_usage(admin) == (0, 0), "Kueue's quota released", timeout=120)


def test_retry_and_resume_make_new_rayjobs_that_kuberay_runs(t2, admin, tmp_path):
    name = "ray-again"
    resilience = "resilience:\n  max_retries: 1\n  retry_on: [OOMKilled]\n  backoff_initial: 1s\n"
    assert cli(t2, tmp_path, "submit", str(write_config(tmp_path / "run", name, resilience)), "-n", NS).returncode == 0
    held: list[str] = []
    try:
        for attempt in (1, 2):  # KubeRay's own backoffLimit (= max_retries) retries the first failure itself
            obj = running_under_kuberay(t2, admin, name)
            cluster, job_id = obj["status"]["rayClusterName"], obj["status"]["jobId"]
            worker = next(p for p in ray_pods(admin, cluster) if p.metadata.labels["ray.io/node-type"] == "worker")
            hold(admin, ray_pods(admin, cluster))  # the failed cluster's pods stay to be read (the OOM)
            held.append(cluster)
            k8s.CoreV1Api(admin).patch_namespaced_pod_status(worker.metadata.name, NS, {"status": {"containerStatuses": [
                {**k8s.ApiClient().sanitize_for_serialization(worker.status.container_statuses[0]),
                 "restartCount": 1, "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                                                 "startedAt": "2026-01-01T00:00:00Z",
                                                                 "finishedAt": "2026-01-01T00:00:01Z"}}}]}})
            t2.ray_dashboard.finish(job_id, "FAILED", "the worker was OOMKilled")
            if attempt == 1:
                wait_for(lambda job_id=job_id: (rayjob(admin, name)["status"].get("jobId") or job_id) != job_id,
                         "KubeRay's own retry: a new Ray job", timeout=300)
        wait_for(lambda: rayjob(admin, name)["status"].get("jobDeploymentStatus") == "Failed", "the RayJob Failed", timeout=300)
        retried = cli(t2, tmp_path, "runs", "retry", name, "-n", NS, "--yes")
        assert retried.returncode == 0, retried.stdout + retried.stderr
        retry_name = f"{name}-retry-1"
        assert rayjob(admin, name)["metadata"]["annotations"].get("tau.azure.com/retried-as") == retry_name
        retry = running_under_kuberay(t2, admin, retry_name)
        assert retry["metadata"]["annotations"]["tau.azure.com/retry-attempt"] == "1"
        t2.ray_dashboard.finish(retry["status"]["jobId"], "SUCCEEDED")
        wait_for(lambda: rayjob(admin, retry_name)["status"].get("jobDeploymentStatus") == "Complete",
                 "the retry Complete", timeout=300)
        resumed = cli(t2, tmp_path, "runs", "resume", retry_name, "-n", NS, "--from", "/mnt/checkpoints/iter-9", "--yes")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        resume_name = next(r["metadata"]["name"] for r in k8s.CustomObjectsApi(admin).list_namespaced_custom_object(
            *RAY, NS, "rayjobs")["items"] if r["metadata"]["name"].startswith(f"{name}-resume-"))
        resume = running_under_kuberay(t2, admin, resume_name)
        env = resume["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "TAU_RESUME_FROM", "value": "/mnt/checkpoints/iter-9"} in env
        assert cli(t2, tmp_path, "cancel", resume_name, "-n", NS, "--wait", "--interval", "0.5s").returncode == 0
    finally:
        for cluster in held:
            release(admin, cluster)
