"""Cancel that tells the truth, on a real control plane (issue #14 item 2, tier 2).

A two-node torchrun run rendered from a tau.yaml (a Job and its `<name>-headless` Service, as
`tau-tui submit` creates them) is admitted by Kueue and runs (KWOK) on two test-only GPU nodes.
The test holds the run's pods with a finalizer of its own before the cancel, so they outlive the
Job for as long as the test says: KWOK deletes a pod only when it has no finalizers left. While
any pod exists the run reads "releasing compute" (the Runs pane, through the app's own cancel
mutation and confirmation; `tau-tui cancel --wait` as a subprocess); the headless Service is gone
at once; when the test lets the pods go the run reads "cancelled".
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.agent.harness_support import gpu_queue, harness_app, kwok_test_nodes, on_test_nodes
from tests.agent.test_agent_tui_harness import wait_until
from tests.harness.kwok import KEEP_RUNNING_ANNOTATIONS
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NS, QUEUE, CQ = "cancel-t2", "cancel", "cancel-cq"
NODES = ("cancel-gpu-a", "cancel-gpu-b")
#: The test's own hold on the run's pods: KWOK's pod-delete stage waits for an empty finalizer list.
HOLD = "tau-tui.test/hold-pod"
SMP = "application/strategic-merge-patch+json"
GRACE_SECONDS = 2


def tau_yaml(name: str) -> str:
    """Two pods of 4 GPUs each (torchrun over two nodes): two such runs fit the queue at once."""
    return (f"name: {name}\nimage: registry.invalid/tau/trainer:1\nentrypoint: train.py\ncompute:\n  gpus: 4\n"
            f"execution:\n  launcher: torchrun\n  nodes: 2\npolicy:\n  queue: {QUEUE}\n")


@pytest.fixture(scope="module")
def admin(t2):
    from kubernetes import config as k8s_config

    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def test_nodes(t2, admin):
    """Two tainted KWOK GPU nodes only these runs use, and a queue of 16 GPUs for them."""
    gpu_queue(admin, NS, QUEUE, CQ, gpus=16)
    with kwok_test_nodes(admin, NODES):
        yield NODES


def submit(t2, tmp_path: Path, name: str) -> None:
    """Render and submit as `tau-tui submit` does (Job + headless Service), on the test nodes."""
    (tmp_path / "tau.yaml").write_text(tau_yaml(name))
    (tmp_path / "train.py").write_text("print('training')\n")
    run = render_run(load_config(tmp_path / "tau.yaml"), ProfileSet("none", None, "", []), RenderOptions(NS, None, None, None))
    assert [m["kind"] for m in run.manifests] == ["Job", "Service"]
    for manifest in run.manifests:
        if manifest["kind"] == "Job":
            # KWOK deletes a pod at its deletionTimestamp (deletion + grace period): the renderer's 600 s
            # would hold the pods for ten minutes; with 2 s only the test's finalizer holds them.
            manifest["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = GRACE_SECONDS
    backend = KubernetesBackend(kubeconfig=t2.kubeconfig, namespace=NS)
    try:
        results = backend.submit(on_test_nodes(run.manifests, NODES, KEEP_RUNNING_ANNOTATIONS))
    finally:
        backend.close()
    assert all(r.ok for r in results), [r.message for r in results]


def running_pods(core: k8s.CoreV1Api, name: str) -> list[k8s.V1Pod]:
    def both_running():
        pods = core.list_namespaced_pod(NS, label_selector=f"job-name={name}").items
        running = [p for p in pods if p.status.phase == "Running" and p.spec.node_name]
        return running if len(running) == 2 else None
    return wait_for(both_running, f"both pods of {name} Running on the test nodes", timeout=180)


def hold(core: k8s.CoreV1Api, pods: list[k8s.V1Pod]) -> None:
    for pod in pods:
        core.patch_namespaced_pod(pod.metadata.name, NS, {"metadata": {"finalizers": [HOLD]}}, _content_type=SMP)
    for pod in pods:
        assert HOLD in core.read_namespaced_pod(pod.metadata.name, NS).metadata.finalizers


def release(core: k8s.CoreV1Api, name: str) -> None:
    for pod in core.list_namespaced_pod(NS, label_selector=f"job-name={name}").items:
        if HOLD in (pod.metadata.finalizers or ()):
            core.patch_namespaced_pod(pod.metadata.name, NS, {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}},
                                      _content_type=SMP)


def pods_of(core: k8s.CoreV1Api, name: str) -> list[k8s.V1Pod]:
    return core.list_namespaced_pod(NS, label_selector=f"job-name={name}").items


def service_exists(core: k8s.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespaced_service(f"{name}-headless", NS)
        return True
    except ApiException as err:
        if err.status == 404:
            return False
        raise


def test_runs_pane_cancel_reads_releasing_compute_until_the_pods_are_gone(t2, admin, test_nodes, tmp_path, monkeypatch):
    """ctrl+d and "y" on the run in the Runs pane (the app's cancel mutation against the real API)."""
    name, key = "cancel-pane", f"{NS}/cancel-pane"
    core = k8s.CoreV1Api(admin)
    submit(t2, tmp_path, name)
    pods = running_pods(core, name)
    hold(core, pods)
    assert service_exists(core, name)

    app, backend = harness_app(t2, tmp_path, monkeypatch, "runs", [ResourceKind.JOB, ResourceKind.POD])
    seen: dict[str, list[str]] = {"states": []}

    async def drive():
        async with app.run_test(size=(160, 48)) as pilot:
            table = app.screen.query_one("#runs-table", KeyedTable)

            def state() -> str:
                cells = table.cells_of(key)
                return cells[0].plain if cells else ""

            await wait_until(pilot, lambda: "running" in state(), f"{key} running in the Runs pane", timeout=60)
            table.focus()
            table.move_cursor(row=table.keys.index(key))
            await pilot.press("ctrl+d")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the cancel confirmation")
            await pilot.press("y")
            await wait_until(pilot, lambda: "releasing" in state(), f"{key} releasing compute", timeout=60)
            assert state() == "◑ releasing compute"
            # The Job is gone, the pods are not: they still hold the nodes' GPUs.
            assert wait_for(lambda: not service_exists(core, name), "the headless Service deleted", timeout=30) is True
            with pytest.raises(ApiException) as gone:
                k8s.BatchV1Api(admin).read_namespaced_job(name, NS)
            assert gone.value.status == 404
            holding = pods_of(core, name)
            assert len(holding) == 2 and all(p.metadata.deletion_timestamp for p in holding)
            # Past the grace period only the finalizer holds them: wait until every deletionTimestamp is past.
            last = max(p.metadata.deletion_timestamp for p in holding)
            wait_for(lambda: datetime.now(UTC) > last, "the pods' grace period to end", timeout=30)
            # Still releasing for as long as any pod exists: checked on every refresh the pane applies.
            for _ in range(3):
                applied = app.screen.refreshes_applied
                await wait_until(pilot, lambda applied=applied: app.screen.refreshes_applied > applied, "a refresh")
                assert pods_of(core, name) and state() == "◑ releasing compute", state()
            release(core, name)
            try:
                await wait_until(pilot, lambda: "cancelled" in state(), f"{key} cancelled", timeout=90)
            except AssertionError as err:
                left = [(p.metadata.name, p.status.phase, p.metadata.finalizers, p.metadata.deletion_timestamp)
                        for p in pods_of(core, name)]
                raise AssertionError(f"{err}; the pane reads {state()!r}; pods: {left}; "
                                     f"cancelled_runs: {app.screen.cancelled_runs}") from None
            assert state() == "■ cancelled"
            assert pods_of(core, name) == []
            seen["states"].append(state())

    try:
        asyncio.run(drive())
    finally:
        release(core, name)
        backend.close()
    assert seen["states"] == ["■ cancelled"]


def test_cli_cancel_wait_prints_releasing_until_the_pods_are_gone_then_cancelled(t2, admin, test_nodes, tmp_path):
    """`tau-tui cancel RUN --wait` as a subprocess against the tier's kubeconfig."""
    name = "cancel-cli"
    core = k8s.CoreV1Api(admin)
    submit(t2, tmp_path, name)
    hold(core, running_pods(core, name))
    env = {**os.environ, "KUBECONFIG": t2.kubeconfig, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen([sys.executable, "-m", "tau_tui", "cancel", name, "-n", NS, "--wait", "--interval", "0.5s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in proc.stdout or ()], daemon=True)
    reader.start()
    out: list[str] = []

    def next_line(timeout: float) -> str:
        out.append(lines.get(timeout=timeout))
        return out[-1]

    try:
        assert next_line(60) == f"Job {NS}/{name} cancelled; Kueue releases its quota; Service {name}-headless deleted"
        releasing = next_line(60)
        assert releasing.startswith(f"{NS}/{name}: releasing compute: 2 pod(s) still hold GPUs on "), releasing
        assert not service_exists(core, name)
        # It keeps waiting while the pods exist: still running after several of its polls (0.5 s each).
        for _ in range(6):
            time.sleep(0.5)
            assert proc.poll() is None and len(pods_of(core, name)) == 2
        release(core, name)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
        reader.join(timeout=30)
        while not lines.empty():
            next_line(0)
        assert out[-1] == f"{NS}/{name}: cancelled; compute released", out
        assert all(line.startswith(f"{NS}/{name}: releasing compute") for line in out[1:-1]), out
        assert pods_of(core, name) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        release(core, name)
    entries = [json.loads(line) for line in (tmp_path / "state" / "tau-tui" / "audit.jsonl").read_text().splitlines()]
    assert [(e["verb"], e["phase"], e["ok"]) for e in entries] == [("cancel", "intent", None), ("cancel", "outcome", True)]
    assert entries[-1]["target"] == f"Job {NS}/{name}"
