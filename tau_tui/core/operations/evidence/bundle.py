"""Export an evidence record as a ``.tar.gz`` bundle: the record's files plus ``MANIFEST.json``,
which lists every file with its size and SHA-256, the files the bundle must hold (``required``)
and its signer's fingerprint, and ``MANIFEST.sig``, the manifest signed with the user's key
(``signature.py``), so a recomputed manifest or a dropped file no longer verifies.

The archive is reproducible (members sorted, mtime = capture time, owner 0, mode 0600) and is
written to a private temporary file beside the target, then renamed, so a reader never sees half
a bundle.  It goes only where the user asked: nothing is uploaded.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.audit import keys_dir
from tau_tui.core.operations.audit_keys import Signer, SigningKeys
from tau_tui.core.operations.demo_trust import demo_keys
from tau_tui.core.operations.evidence.signature import SIGNATURE_NAME, signature_document
from tau_tui.core.operations.evidence.store import RecordSummary

#: v2 bundles are signed; v1 (unsigned) ones still read, and verify as "unsigned: cannot prove".
BUNDLE_FORMAT = "tau.azure.com/evidence-bundle/v2"
BUNDLE_FORMAT_V1 = "tau.azure.com/evidence-bundle/v1"
MANIFEST_NAME = "MANIFEST.json"
#: Files every captured record holds (capture.py); a bundle without one of them fails.
REQUIRED_FILES = ("events.json", "nodes.json", "record.json", "workload-history.json")


class ExportError(Exception):
    """An export that could not be written; the message names the path and what to do."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_bundle_name(record: RecordSummary) -> str:
    sid = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in record.submission_id)[:16]
    return f"evidence-{record.namespace}-{record.name}-{sid}.tar.gz"


def manifest_document(record: RecordSummary, files: Mapping[str, bytes], signer: Signer) -> dict[str, Any]:
    summary = {k: v for k, v in asdict(record).items() if k not in ("id", "file_count", "total_bytes")}
    return {
        "format": BUNDLE_FORMAT,
        "record": summary,
        "files": [{"path": path, "size": len(data), "sha256": sha256_hex(data)} for path, data in sorted(files.items())],
        "required": sorted(files),
        "signer": {"key": signer.fingerprint, "algorithm": "ed25519", **({"demo": True} if record.simulated else {})},
    }


def bundle_bytes(record: RecordSummary, files: Mapping[str, bytes], signer: Signer | None = None) -> bytes:
    """The bundle as bytes, signed by ``signer`` (default: the user's key, created on first use; the
    demo's own key for a record of the simulated cluster); the same record and key give the same bytes."""
    for reserved in (MANIFEST_NAME, SIGNATURE_NAME):
        if reserved in files:
            raise ExportError(f"a record may not hold a file named {reserved}")
    if signer is None:
        signer = (demo_keys() if record.simulated else SigningKeys(keys_dir())).signer()
    try:
        mtime = int(datetime.fromisoformat(record.captured_at.replace("Z", "+00:00")).timestamp())
    except ValueError:
        mtime = 0
    manifest = (json.dumps(manifest_document(record, files, signer), indent=2, sort_keys=True) + "\n").encode("utf-8")
    members = [(MANIFEST_NAME, manifest), (SIGNATURE_NAME, signature_document(manifest, signer)), *sorted(files.items())]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in members:
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), mtime, 0o600, 0, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=mtime)


def write_bundle(record: RecordSummary, files: Mapping[str, bytes], target: Path, overwrite: bool = False,
                 signer: Signer | None = None) -> Path:
    """Write the bundle to ``target`` (0600, atomically).  Refuses to replace a file unless ``overwrite``."""
    from tau_tui.core.operations.audit_keystore import KeyStoreError

    try:
        data = bundle_bytes(record, files, signer)
    except KeyStoreError as err:
        raise ExportError(f"{target}: cannot sign the bundle ({err})") from None
    if target.is_dir():
        target = target / default_bundle_name(record)
    if target.exists() and not overwrite:
        raise ExportError(f"{target}: already exists; choose another path with -o, or pass --force to replace it")
    if not target.parent.is_dir():
        raise ExportError(f"{target.parent}: no such directory; create it or choose another path with -o")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise ExportError(f"{target}: cannot write the bundle ({err.strerror or err})") from None
    return target
