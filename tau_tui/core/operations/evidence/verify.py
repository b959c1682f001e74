"""Verify an evidence bundle without extracting it: every member is read in memory with limits,
hashed and compared with ``MANIFEST.json``.

The result names each tampered file: ``edited`` (its SHA-256 or size differs), ``missing`` (listed,
not in the archive) or ``extra`` (in the archive, not listed).  A hostile or broken archive is
refused with a reason, never unpacked and never a traceback: absolute or ``..`` paths, links,
devices, a member named twice, a member or a whole archive over the size limits, too many
members, or a file that is not a gzip'd tar.  The whole archive is read: after the last member
only zero padding may follow (``tar -xzf`` reads past a bad header and would extract what follows
it; verify refuses such an archive rather than vouch for fewer members than tar extracts).  The
manifest is signed (``MANIFEST.sig``,
``signature.py``): a recomputed manifest, a file dropped with its entry, or another signer fails,
and an unsigned (v1) bundle says "unsigned: cannot prove" and fails.  Every file the manifest's
``required`` list and :data:`REQUIRED_FILES` name must be present.  The record names its cluster
(``cluster_identity.py``); a record of the simulated cluster verifies only with ``demo=True``,
against the demo's own key, and a real one only without it.
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

from tau_tui.core.operations.audit import keys_dir
from tau_tui.core.operations.audit_keys import KnownKey, SigningKeys
from tau_tui.core.operations.demo_trust import demo_keys
from tau_tui.core.operations.evidence.bundle import BUNDLE_FORMAT, BUNDLE_FORMAT_V1, MANIFEST_NAME, REQUIRED_FILES
from tau_tui.core.operations.evidence.cluster_identity import KUBE_SYSTEM
from tau_tui.core.operations.evidence.signature import (
    MAX_SIGNATURE_BYTES,
    SIGNATURE_NAME,
    SignatureCheck,
    check_signature,
)

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
    signature: SignatureCheck = field(default_factory=SignatureCheck)
    #: Why the record's cluster is not what was asked for (a demo bundle without --demo), or "".
    cluster_problem: str = ""
    #: Why the trust store proves less than the OS keyring would ("" for the keyring or --key).
    anchor_warning: str = ""

    @property
    def ok(self) -> bool:
        return not self.refused and not self.problems and not self.signature.problem and not self.cluster_problem

    def cluster(self) -> str:
        """The cluster the record says it is of, in words."""
        server, uid = self.record.get("cluster_server"), self.record.get("cluster_uid")
        if not server:
            return "of an unnamed cluster (captured before records named their cluster)"
        kind = "of the SIMULATED (demo) cluster" if self.record.get("simulated") else "of the cluster at"
        return f"{kind} {server} ({KUBE_SYSTEM} uid {uid or 'unknown'})"

    def lines(self) -> list[str]:
        if self.refused:
            return [f"{self.path}: not verified: {self.refused}"]
        lines = [f"{self.path}: FAILED: {self.cluster_problem}"] if self.cluster_problem else []
        if self.signature.problem:
            lines.append(f"{self.path}: {'' if self.signature.unsigned else 'FAILED: '}{self.signature.problem}")
        if self.problems:
            lines += [f"{self.path}: FAILED: {len(self.problems)} file(s) do not match the manifest"] + \
                [f"  {p.line()}" for p in self.problems]
        if lines:
            return lines
        run = f"{self.record.get('namespace', '?')}/{self.record.get('name', '?')}"
        return [f"{self.path}: OK: {self.files_checked} files match the manifest (run {run}, "
                f"{self.record.get('outcome', '?')}, {self.cluster()}); signed by {self.signature.signed_by} "
                f"({self.signature.trusted_as}); manifest sha256 {self.manifest_sha256}"]


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
    ``"sha256:size"`` (hashed while read, never kept whole).  Second value: where the archive's end
    (its end-of-archive blocks, or the first header that is not one) begins in the unpacked stream."""
    contents: dict[str, bytes | str] = {}
    total = 0
    count = 0
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped, \
            tarfile.open(fileobj=_Bounded(unzipped, MAX_TOTAL_BYTES + _HEADER_ALLOWANCE), mode="r|") as tar:  # type: ignore[call-overload]  # stream mode only reads; typeshed's _Fileobj also asks for write, seek and tell
        while True:
            member = tar.next()
            if member is None:
                return contents, tar.offset
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
            if name in (MANIFEST_NAME, SIGNATURE_NAME):
                limit = MAX_MANIFEST_BYTES if name == MANIFEST_NAME else MAX_SIGNATURE_BYTES
                if member.size > limit:
                    raise _Refused(f"{name} is over {limit} bytes")
                contents[name] = handle.read(limit + 1)
                continue
            digest = hashlib.sha256()
            size = 0
            while chunk := handle.read(_CHUNK):
                size += len(chunk)
                digest.update(chunk)
            contents[name] = f"{digest.hexdigest()}:{size}"
    return contents, tar.offset  # pragma: no cover - the loop returns at the archive's end


