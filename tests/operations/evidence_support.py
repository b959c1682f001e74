"""Bundles of a real cluster's record for the `tau-tui evidence verify` tests, without a cluster.

The demo's failed run (team-nlp/eval-mmlu-0301) is captured from the simulated cluster but recorded
as evidence of a real one (:data:`REAL_CLUSTER`) in the user's own store and signed with the user's
key: the bytes `tau-tui evidence export` writes for such a record.  (An export through the CLI from
`--demo` is the demo's own, signed by the demo's key: docs/evidence.md.)"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tau_tui.core.operations.evidence.bundle import write_bundle
from tau_tui.core.operations.evidence.capture import capture, live_nodes
from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.rundocument import read_run
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world

REAL_CLUSTER = ClusterIdentity("https://gpu-cluster.example:6443", "5d0c3a52-8f0e-4c55-9a61-0c7d2b3f9e10")
FAILED_RUN = ("team-nlp", "eval-mmlu-0301")


def real_cluster_bundle(path: Path, *, captured_at: datetime | None = None) -> Path:
    """Export the demo's failed run as a record of :data:`REAL_CLUSTER`, signed with the user's key."""
    backend = SimulatedBackend(build_world("demo"))
    try:
        store = EvidenceStore()
        objs = read_run(backend, *FAILED_RUN)
        nodes, reports = live_nodes(backend)
        result = capture(backend, store, objs, "failed", captured_at or backend.world.now(), source="cli",
                         nodes=nodes, gpu_reports=reports, cluster=REAL_CLUSTER)
        assert result.record is not None, result.message
        return write_bundle(result.record, store.files(result.record.id), path, overwrite=True)
    finally:
        backend.close()
