"""pytest fixtures for the local control plane tiers (see docs/testing.md).

t1: etcd + kube-apiserver + Kueue (webhooks, visibility API, Kueue/KubeRay/Tau CRDs).
t2: t1 + kube-controller-manager + kube-scheduler + KWOK with fake GPU nodes.
t3: a MultiKueue manager and two workers, wired with kubeconfig Secrets.
A tier that cannot start fails with the reason; nothing is skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
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
    wire,
)

KEEP_STATE_ENV = "TAU_HARNESS_KEEP"


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


def _state_dir(tier: str) -> Path:
    # Not under pytest's numbered tmp dirs: concurrent sessions prune those.
    return Path(tempfile.mkdtemp(prefix=f"tau-harness-{tier}-"))


def _cleanup(state_dir: Path) -> None:
    if not os.environ.get(KEEP_STATE_ENV):
        # Logs and etcd data stay only on request (TAU_HARNESS_KEEP=1).
        shutil.rmtree(state_dir, ignore_errors=True)


def _start(planes: list[ControlPlane]) -> None:
    """Start all planes or none; on failure keep only the logs (the error names them)."""
    started: list[ControlPlane] = []
    try:
        for plane in planes:
            plane.start()
            started.append(plane)
    except BaseException:
        for plane in reversed(started):
            plane.stop()
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
    yield from _single_plane(
        "t2", ("etcd", "kube_apiserver", "kueue", "kube_controller_manager", "kube_scheduler", "kwok"),
        workloads_controllers=True,
    )


@pytest.fixture(scope="session")
def t3():
    binaries = locate()
    binaries.require("etcd", "kube_apiserver", "kueue", "kube_controller_manager")
    state = _state_dir("t3")
    manager = ControlPlane(
        "manager", state / "manager", binaries, garbage_collector=True,
        kueue=KueueOptions(multikueue={"gcInterval": "5s", "origin": "multikueue", "workerLostTimeout": "60s"}),
    )
    workers = [
        ControlPlane(name, state / name, binaries, kueue=KueueOptions(visibility=False))
        for name in WORKER_NAMES
    ]
    planes = [manager, *workers]
    _start(planes)
    try:
        wire(manager, workers)
    except BaseException:
        for plane in reversed(planes):
            plane.stop()
            shutil.rmtree(plane.state_dir / "etcd", ignore_errors=True)
        raise
    try:
        yield MultiKueueTier(manager=manager, workers=workers, planes=planes)
    finally:
        for plane in reversed(planes):
            plane.stop()
        _cleanup(state)
