"""On the simulated fleet: `tau-tui cancel --wait` of a run dispatched through
MultiKueue whose Workload lost its status.clusterName (HoldAndDrain evicted it) while its pod
still runs on a worker.  Before, the worker was never asked and the cancel said "cancelled; compute
released" at once.  Now every worker that may hold the pods (every MultiKueueCluster of the check's
MultiKueueConfig) is asked; a worker that cannot be reached leaves the release unknown (exit 1)."""

from __future__ import annotations

import pytest
import yaml

from tau_tui import cli
from tau_tui.commands import run_commands
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.rundocument import read_run
from tests import builders
from tests.multikueue_lab import lab_pod, lab_with_a_run_placed

R = ResourceKind
NS, RUN = "team-nlp", "mk-train"
WORKERS = ("lab-worker-1", "lab-worker-2")


def workload(lab) -> dict:
    [wl] = [w for w in lab.world.store.items(R.WORKLOAD.type) if w["metadata"]["namespace"] == NS
            and any(o.get("name") == RUN for o in w["metadata"].get("ownerReferences") or ())]
    return wl


@pytest.fixture
def evicted(tmp_path, monkeypatch):
    """Set up, a run placed on a worker with a Running pod there, then HoldAndDrain on the dedicated
    ClusterQueue: the eviction clears the Workload's clusterName; the pod stays on the worker."""
    lab = lab_with_a_run_placed(tmp_path, monkeypatch)
    worker = (workload(lab).get("status") or {}).get("clusterName")
    assert worker in WORKERS, workload(lab).get("status")
    lab.fleet.workers[worker].store.put(R.POD.type, lab_pod(f"{worker}-gpu-0"))

    def hold_and_drain(cq: dict) -> None:
        cq["spec"]["stopPolicy"] = "HoldAndDrain"
    lab.world.store.update(R.CLUSTER_QUEUE.type, "mk-lab-cq", None, hold_and_drain)
    lab.world.advance(5)
    assert not (workload(lab).get("status") or {}).get("clusterName")  # the eviction cleared it
    assert lab.fleet.workers[worker].store.read(R.POD.type, f"{RUN}-0-abcde", NS) is not None
    config = tmp_path / "config" / "tau-tui" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(yaml.safe_dump({"worker_contexts": {w: w for w in WORKERS}}))
    monkeypatch.setattr(run_commands, "_read_backend", lambda args: lab.backend)
    lab.worker = worker
    return lab


def test_without_clustername_every_worker_of_the_config_may_hold_the_run(evicted):
    from tau_tui.core.operations.multikueue_steps.worker_release import dispatch_workers

    found = dispatch_workers(evicted.backend, read_run(evicted.backend, NS, RUN))
    assert found.workers == WORKERS and not found.problem
    assert "MultiKueueConfig mk-lab-workers" in found.why


def test_cancel_wait_while_the_workers_api_server_is_down_is_unknown_never_released(evicted, capsys):
    evicted.fleet.workers[evicted.worker].api_outage()
    assert cli.main(["cancel", RUN, "-n", NS, "--wait", "--interval", "1s"]) == 1
    out, err = capsys.readouterr()
    assert "compute released" not in out
    assert f"{NS}/{RUN}: release on worker {evicted.worker} unknown: cannot reach it" in err
    assert "its pods may still hold GPUs there" in err


def test_cancel_wait_asks_the_worker_and_waits_for_its_pod(evicted, capsys, monkeypatch):
    """The worker is up: the run is "releasing compute" while its pod runs there, released once gone."""
    remote = evicted.fleet.workers[evicted.worker]
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        evicted.world.advance(seconds)
        if len(polls) == 3:  # the worker's pod terminates after three polls saw it
            remote.store.remove(R.POD.type, f"{RUN}-0-abcde", NS)
    monkeypatch.setattr("time.sleep", sleep)
    assert cli.main(["cancel", RUN, "-n", NS, "--wait", "--interval", "1s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Job {NS}/{RUN} cancelled; Kueue releases its quota"
    assert lines[1].startswith(f"{NS}/{RUN}: dispatched through MultiKueue; asking workers lab-worker-1, lab-worker-2")
    assert f"{NS}/{RUN}: releasing compute: 1 pod(s) still hold GPUs on worker {evicted.worker} ({evicted.worker}-gpu-0)" in lines[2]
    assert lines[-1] == f"{NS}/{RUN}: cancelled; compute released"
    assert len(polls) == 3


class _WorkerPods:
    """A worker's pod list (what ``fetch`` of a worker backend answers), with the selector it was asked."""

    def __init__(self, pods: list[dict]):
        self.pods = pods
        self.selectors: list[str | None] = []

    def fetch(self, kind, namespace=None, label_selector=None):
        from tau_tui.core.cluster.convert import pod_view
        from tau_tui.core.sim.store import _selector_matches

        self.selectors.append(label_selector)
        if kind is not ResourceKind.POD:
            return []  # no Job, RayJob or RayCluster of the run left on this worker
        return [pod_view(p) for p in self.pods if _selector_matches(p["metadata"].get("labels") or {}, label_selector)]

    def _api_list(self, rt, namespace=None, label_selector=None):
        return []


def _pod(name: str, labels: dict) -> dict:
    return builders.pod(name, NS, node="lab-worker-1-gpu-0", containers=("ray",), image="rayproject/ray:2.9",
                        labels=labels, api=True)


def test_a_rayjobs_pods_on_a_worker_are_found_by_its_raycluster_not_by_job_name():
    """A RayJob's pods carry ray.io/cluster, never job-name: reading them by job-name found none and a
    cancel said "released" while the Ray head and workers still held GPUs on the worker."""
    from tau_tui.core.operations.multikueue_steps.worker_release import read_pods_on_worker

    worker = _WorkerPods([
        _pod("ray-ppo-raycluster-x7k2-head-abc", {"ray.io/cluster": "ray-ppo-raycluster-x7k2", "ray.io/node-type": "head"}),
        _pod("ray-ppo-raycluster-x7k2-worker-def", {"ray.io/cluster": "ray-ppo-raycluster-x7k2"}),
        _pod("other-raycluster-head", {"ray.io/cluster": "other-raycluster"}),
        _pod("ray-ppo-0-xyz", {"job-name": "other"}),
    ])
    as_job = read_pods_on_worker("lab-worker-1", worker, NS, "ray-ppo")
    assert as_job.pods == ()  # what a Job's selector sees of a RayJob: nothing
    found = read_pods_on_worker("lab-worker-1", worker, NS, "ray-ppo", ray_job=True)
    assert sorted(p.name for p in found.pods or ()) == ["ray-ppo-raycluster-x7k2-head-abc", "ray-ppo-raycluster-x7k2-worker-def"]
    named = read_pods_on_worker("lab-worker-1", worker, NS, "ray-ppo", ray_job=True, ray_cluster="other-raycluster")
    assert sorted(p.name for p in named.pods or ()) == ["other-raycluster-head", "ray-ppo-raycluster-x7k2-head-abc",
                                                        "ray-ppo-raycluster-x7k2-worker-def"]
