"""Verify an evidence bundle without extracting it: every member is read in memory with limits,
hashed and compared with ``MANIFEST.json``.

The result names each tampered file: ``edited`` (its SHA-256 or size differs), ``missing`` (listed,
not in the archive) or ``extra`` (in the archive, not listed).  A hostile or broken archive is
refused with a reason, never unpacked and never a traceback: absolute or ``..`` paths, links,
devices, a member named twice, a member or a whole archive over the size limits, too many
members, or a file that is not a gzip'd tar.  The manifest proves integrity, not authorship: anyone
who rewrites a file can rewrite the manifest too, so ``verify`` prints the manifest's SHA-256 to be
kept elsewhere (as the audit log prints its head).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tau_tui.core.operations.evidence.bundle import BUNDLE_FORMAT, MANIFEST_NAME

#: Limits for reading a bundle: a record's log is at most 8 MiB, so these leave room and stop bombs.
MAX_MEMBERS = 1000
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_BUNDLE_BYTES = 128 * 1024 * 1024
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_CHUNK = 1024 * 1024
#: Room for tar headers on top of the members' data.
_HEADER_ALLOWANCE = 16 * 1024 * 1024


@dataclass(frozen=True)
class FileProblem:
    path: str
    problem: str  # edited, missing, extra
    detail: str = ""

    def line(self) -> str:
        return f"{self.problem}: {self.path}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class BundleVerification:
    path: Path
    #: Why the bundle could not be checked at all (refused or unreadable), or "".
    refused: str = ""
    problems: list[FileProblem] = field(default_factory=list)
    files_checked: int = 0
    manifest_sha256: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.refused and not self.problems

    def lines(self) -> list[str]:
        if self.refused:
            return [f"{self.path}: not verified: {self.refused}"]
        if self.problems:
            return [f"{self.path}: FAILED: {len(self.problems)} file(s) do not match the manifest"] + \
                [f"  {p.line()}" for p in self.problems]
        run = f"{self.record.get('namespace', '?')}/{self.record.get('name', '?')}"
        return [f"{self.path}: OK: {self.files_checked} files match the manifest (run {run}, "
                f"{self.record.get('outcome', '?')}); manifest sha256 {self.manifest_sha256}"]


class _Refused(Exception):
    pass


def _member_path(name: str) -> str:
    """The member's path, or a refusal for one that could escape an extraction directory."""
    if not name or "\x00" in name or "\\" in name:
        raise _Refused(f"member {name!r} has an unsafe name")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise _Refused(f"member {name!r} has an absolute or '..' path (path traversal)")
    clean = "/".join(part for part in path.parts if part not in ("", "."))
    if not clean:
        raise _Refused(f"member {name!r} has an empty path")
    return clean


