"""Cancel of a MultiKueue run from the manager, on the simulated fleet: its pods run on
the worker, so the run reads "releasing compute" until the worker's pods are gone (read on the
worker through the context mapped to it), and never "cancelled" when that worker cannot be read."""

from __future__ import annotations

from dataclasses import replace

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.core.operations.multikueue_steps.worker_logs import worker_log_backend
from tau_tui.core.operations.rundocument import read_run, read_worker_pods
from tau_tui.core.operations.runstatus import compute_run_status
from tests.multikueue_lab import YES, lab_job, lab_pod, make_lab

NS, RUN = "team-nlp", "mk-train"


def test_a_multikueue_run_is_released_only_when_the_workers_pods_are_gone(tmp_path):
    lab = make_lab(tmp_path)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    assert all(r.ok for r in lab.backend.submit([lab_job()]))
    lab.world.advance(15)
    placed = compute_run_status(read_run(lab.backend, NS, RUN))
    worker = placed.cluster
    assert placed.multikueue and worker in lab.fleet.workers, placed
    remote = lab.fleet.workers[worker]
    remote.store.put(ResourceKind.POD.type, lab_pod(f"{worker}-gpu-0"))

    assert lab.backend.cancel(ResourceKind.JOB, NS, RUN).ok
    lab.world.advance(2)
    worker_backend = worker_log_backend(lab.backend, worker, {worker: worker})

    def status(mapped: bool = True):
        pods = read_worker_pods(worker_backend if mapped else None, NS, RUN)
        return compute_run_status(replace(read_run(lab.backend, NS, RUN), cancelled=True, worker=worker, worker_pods=pods))

    releasing = status()
    assert (releasing.state, releasing.display_state) == ("releasing", "releasing compute")
    release = releasing.phase("Compute release")
    assert release is not None and release.status == "active"
    assert f"1 pod(s) still hold GPUs on worker {worker} ({worker}-gpu-0)" in release.detail

    remote.store.remove(ResourceKind.POD.type, f"{RUN}-0-abcde", NS)
    assert (status().state, status().display_state) == ("cancelled", "cancelled")
    # Without a context for the worker nothing confirms the release: never "cancelled".
    unmapped = status(mapped=False)
    assert (unmapped.state, unmapped.display_state) == ("releasing", "releasing compute (unconfirmed)")
    phase = unmapped.phase("Compute release")
    assert phase is not None and phase.status == "warning" and "worker_contexts" in phase.hint
