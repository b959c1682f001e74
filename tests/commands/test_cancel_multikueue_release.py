"""#44 item 6, on the simulated fleet through `tau-tui cancel --wait`: "compute released" on a
MultiKueue worker needs the worker's own objects of the run read there, not only its scheduled pods.

* a Pending pod (not scheduled yet) may still take GPUs: the run is releasing until it is gone;
* a Job between retries (its last pod failed, the next not created yet) while the manager cannot reach
  the worker (Kueue cannot delete the remote Job): the Job is still there and may start pods again.

Before: both read "cancelled; compute released" at once (only scheduled, unfinished pods counted; the
worker's Job was never read)."""

from __future__ import annotations

import pytest
import yaml

from tau_tui import cli
from tau_tui.commands import run_commands
from tau_tui.core.cluster.kinds import ResourceKind
from tests.multikueue_lab import lab_pod, lab_with_a_run_placed, revoke_by_hand, token_of

R = ResourceKind
NS, RUN, WORKER = "team-nlp", "mk-train", "lab-worker-1"


@pytest.fixture
def placed(tmp_path, monkeypatch):
    """Set up, and a run placed on lab-worker-1 (its Job copied there by MultiKueue)."""
    lab = lab_with_a_run_placed(tmp_path, monkeypatch)
    remote = lab.fleet.workers[WORKER].store
    assert remote.read(R.JOB.type, RUN, NS) is not None, "MultiKueue copied the Job to the worker"
    config = tmp_path / "config" / "tau-tui" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(yaml.safe_dump({"worker_contexts": {w: w for w in lab.fleet.workers}}))
    monkeypatch.setattr(run_commands, "_read_backend", lambda args: lab.backend)
    return lab


def cancel_waiting(lab, monkeypatch, capsys, after_polls: int, then) -> list[str]:
    """`tau-tui cancel RUN --wait`; after ``after_polls`` polls ``then()`` runs (the worker lets go)."""
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        lab.world.advance(seconds)
        if len(polls) == after_polls:
            then()
    monkeypatch.setattr("time.sleep", sleep)
    assert cli.main(["cancel", RUN, "-n", NS, "--wait", "--interval", "1s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(polls) >= after_polls, lines
    return lines


def test_a_pending_pod_on_the_worker_is_not_released(placed, monkeypatch, capsys):
    remote = placed.fleet.workers[WORKER].store
    remote.put(R.POD.type, lab_pod(None, phase="Pending"))  # created by the worker's Job, not scheduled yet
    lines = cancel_waiting(placed, monkeypatch, capsys, 3, lambda: remote.remove(R.POD.type, f"{RUN}-0-abcde", NS))
    releasing = [line for line in lines if "releasing compute" in line]
    assert releasing and f"1 pod(s) on worker {WORKER} not scheduled yet" in releasing[0], lines
    assert lines[-1] == f"{NS}/{RUN}: cancelled; compute released"


def test_a_job_between_retries_on_a_worker_the_manager_cannot_reach_is_not_released(placed, monkeypatch, capsys):
    remote = placed.fleet.workers[WORKER].store
    # the manager's credential stops working on the worker: Kueue cannot delete the remote Job any more
    revoke_by_hand(placed, WORKER, token_of(placed, f"{WORKER}-kubeconfig"))
    placed.world.advance(5)
    # its last pod failed; the Job controller starts the next after its back-off
    remote.put(R.POD.type, lab_pod(f"{WORKER}-gpu-0", phase="Failed"))

    def kueue_reconnected() -> None:  # what Kueue's garbage collection does once it reaches the worker again
        remote.remove(R.JOB.type, RUN, NS)
    lines = cancel_waiting(placed, monkeypatch, capsys, 3, kueue_reconnected)
    releasing = [line for line in lines if "releasing compute" in line]
    assert releasing and f"Job {NS}/{RUN} (" in releasing[0] and f"still on worker {WORKER}" in releasing[0], lines
    assert lines[-1] == f"{NS}/{RUN}: cancelled; compute released"
