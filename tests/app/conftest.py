"""App test fixtures: isolated XDG dirs, a compose workspace, deterministic widgets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

VALID_TAU_YAML = """\
# Snapshot run: one 8-GPU worker through the xl profile.
name: snap-train   # the run's name
image: python:3.12-slim
entrypoint: train.py

compute:
  gpus_per_worker: 8

policy:
  namespace: taugrid-default
  profile: azure.research.training.xl
"""


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, monkeypatch):
    """Audit log, spools, saved logs and app config go under tmp_path, never ~."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TAU_TUI_CONFIG", raising=False)
    monkeypatch.delenv("TAU_TEAM", raising=False)
    yield


@pytest.fixture
def cpu_hog():
    """A CPU-heavy process beside the test (``sha256sum /dev/zero``), as another job on a busy
    machine: keys must still arrive in order.  Stopped by its PID; bounded by ``timeout`` too."""
    hog = subprocess.Popen(["timeout", "900", "sha256sum", "/dev/zero"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        yield hog
    finally:
        hog.terminate()
        hog.wait(timeout=30)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """The MultiKueue lab with its records where the app writes them (under $XDG_DATA_HOME)."""
    from tests.multikueue_lab import make_lab

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    lab = make_lab(tmp_path)
    lab.records = tmp_path / "data" / "tau-tui" / "multikueue" / "records"
    return lab


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A directory with tau.yaml and train.py; the test runs inside it (relative paths on screen)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tau.yaml").write_text(VALID_TAU_YAML)
    (ws / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(ws)
    return ws
