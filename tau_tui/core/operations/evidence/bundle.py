"""Export an evidence record as a ``.tar.gz`` bundle: the record's files plus ``MANIFEST.json``,
which lists every file with its size and SHA-256.

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

from tau_tui.core.operations.evidence.store import RecordSummary

BUNDLE_FORMAT = "tau.azure.com/evidence-bundle/v1"
MANIFEST_NAME = "MANIFEST.json"


class ExportError(Exception):
    """An export that could not be written; the message names the path and what to do."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_bundle_name(record: RecordSummary) -> str:
    sid = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in record.submission_id)[:16]
    return f"evidence-{record.namespace}-{record.name}-{sid}.tar.gz"


def manifest_document(record: RecordSummary, files: Mapping[str, bytes]) -> dict[str, Any]:
    summary = {k: v for k, v in asdict(record).items() if k not in ("id", "file_count", "total_bytes")}
    return {
        "format": BUNDLE_FORMAT,
        "record": summary,
        "files": [{"path": path, "size": len(data), "sha256": sha256_hex(data)} for path, data in sorted(files.items())],
    }


def bundle_bytes(record: RecordSummary, files: Mapping[str, bytes]) -> bytes:
    """The bundle as bytes (the same record gives the same bytes)."""
    if MANIFEST_NAME in files:
        raise ExportError(f"a record may not hold a file named {MANIFEST_NAME}")
    try:
        mtime = int(datetime.fromisoformat(record.captured_at.replace("Z", "+00:00")).timestamp())
    except ValueError:
        mtime = 0
    manifest = (json.dumps(manifest_document(record, files), indent=2, sort_keys=True) + "\n").encode("utf-8")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in [(MANIFEST_NAME, manifest), *sorted(files.items())]:
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), mtime, 0o600, 0, 0
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=mtime)


def write_bundle(record: RecordSummary, files: Mapping[str, bytes], target: Path, overwrite: bool = False) -> Path:
    """Write the bundle to ``target`` (0600, atomically).  Refuses to replace a file unless ``overwrite``."""
    data = bundle_bytes(record, files)
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