def _check_the_end(path: Path, end: int) -> None:
    """Refuse anything after the archive's end but zero padding: tar reads past a header it cannot
    parse (and past a lone zero block), so bytes there could be members that tar extracts."""
    limit = MAX_TOTAL_BYTES + _HEADER_ALLOWANCE
    position = 0
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
        while chunk := unzipped.read(_CHUNK):
            chunk_start, position = position, position + len(chunk)
            if position > limit:
                raise _Refused(f"the archive unpacks to more than {limit} bytes")
            skip = max(0, end - chunk_start)
            tail = chunk[skip:]
            if tail.strip(b"\0"):
                offset = chunk_start + skip + len(tail) - len(tail.lstrip(b"\0"))
                raise _Refused(f"data after the archive's last member at byte {offset} of the unpacked tar (not zero "
                               "padding: a header verify cannot read, and tar would read past it); the archive was "
                               "altered")

def _manifest(raw: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise _Refused(f"{MANIFEST_NAME} is not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") not in (BUNDLE_FORMAT, BUNDLE_FORMAT_V1) \
            or not isinstance(doc.get("files"), list):
        raise _Refused(f"{MANIFEST_NAME} is not a {BUNDLE_FORMAT_V1} manifest nor a {BUNDLE_FORMAT} one")
    required = doc.get("required", [])
    if not isinstance(required, list) or not all(isinstance(p, str) for p in required):
        raise _Refused(f"{MANIFEST_NAME} has a 'required' that is not a list of paths")
    for entry in doc["files"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("sha256"), str)
                and isinstance(entry.get("size"), int)):
            raise _Refused(f"{MANIFEST_NAME} has a file entry without path, size and sha256: {str(entry)[:120]}")
    return doc


def verify_bundle(path: Path | str, key: str | None = None, keys: SigningKeys | None = None,
                  demo: bool = False) -> BundleVerification:
    """Check the bundle at ``path``: its signature (by ``key``, a fingerprint or public key, else by
    one of the user's own keys in ``keys``, default the user's key store, or the demo's own key
    with ``demo``), every file, and that its record is of a real cluster (of the simulated one with
    ``demo``)."""
    result = BundleVerification(Path(path))
    try:
        size = result.path.stat().st_size
        if not result.path.is_file():
            raise _Refused("not a regular file")
        if size > MAX_BUNDLE_BYTES:
            raise _Refused(f"the file is {size} bytes, over the {MAX_BUNDLE_BYTES} byte limit")
        contents, end = _read_members(result.path)
        _check_the_end(result.path, end)
        raw_manifest = contents.pop(MANIFEST_NAME, None)
        raw_signature = contents.pop(SIGNATURE_NAME, None)
        if not isinstance(raw_manifest, bytes):
            raise _Refused(f"no {MANIFEST_NAME} in the archive; this is not an evidence bundle")
        doc = _manifest(raw_manifest)
        if doc["format"] == BUNDLE_FORMAT and raw_signature is None:
            raise _Refused(f"a signed ({BUNDLE_FORMAT}) manifest without {SIGNATURE_NAME}: the signature was removed")
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
    must_hold = set(REQUIRED_FILES) | {str(p) for p in doc.get("required", [])}
    for name in sorted(must_hold - set(listed)):
        result.problems.append(FileProblem(name, "missing", "a bundle must hold it; the manifest does not list it"))
    _check_signer(result, raw_manifest, raw_signature if isinstance(raw_signature, bytes) else None, doc, key,
                  keys if keys is not None else demo_keys() if demo else SigningKeys(keys_dir()), demo)
    return result


def _check_signer(result: BundleVerification, raw_manifest: bytes, raw_signature: bytes | None, doc: dict[str, Any],
                  key: str | None, keys: SigningKeys, demo: bool) -> None:
    simulated = result.record.get("simulated") is True
    if simulated and not demo:
        result.cluster_problem = ("a bundle of the simulated (demo) cluster: it proves nothing about a real cluster "
                                  "(`tau-tui evidence verify --demo` checks it against the demo's own key)")
    elif demo and not simulated:
        result.cluster_problem = "not a bundle of the simulated (demo) cluster: verify it without --demo"
    known: dict[str, KnownKey] | None
    try:
        known = keys.known()
        anchor = keys.store.anchor_warning
    except OSError as err:  # the key store (keyring) could not be read, or there is none
        known, anchor = None, ""
        if key is None:
            result.signature = SignatureCheck(problem=f"cannot read your public keys to check the signer ({err})")
            return
    result.signature = check_signature(raw_signature, raw_manifest, doc, key, known, result.record.get("captured_at"))
    result.anchor_warning = anchor if key is None else ""
