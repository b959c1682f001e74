"""The script or project archive a run carries inside its object (taugrid.md §5.2): no ConfigMap,
so the Job or RayJob is self-contained for MultiKueue.  An init container (`tau-payload`)
materialises it under /script."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import DiagnosticError, shown
from tau_tui.core.runconfig.yamlsource import FileRefused, read_regular_file, resolve_inside

MAX_PAYLOAD_BYTES = 45 * 1024  # rayjobrender.MaxProjectArchiveBytes; keeps the object far below etcd's limit
# What the project archive may read before compression, and how many files it may look at.
MAX_PROJECT_READ_BYTES = 8 * 1024 * 1024
MAX_PROJECT_ENTRIES = 10_000
SCRIPT_DIR = "/script"


@dataclass(frozen=True)
class Payload:
    """Script or project archive carried inside the object, so it is self-contained for MultiKueue."""

    data_b64: str
    digest: str
    is_archive: bool
    entry: str




def payload_of(loaded: LoadedConfig) -> Payload | None:
    c = loaded.config
    if c.run.source is not None or not c.run.entrypoint:
        return None
    working_dir = c.run.working_dir
    is_archive = working_dir is not None
    key, what = ("working_dir", "the project archive") if is_archive else ("entrypoint", "the script")
    try:
        if working_dir is not None:
            raw = project_archive(resolve_inside(loaded.base_dir, working_dir), c.run.working_dir_excludes)
        else:
            # stat first, then read at most one byte past the limit: a 200 MB file is never read whole.
            raw = read_regular_file(resolve_inside(loaded.base_dir, c.run.entrypoint), MAX_PAYLOAD_BYTES)
    except FileRefused as refused:
        if refused.size is not None:
            raise DiagnosticError([loaded.diagnostic(("run", key), f"{what} is {refused.size} bytes; the limit is {MAX_PAYLOAD_BYTES} (45 KiB)", "put large code in the image or on storage")]) from None
        raise DiagnosticError([loaded.diagnostic(("run", key), f"{what}: {refused.message}", refused.hint)]) from None
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise DiagnosticError([loaded.diagnostic(("run", key), f"{what} is {len(raw)} bytes; the limit is {MAX_PAYLOAD_BYTES} (45 KiB)", "put large code in the image or on storage")])
    return Payload(base64.b64encode(raw).decode(), "sha256:" + hashlib.sha256(raw).hexdigest(), is_archive, c.run.entrypoint)


def project_archive(root: Path, excludes: list[str]) -> bytes:
    """A reproducible tar.gz: sorted names, zero mtimes and owners.

    Only regular files and directories go in: a symbolic link anywhere in the project is refused (it
    could carry a file from outside), as is a FIFO or device, and the bytes read are bounded."""
    excludes = [e for e in excludes if e.strip("/")]  # an empty pattern matches nothing, and Path.match refuses it
    files: list[tuple[tuple[str, ...], Path]] = []
    seen = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in sorted(dirs):
            rel = (here / name).relative_to(root).as_posix()
            if name.startswith(".") or name == "__pycache__" or any(rel == e.rstrip("/") or rel.startswith(e.rstrip("/") + "/") for e in excludes):
                continue
            if (here / name).is_symlink():
                raise FileRefused(f"{shown(rel)} in the project is a symbolic link", "replace the link with the files, or list it in run.working_dir_excludes")
            kept.append(name)
        dirs[:] = kept
        for name in names:
            seen += 1
            if seen > MAX_PROJECT_ENTRIES:
                raise FileRefused(f"holds more than {MAX_PROJECT_ENTRIES:,} files", "exclude data and build output with run.working_dir_excludes")
            path = here / name
            rel = path.relative_to(root).as_posix()
            if any(rel == e or rel.startswith(e.rstrip("/") + "/") or path.match(e) for e in excludes):
                continue
            if any(part.startswith(".") or part == "__pycache__" for part in Path(rel).parts):
                continue
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise FileRefused(f"{shown(rel)} in the project is a symbolic link", "replace the link with the file, or list it in run.working_dir_excludes")
            if not stat.S_ISREG(mode):
                raise FileRefused(f"{shown(rel)} in the project is not a regular file", "remove it or list it in run.working_dir_excludes")
            files.append((tuple(rel.split("/")), path))
    buffer = io.BytesIO()
    budget = MAX_PROJECT_READ_BYTES
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for parts, path in sorted(files):
            try:
                data = read_regular_file(path, budget)
            except FileRefused as refused:
                if refused.size is not None:
                    raise FileRefused(f"holds more than {MAX_PROJECT_READ_BYTES:,} bytes of files", "exclude data and build output with run.working_dir_excludes") from None
                raise FileRefused(f"{shown('/'.join(parts))} in the project: {refused.message}", refused.hint) from None
            budget -= len(data)
            info = tarfile.TarInfo("/".join(parts))
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def payload_init(payload: Payload, image: str) -> dict[str, Any]:
    if payload.is_archive:
        script = f'printf %s "$TAU_PAYLOAD" | base64 -d | tar -xz -C {SCRIPT_DIR}'
    else:
        target = posixpath.join(SCRIPT_DIR, payload.entry)
        script = f'mkdir -p {posixpath.dirname(target)} && printf %s "$TAU_PAYLOAD" | base64 -d > {target} && chmod +x {target}'
    return {
        "name": "tau-payload",
        "image": image,
        "command": ["sh", "-c", script],
        "env": [{"name": "TAU_PAYLOAD", "value": payload.data_b64}],
        "volumeMounts": [{"name": "tau-payload", "mountPath": SCRIPT_DIR}],
    }


def script_command(entry: str) -> list[str]:
    path = posixpath.join(SCRIPT_DIR, entry)
    if entry.endswith(".py"):
        return ["python", path]
    if entry.endswith(".sh"):
        return ["sh", path]
    return [path]
