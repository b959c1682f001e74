"""pytest fixtures for the local control plane tiers (see docs/testing.md).

t1: etcd + kube-apiserver + Kueue (webhooks, visibility API, Kueue/KubeRay/Tau CRDs).
t2: t1 + kube-controller-manager + kube-scheduler + KWOK with fake GPU nodes + the KubeRay operator
    (with a stand-in Ray dashboard and `ray` CLI for the heads KWOK cannot run: tests/harness/kuberay.py).
t3: a MultiKueue manager and two workers, each with Kueue; the workers also run a lean
    kube-controller-manager, kube-scheduler and KWOK GPU nodes; wired with kubeconfig Secrets.
A tier that cannot start fails with the reason; nothing is skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .binaries import locate
from .controlplane import ControlPlane, KueueOptions
from .multikueue import (
    MULTIKUEUE_ADMISSION_CHECK,
    MULTIKUEUE_CLUSTER_QUEUE,
    MULTIKUEUE_LOCAL_QUEUE,
    MULTIKUEUE_NAMESPACE,
    WORKER_NAMES,
    WorkerCredential,
    cluster_active_condition,
    start_version_proxy,
    unwire,
    wire,
)

KEEP_STATE_ENV = "TAU_HARNESS_KEEP"
# What a worker's kube-controller-manager runs: Jobs make pods (job), the namespace's default
# ServiceAccount exists for them (serviceaccount), deleting a Job removes its pods and Workload
# (garbagecollector), and KWOK nodes lose the not-ready:NoSchedule taint the apiserver puts on
# every new node once they report Ready (nodelifecycle; without it no pod is ever scheduled).
# Nothing else, to save CPU with three planes on one host.
WORKER_CONTROLLERS = ["job", "garbagecollector", "serviceaccount", "nodelifecycle"]


@dataclass
class MultiKueueTier:
    manager: ControlPlane
    workers: list[ControlPlane]
    worker_names: tuple[str, ...] = WORKER_NAMES
    namespace: str = MULTIKUEUE_NAMESPACE
    local_queue: str = MULTIKUEUE_LOCAL_QUEUE
    cluster_queue: str = MULTIKUEUE_CLUSTER_QUEUE
    admission_check: str = MULTIKUEUE_ADMISSION_CHECK
    planes: list[ControlPlane] = field(default_factory=list)
    # The credential each worker's Secret on the manager (`<name>-secret`) holds now.
    credentials: dict[str, WorkerCredential] = field(default_factory=dict)

    def worker(self, name: str) -> ControlPlane:
        """The worker control plane behind MultiKueueCluster `name`."""
        return self.workers[self.worker_names.index(name)]

    def stop_worker_apiserver(self, name: str) -> None:
        """Kill the worker's kube-apiserver (its etcd, Kueue, controllers and KWOK keep running)."""
        self.worker(name).stop_apiserver(kill=True)

    def start_worker_apiserver(self, name: str) -> None:
        """Start it again on the same port and etcd; returns when /readyz is ok."""
        self.worker(name).start_apiserver()

    def cluster_active(self, name: str) -> dict | None:
        """The manager's `Active` condition of MultiKueueCluster `name` (type, status, reason, message)."""
        return cluster_active_condition(self.manager, name)

    def remove_smoke_wiring(self) -> None:
        """Remove the harness's own MultiKueue objects from the manager (see multikueue.unwire), so a
        test sets MultiKueue up from nothing and a drain's discovery finds only what the test made."""
        unwire(self.manager)

    def restore_smoke_wiring(self) -> None:
        """Wire the workers again as at start (fresh credentials), for the modules that run after."""
        self.credentials.update(wire(self.manager, self.workers))

    def report_version(self, name: str, git_version: str) -> str:
        """URL of a proxy in front of worker `name` whose /version reports `git_version` (e.g. "v1.34.4");
        every other request reaches the real apiserver (tests/harness/versionproxy.py)."""
        return start_version_proxy(self.worker(name), git_version)


def _state_dir(tier: str) -> Path:
    # Not under pytest's numbered tmp dirs: concurrent sessions prune those.
    return Path(tempfile.mkdtemp(prefix=f"tau-harness-{tier}-"))


def _cleanup(state_dir: Path) -> None:
    if not os.environ.get(KEEP_STATE_ENV):
        # Logs and etcd data stay only on request (TAU_HARNESS_KEEP=1).
        shutil.rmtree(state_dir, ignore_errors=True)


def _start(planes: list[ControlPlane], parallel: bool = False) -> None:
    """Start all planes or none; on failure keep only the logs (the error names them).

    `parallel` starts them side by side: start-up is mostly waiting for readiness, so three
    planes come up in little more than the time of one.
    """
    try:
        if parallel:
            with ThreadPoolExecutor(len(planes)) as pool:
                for future in [pool.submit(plane.start) for plane in planes]:
                    future.result()
        else:
            for plane in planes:
                plane.start()
    except BaseException:
        for plane in reversed(planes):
            plane.stop()  # a plane that failed has stopped itself; stop() on a stopped plane is a no-op
        for plane in planes:
            shutil.rmtree(plane.state_dir / "etcd", ignore_errors=True)
        raise


def _single_plane(tier: str, required: tuple[str, ...], **options):
    binaries = locate()
    binaries.require(*required)
    state = _state_dir(tier)
    plane = ControlPlane(tier, state, binaries, **options)
    _start([plane])
    try:
        yield plane
    finally:
        plane.stop()
        _cleanup(state)


@pytest.fixture(scope="session")
def t1():
    yield from _single_plane("t1", ("etcd", "kube_apiserver", "kueue"))


@pytest.fixture(scope="session")
def t2():
    # KubeRay runs here, not in t1: a RayCluster turns Ready only once its pods run (scheduler, KWOK),
    # its submitter is a Job (kube-controller-manager), and a deleted RayJob's cluster and pods go by
    # the garbage collector.
    yield from _single_plane(
        "t2", ("etcd", "kube_apiserver", "kueue", "kube_controller_manager", "kube_scheduler", "kwok", "ray_operator"),
        workloads_controllers=True, kuberay=True,
    )


@pytest.fixture(scope="session")
def t3():
    binaries = locate()
    binaries.require("etcd", "kube_apiserver", "kueue", "kube_controller_manager", "kube_scheduler", "kwok")
    state = _state_dir("t3")
    manager = ControlPlane(
        "manager", state / "manager", binaries, garbage_collector=True,
        kueue=KueueOptions(multikueue={"gcInterval": "5s", "origin": "multikueue", "workerLostTimeout": "60s"}),
    )
    workers = [
        ControlPlane(name, state / name, binaries, kueue=KueueOptions(visibility=False),
                     workloads_controllers=True, controllers=WORKER_CONTROLLERS)
        for name in WORKER_NAMES
    ]
    for worker in workers:
        worker.kwok_keeps_tau_runs = True
    planes = [manager, *workers]
    _start(planes, parallel=True)
    try:
        credentials = wire(manager, workers)
    except BaseException:
        for plane in reversed(planes):
            plane.stop()
            shutil.rmtree(plane.state_dir / "etcd", ignore_errors=True)
        raise
    try:
        yield MultiKueueTier(manager=manager, workers=workers, planes=planes, credentials=credentials)
    finally:
        for plane in reversed(planes):
            plane.stop()
        _cleanup(state)
