"""`evidence list|export|verify`: the local evidence records of finished runs (docs/evidence.md).

``export`` captures the run first when it is finished and not yet recorded (reading it live),
then writes the bundle where ``-o`` says (default: the current directory); nothing is uploaded.
``verify`` needs no cluster: exit 0 when the manifest is signed by the user's key (or ``--key``)
and every file matches it, 1 naming each edited, missing or extra file, another signer, an
unsigned bundle, or saying why the archive was refused.
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
from .parser import EXIT_FAILED, EXIT_OK
from .run_commands import _namespace_of, _read_backend


def cmd_evidence(args: argparse.Namespace) -> int:
    from ..core.operations.evidence.store import EvidenceStore

    store = EvidenceStore()
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

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    now = backend.world.now() if args.demo is not None else datetime.now(UTC)
    try:
        result = capture_live(backend, store, namespace, args.run, now, source="cli")
        record, message = result.record, result.message
    except ClusterError as err:
        # The cluster is out of reach: a record captured before still exports.
        record = store.find(namespace, args.run)
        message = f"cannot read {namespace}/{args.run} from the cluster ({err})"
        if record is not None:
            print(f"tau-tui: {message}; exporting the record captured at {record.captured_at}", file=sys.stderr)
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

    check = verify_bundle(written)
    print(f"{written}: evidence of {record.kind} {record.run} ({record.outcome}), {record.file_count} files; "
          f"manifest sha256 {check.manifest_sha256}, signed by {check.signature.signed_by or '?'}")
    return EXIT_OK if check.ok else EXIT_FAILED


def _verify(args: argparse.Namespace) -> int:
    from ..core.operations.evidence.verify import verify_bundle

    result = verify_bundle(args.bundle, key=args.key)
    stream = sys.stdout if result.ok else sys.stderr
    for line in result.lines():
        print(escape_control(line), file=stream)
    return EXIT_OK if result.ok else EXIT_FAILED