class _Bounded:
    """The decompressed archive, cut off with a refusal past ``limit`` bytes: headers (a PAX
    header can claim any size) and data alike count, so a gzip bomb stops early."""

    def __init__(self, stream: gzip.GzipFile, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.seen = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(min(size, _CHUNK) if size is not None and size >= 0 else _CHUNK)
        self.seen += len(data)
        if self.seen > self.limit:
            raise _Refused(f"the archive unpacks to more than {self.limit} bytes")
        return data


def _read_members(path: Path) -> tuple[dict[str, bytes | str], int]:
    """Regular files by path: their bytes for the manifest, else their SHA-256 and size as text
    ``"sha256:size"`` (hashed while read, never kept whole).  Second value: the member count."""
    contents: dict[str, bytes | str] = {}
    total = 0
    count = 0
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped, \
            tarfile.open(fileobj=_Bounded(unzipped, MAX_TOTAL_BYTES + _HEADER_ALLOWANCE), mode="r|") as tar:  # type: ignore[call-overload]  # stream mode only reads; typeshed's _Fileobj also asks for write, seek and tell
        while True:
            member = tar.next()
            if member is None:
                break
            count += 1
            if count > MAX_MEMBERS:
                raise _Refused(f"more than {MAX_MEMBERS} members")
            name = _member_path(member.name)
            if member.isdir():
                continue
            if not member.isreg():
                what = "a symbolic link" if member.issym() else "a hard link" if member.islnk() else "not a regular file"
                raise _Refused(f"member {name!r} is {what}; a bundle holds regular files only")
            if name in contents:
                raise _Refused(f"member {name!r} appears twice")
            if member.size > MAX_MEMBER_BYTES:
                raise _Refused(f"member {name!r} is {member.size} bytes, over the {MAX_MEMBER_BYTES} byte limit")
            total += member.size
            if total > MAX_TOTAL_BYTES:
                raise _Refused(f"the members add up to more than {MAX_TOTAL_BYTES} bytes")
            handle = tar.extractfile(member)
            if handle is None:
                raise _Refused(f"member {name!r} cannot be read")
            if name == MANIFEST_NAME:
                if member.size > MAX_MANIFEST_BYTES:
                    raise _Refused(f"{MANIFEST_NAME} is over {MAX_MANIFEST_BYTES} bytes")
                contents[name] = handle.read(MAX_MANIFEST_BYTES + 1)
                continue
            digest = hashlib.sha256()
            size = 0
            while chunk := handle.read(_CHUNK):
                size += len(chunk)
                digest.update(chunk)
            contents[name] = f"{digest.hexdigest()}:{size}"
    return contents, count


def _manifest(raw: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise _Refused(f"{MANIFEST_NAME} is not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT or not isinstance(doc.get("files"), list):
        raise _Refused(f"{MANIFEST_NAME} is not a {BUNDLE_FORMAT} manifest")
    for entry in doc["files"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("sha256"), str)
                and isinstance(entry.get("size"), int)):
            raise _Refused(f"{MANIFEST_NAME} has a file entry without path, size and sha256: {str(entry)[:120]}")
    return doc


def verify_bundle(path: Path | str) -> BundleVerification:
    result = BundleVerification(Path(path))
    try:
        size = result.path.stat().st_size
        if not result.path.is_file():
            raise _Refused("not a regular file")
        if size > MAX_BUNDLE_BYTES:
            raise _Refused(f"the file is {size} bytes, over the {MAX_BUNDLE_BYTES} byte limit")
        contents, _ = _read_members(result.path)
        raw_manifest = contents.pop(MANIFEST_NAME, None)
        if not isinstance(raw_manifest, bytes):
            raise _Refused(f"no {MANIFEST_NAME} in the archive; this is not an evidence bundle")
        doc = _manifest(raw_manifest)
    except _Refused as refusal:
        result.refused = str(refusal)
        return result
    except FileNotFoundError:
        result.refused = "no such file"
        return result
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        result.refused = f"not a readable .tar.gz ({type(err).__name__}: {err})"
        return result
    result.manifest_sha256 = hashlib.sha256(raw_manifest).hexdigest()
    record = doc.get("record")
    result.record = record if isinstance(record, dict) else {}
    listed = {}
    for entry in doc["files"]:
        try:
            listed[_member_path(entry["path"])] = entry
        except _Refused as refusal:
            result.refused = f"{MANIFEST_NAME}: {refusal}"
            return result
    for name, entry in sorted(listed.items()):
        found = contents.get(name)
        if found is None:
            result.problems.append(FileProblem(name, "missing", "listed in the manifest, not in the archive"))
            continue
        digest, _, got_size = str(found).partition(":")
        result.files_checked += 1
        if digest != entry["sha256"] or int(got_size) != entry["size"]:
            result.problems.append(FileProblem(name, "edited", f"sha256 {digest[:12]}…, the manifest says {entry['sha256'][:12]}…"))
    for name in sorted(set(contents) - set(listed)):
        result.problems.append(FileProblem(name, "extra", "in the archive, not in the manifest"))
    return result
