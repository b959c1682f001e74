"""Quota warnings read from the server's queues, as `tau-tui submit` prints them."""

from __future__ import annotations

from tau_tui.core.operations.admission_fit import request_totals, server_quota_warnings
from tau_tui.core.sim.backend import SimulatedBackend
from tests.scenarios import demo_backend


def test_cli_submit_quota_check_reads_the_queues_from_the_server():
    """What `tau-tui submit` prints, against the simulated API server (same primitives as the real one)."""
    world, backend = demo_backend()
    try:
        assert isinstance(backend, SimulatedBackend)
        manifests = [{"kind": "Job", "metadata": {"namespace": "taugrid-default",
                                                   "labels": {"kueue.x-k8s.io/queue-name": "jobqueue"}},
                      "spec": {"parallelism": 2, "template": {"spec": {"containers": [
                          {"resources": {"requests": {"memory": "999Pi", "nvidia.com/gpu": "8"}}}]}}}}]
        totals = request_totals(manifests)
        assert totals.pods == 2 and totals.requests["nvidia.com/gpu"] == 16
        warnings = server_quota_warnings(backend, totals)
        assert len(warnings) == 1 and warnings[0].startswith("memory 1998Pi requested exceeds"), warnings
        fits = request_totals([{**manifests[0], "spec": {"parallelism": 1, "template": {"spec": {"containers": [
            {"resources": {"requests": {"memory": "16Gi", "nvidia.com/gpu": "8"}}}]}}}}])
        assert server_quota_warnings(backend, fits) == []
    finally:
        backend.close()
