"""`evidence list|export|verify`: the local evidence records of finished runs (docs/evidence.md).

``export`` captures the run first when it is finished and not yet recorded (reading it live),
then writes the bundle where ``-o`` says (default: the current directory); nothing is uploaded.
When the cluster is out of reach, only a record of the same cluster (its API server; its
``kube-system`` UID when known) is exported.  ``--demo`` uses the simulated cluster's own store and
key, never the user's.  ``verify`` needs no cluster: exit 0 when the manifest is signed by the user's
key in the OS keyring (or by ``--key``) and every file matches it; 4 when it matches but the key
was read from key files (``TAU_TUI_ALLOW_FILE_KEY_STORE=1``) or is the demo's (``--demo``); 1
naming each edited, missing or extra file, another, retired-since or compromised signer, an
unsigned bundle, a demo bundle without ``--demo``, or saying why the archive was refused.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

from ..core.cluster.errors import ClusterError
from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_FAILED, EXIT_NOT_VERIFIED, EXIT_OK
from .run_commands import _namespace_of, _read_backend


def cmd_evidence(args: argparse.Namespace) -> int:
    from ..core.operations.evidence.store import EvidenceStore

    store = EvidenceStore.demo() if getattr(args, "demo", None) else EvidenceStore()
    try:
        if args.evidence_command == "list":
            return _list(args, store)
        if args.evidence_command == "export":
            return _export(args, store)
        return _verify(args)
    except (OSError, sqlite3.Error) as err:
        print(f"tau-tui: evidence store {store.path}: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
        return EXIT_FAILED


def _list(args: argparse.Namespace, store) -> int:
    records = store.records(args.namespace)
    if args.output == "json":
        print(json.dumps({"store": str(store.path), "total": len(records),
                          "records": [{"id": r.id, "namespace": r.namespace, "name": r.name, "kind": r.kind,
                                       "submissionId": r.submission_id, "outcome": r.outcome, "finishedAt": r.finished_at,
                                       "capturedAt": r.captured_at, "capturedBy": r.source, "configHash": r.config_hash,
                                       "nodes": [n for n in r.nodes.split(",") if n], "files": r.file_count,
                                       "bytes": r.total_bytes} for r in records]}, indent=2))
        return EXIT_OK
    header = ("NAMESPACE", "NAME", "KIND", "OUTCOME", "FINISHED", "NODES", "FILES", "SUBMISSION")
    rows = [(r.namespace, r.name, r.kind, r.outcome, r.finished_at or "—", r.nodes or "—", str(r.file_count),
             r.submission_id) for r in records]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(escape_control("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()))
    if not records:
        print(f"(no evidence records in {store.path})", file=sys.stderr)
    return EXIT_OK


def _export(args: argparse.Namespace, store) -> int:
    from ..core.operations.evidence.bundle import ExportError, write_bundle
    from ..core.operations.evidence.capture import capture_live
    from ..core.operations.evidence.cluster_identity import cluster_identity

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    now = backend.world.now() if args.demo is not None else datetime.now(UTC)
    cluster = cluster_identity(backend)
    try:
        if cluster.unreachable:
            raise ClusterError(cluster.problem)
        result = capture_live(backend, store, namespace, args.run, now, source="cli", cluster=cluster)
        record, message = result.record, result.message
    except ClusterError as err:
        # The cluster is out of reach: a record of the same cluster captured before still exports.
        record = store.find(namespace, args.run, cluster=cluster)
        message = f"cannot read {namespace}/{args.run} from the cluster ({err})"
        other = store.find(namespace, args.run) if record is None else None
        if other is not None:
            why = cluster.conflicts(other.cluster_server, other.cluster_uid, other.simulated)
            message += f"; the record of {namespace}/{args.run} kept here is not exported: {why}"
        if record is not None:
            print(f"tau-tui: {message}; exporting the record of the same cluster ({cluster.describe()}) captured at "
                  f"{record.captured_at}", file=sys.stderr)
    if record is None:
        print(f"tau-tui: {escape_control(message)}", file=sys.stderr)
        return EXIT_FAILED
    target = Path(args.output_file).expanduser() if args.output_file else Path.cwd()
    try:
        written = write_bundle(record, store.files(record.id), target, overwrite=args.force)
    except ExportError as err:
        print(f"tau-tui: {err}", file=sys.stderr)
        return EXIT_FAILED
    from ..core.operations.evidence.verify import verify_bundle

    check = verify_bundle(written, demo=record.simulated)
    print(escape_control(f"{written}: evidence of {record.kind} {record.run} ({record.outcome}, {check.cluster()}), "
                         f"{record.file_count} files; manifest sha256 {check.manifest_sha256}, signed by "
                         f"{check.signature.signed_by or '?'}"))
    if check.ok and check.anchor_warning:  # written and intact; what its signature proves is said
        print(escape_control(f"tau-tui: note: {check.anchor_warning}"), file=sys.stderr)
    return EXIT_OK if check.ok else EXIT_FAILED


def _verify(args: argparse.Namespace) -> int:
    from ..core.operations.evidence.verify import verify_bundle

    result = verify_bundle(args.bundle, key=args.key, demo=bool(args.demo))
    stream = sys.stdout if result.ok else sys.stderr
    for line in result.lines():
        print(escape_control(line), file=stream)
    return _verified(result) if result.ok else EXIT_FAILED


def _verified(result) -> int:
    """0 against the OS keyring or --key; 4, said on stderr, against key files or the demo's key."""
    if not result.anchor_warning:
        return EXIT_OK
    print(escape_control(f"tau-tui: not verified against the OS keyring: {result.anchor_warning}"), file=sys.stderr)
    return EXIT_NOT_VERIFIED
