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
from tau_tui.core.operations.evidence.store import EvidenceStore, RecordSummary
from tau_tui.core.operations.rundocument import read_run
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world

REAL_CLUSTER = ClusterIdentity("https://gpu-cluster.example:6443", "5d0c3a52-8f0e-4c55-9a61-0c7d2b3f9e10")
FAILED_RUN = ("team-nlp", "eval-mmlu-0301")


def record_of(cluster: ClusterIdentity, *, captured_at: datetime | None = None,
              store: EvidenceStore | None = None) -> RecordSummary:
    """The demo's failed run kept as a record of ``cluster`` (in the user's store by default)."""
    backend = SimulatedBackend(build_world("demo"))
    try:
        objs = read_run(backend, *FAILED_RUN)
        nodes, reports = live_nodes(backend)
        result = capture(backend, store or EvidenceStore(), objs, "failed", captured_at or backend.world.now(),
                         source="cli", nodes=nodes, gpu_reports=reports, cluster=cluster)
        assert result.record is not None, result.message
        return result.record
    finally:
        backend.close()


def real_cluster_bundle(path: Path, *, captured_at: datetime | None = None) -> Path:
    """Export the demo's failed run as a record of :data:`REAL_CLUSTER` (kept in a store of its own
    beside ``path``, so each call captures afresh), signed with the user's key."""
    store = EvidenceStore(path.with_name(path.name + ".sqlite3"))
    record = record_of(REAL_CLUSTER, captured_at=captured_at, store=store)
    return write_bundle(record, store.files(record.id), path, overwrite=True)
