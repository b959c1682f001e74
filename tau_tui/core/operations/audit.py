"""Local audit log of every mutation the app and the CLI attempt: append-only,
hash-chained JSON lines.

Each attempt leaves several entries (``phase``): ``preview`` (the server
dry-run and its answer), ``declined`` (the user said no), ``refused`` (read-only
mode), ``intent`` (written *before* the call) and ``outcome`` (after it).
Every entry carries when, the local login, the Kubernetes identity the API
server reported (SelfSubjectReview), the context and namespace, the verb, the
target and a message.  No manifests, environment values or credentials are
written: messages go through the app's one redactor (:mod:`redaction`).

Tamper evidence: each line holds ``prev`` (the previous line's ``hash``; the
first line chains from 64 zeros), ``key`` (the fingerprint of the user's
Ed25519 signing key, :mod:`audit_keys`), ``hash`` = SHA-256 over ``prev`` and
the canonical JSON of the entry without ``hash`` and ``sig``, and ``sig``, the
key's signature of ``hash``.  After each write the log's head (last hash and
entry count) is kept in the key store (the OS keyring), so :func:`verify` sees
a truncated end or an emptied file as well as an edited, inserted, deleted,
re-hashed or re-signed line, and names the first bad line; nothing is skipped
silently.  A log written before signing says "unsigned: cannot prove" and fails.
Writers hold an exclusive ``flock`` so the app and CLI runs interleave whole
lines with an unbroken chain.  The head of the entry being written is recorded (as pending)
before its line, so a key store that fails afterwards leaves a log that still verifies.  The log
is opened without following links (``O_NOFOLLOW``): a link put in its place is refused by
writers and fails verify, and the head is looked up by the log's own path, never the link's target.

The file lives in the XDG state directory (``$XDG_STATE_HOME/tau-tui/audit.jsonl``,
default ``~/.local/state``), mode 0600 in a 0700 directory.
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from tau_tui.core.operations.audit_keys import Head, KnownKey, SigningKeys, retirement_problem, signature_valid
from tau_tui.core.operations.private_dirs import private_directory
from tau_tui.core.operations.redaction import redact, redact_value

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

APP_DIR = "tau-tui"
AUDIT_FILE = "audit.jsonl"
GENESIS = "0" * 64
PHASES = ("preview", "declined", "refused", "intent", "outcome")
#: The verb and target of the entry that records a key rotation (the target ends with the old key).
ROTATE_VERB = "rotate-key"
ROTATE_TARGET = "audit signing key"
#: The verb of a new log's first entry after the old one was moved aside (`audit start-over`).
START_OVER_VERB = "start-over"
MESSAGE_LIMIT = 2000
#: Opens that never follow a link in the log's place, nor block on a FIFO.
_OPEN_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / APP_DIR


def default_audit_path() -> Path:
    return state_dir() / AUDIT_FILE


def keys_dir() -> Path:
    """The signing key's lock file, and its store when there is no usable OS keyring."""
    return state_dir() / "keys"


@dataclass(frozen=True)
class AuditEntry:
    at: str
    user: str
    context: str | None
    namespace: str | None
    verb: str  # cancel, hold, hold-and-drain, resume, cordon, uncordon, drain, submit, save
    target: str  # "Job team-a/train" / "Node h100-node-1"
    dry_run: bool
    ok: bool | None  # None for an intent: the call has not happened yet
    message: str
    readonly_blocked: bool = False
    phase: str = "outcome"
    source: str = "app"  # app or cli
    identity: dict[str, Any] | None = None  # SelfSubjectReview status.userInfo
    prev: str = GENESIS
    key: str = ""  # fingerprint of the signing key
    hash: str = ""
    sig: str = ""  # Ed25519 signature of ``hash`` (base64)


def entry_hash(record: dict[str, Any]) -> str:
    """SHA-256 over ``prev`` and the canonical JSON of the record without ``hash`` and ``sig``."""
    body = {k: v for k, v in record.items() if k not in ("hash", "sig")}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256((str(record.get("prev", "")) + "\n" + canonical).encode("utf-8")).hexdigest()


def _last_line(fd: int) -> bytes:
    """The last non-empty line of the open file (read backwards in blocks)."""
    end = os.lseek(fd, 0, os.SEEK_END)
    tail = b""
    position = end
    while position > 0:
        step = min(4096, position)
        position -= step
        tail = os.pread(fd, step, position) + tail
        stripped = tail.rstrip(b"\n")
        if b"\n" in stripped:
            return stripped.rsplit(b"\n", 1)[1]
    return tail.rstrip(b"\n")


def _chain_head(last: bytes) -> str:
    """The ``prev`` for the next entry: the last line's hash (a broken line chains
    from the hash of its bytes, so the chain goes on and verify still names it)."""
    if not last.strip():
        return GENESIS
    try:
        record = json.loads(last)
        value = record.get("hash") if isinstance(record, dict) else None
        if isinstance(value, str) and len(value) == 64:
            return value
    except ValueError:
        pass
    return hashlib.sha256(last).hexdigest()


class AuditLogReplaced(OSError):
    """The log's path is a symbolic link or not a regular file: it was replaced; nothing is written."""


def _link_problem(path: Path) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        return "is not a regular file: the audit log was replaced"
    # The whole target (a link's is at most PATH_MAX): the user needs it to find what replaced the log.
    return (f"is a symbolic link (to {_printable(target, limit=4096)}), not the audit log: it was replaced "
            "(tau-tui never writes through a link)")


def open_log(path: Path, flags: int) -> int:
    """The log's file descriptor, never through a link; :class:`AuditLogReplaced` for a link or
    anything but a regular file (a FIFO is opened without blocking, then refused)."""
    try:
        fd = os.open(path, flags | _OPEN_FLAGS | os.O_NONBLOCK, 0o600)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise AuditLogReplaced(errno.ELOOP, f"{path} {_link_problem(path)}") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise AuditLogReplaced(errno.EINVAL, f"{path} {_link_problem(path)}")
    os.set_blocking(fd, True)
    return fd


class AuditWhere(TypedDict, total=False):
    """Where a mutation went and who made it: keyword arguments of :meth:`AuditLog.append`,
    gathered once and passed to both the intent and the outcome entry."""

    context: str | None
    namespace: str | None
    identity: dict[str, Any] | None


class AuditLog:
    """Thread- and process-safe appender; each entry is fsync'd before returning."""

    def __init__(
        self,
        path: Path | str | None = None,
        clock: Callable[[], datetime] | None = None,
        source: str = "app",
        keys: SigningKeys | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_audit_path()
        self._lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self.source = source
        self._keys = keys

    @property
    def keys(self) -> SigningKeys:
        """The signing keys (the store is opened at the first entry, not before)."""
        if self._keys is None:
            self._keys = SigningKeys(keys_dir())
        return self._keys

    def append(
        self,
        verb: str,
        target: str,
        *,
        ok: bool | None,
        message: str,
        dry_run: bool = False,
        context: str | None = None,
        namespace: str | None = None,
        readonly_blocked: bool = False,
        phase: str = "outcome",
        identity: dict[str, Any] | None = None,
    ) -> AuditEntry:
        if phase not in PHASES:
            raise ValueError(f"audit phase {phase!r} is not one of {', '.join(PHASES)}")
        record = asdict(AuditEntry(
            at=self._clock().isoformat(),
            user=_user(),
            context=context,
            namespace=namespace,
            verb=verb,
            target=redact(target),
            dry_run=dry_run,
            ok=ok,
            message=redact(message)[:MESSAGE_LIMIT],
            readonly_blocked=readonly_blocked,
            phase=phase,
            source=self.source,
            identity=redact_value(identity) if identity else None,
        ))
        self._write(record)
        return AuditEntry(**record)

    def rotate_key(self, compromised: bool = False) -> tuple[str, str]:
        """Replace the signing key; the change is itself an entry, signed by the new key and
        naming the old one, retired at the entry's time: it verifies only what it signed before,
        and nothing at all when ``compromised``.  Returns both fingerprints."""
        def rotate(record: dict[str, Any]) -> None:
            old, new = self.keys.rotate(at=record["at"], compromised=compromised)
            record["target"] = f"{ROTATE_TARGET} {old.fingerprint}"
            record["message"] = (f"signing key rotated from {old.fingerprint} to {new.fingerprint} at {record['at']}"
                                 + ("; the old key is compromised: it proves nothing any more" if compromised else
                                    f"; the old key proves only what it signed before {record['at']}"))

        record = asdict(AuditEntry(
            at=self._clock().isoformat(), user=_user(), context=None, namespace=None, verb=ROTATE_VERB,
            target="", dry_run=False, ok=True, message="", source=self.source))
        self._write(record, before=rotate)
        return record["target"].rsplit(" ", 1)[1], record["key"]

    def _write(self, record: dict[str, Any], before: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Sign and append ``record`` under the file lock, then record the new head."""
        with self._lock:
            private_directory(self.path.parent)
            fd = open_log(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                if before is not None:
                    before(record)
                signer = self.keys.signer()
                last = _last_line(fd)
                record["prev"] = _chain_head(last)
                record["key"] = signer.fingerprint
                record["hash"] = entry_hash(record)
                record["sig"] = signer.sign(record["hash"].encode("ascii"))
                count, note = self._next_head(fd, record["prev"], last)
                line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
                # The head first, as pending: a key store that fails after the line leaves a log
                # that ends at its pending head (verify accepts it), never one that reads as cut.
                self.keys.set_head(self.path, Head(record["prev"], count - 1, note, record["hash"], count))
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
                self.keys.set_head(self.path, Head(record["hash"], count, note))
            finally:
                os.close(fd)  # closing releases the lock

    def _next_head(self, fd: int, prev: str, last: bytes) -> tuple[int, str]:
        """The entry count after this write, and the head's note: the log must end at the
        recorded head; when it does not, the new head says so rather than hiding the cut."""
        head = self.keys.head(self.path)
        if head is not None and head.hash == prev:
            return head.count + 1, head.note
        if head is not None and head.pending_hash and head.pending_hash == prev:  # its head write had failed
            return head.pending_count + 1, head.note
        count = 0
        if last.strip():
            with open(os.dup(fd), "rb", closefd=True) as handle:
                handle.seek(0)
                count = sum(1 for raw in handle if raw.strip())
        if head is None:  # the first signed entry of this file
            return count + 1, ""
        return count + 1, head.note or (
            f"when entry {count + 1} was written the log did not end at the recorded head ({head.count} "
            f"entries ending at {head.hash}): it had been cut, emptied or rewritten")

    def start_over(self) -> Head | None:
        """Begin a new log at this path after the old one was moved aside (the file must be absent
        or empty); the new log's first entry names the old head.  Returns the old head."""
        if os.path.islink(self.path):
            raise FileExistsError(f"{self.path} {_link_problem(self.path)}; move it aside first")
        if self.path.exists() and self.path.stat().st_size:
            raise FileExistsError(f"{self.path} is not empty; move it aside first")
        old = self.keys.head(self.path)
        self.keys.set_head(self.path, Head(GENESIS, 0))
        ended = f"{old.count} entries ending at {old.hash}" if old else "no recorded head"
        noted = f"; its head noted: {old.note}" if old is not None and old.note else ""  # kept, not erased
        self.append(START_OVER_VERB, f"audit log {self.path}", ok=True,
                    message=f"new log; the previous log at this path was moved aside ({ended}){noted}")
        return old

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry in order.  A line that is not a JSON object raises
        :class:`AuditCorrupt` naming it: a bad line is never skipped silently."""
        try:
            handle = open(self.path, encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
                if not isinstance(record, dict):
                    raise AuditCorrupt(self.path, number, "not a JSON object")
                yield record


class AuditCorrupt(Exception):
    def __init__(self, path: Path | str, line: int, reason: str):
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass
class VerifyResult:
    path: Path
    entries: int = 0
    head: str = GENESIS
    bad_line: int | None = None
    reason: str = ""
    problems: list[str] = field(default_factory=list)
    signed: int = 0
    unsigned: int = 0
    #: Fingerprints of the keys that signed the entries, in order of first use.
    keys: list[str] = field(default_factory=list)
    #: Where the head and the public keys were read from, in words.
    store: str = ""
    #: Why the trust store proves less than the OS keyring would ("": it is the keyring).
    anchor_warning: str = ""
    #: What else the reader should know about an intact log (a head recorded late).
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.bad_line is None

    def fail(self, line: int, reason: str) -> VerifyResult:
        self.bad_line, self.reason = line, reason
        return self

    def summary(self) -> str:
        if not self.ok:
            return f"{self.path}:{self.bad_line}: {self.reason}"
        notes = "".join(f"; {note}" for note in self.notes)
        if not self.entries:
            return f"{self.path}: 0 entries, as the head recorded in {self.store} says{notes}"
        return (f"{self.path}: {self.entries} entries, chain intact, signed by {', '.join(self.keys)}; "
                f"head {self.head} matches the head recorded in {self.store}{notes}")


def verify(path: Path | str | None = None, keys: SigningKeys | None = None) -> VerifyResult:
    """Re-compute the hash chain, check each signature against the user's public keys and the
    end against the recorded head; the result names the first bad line.  Raises ``OSError``
    when the file cannot be read and no head says it should exist."""
    path = Path(path) if path is not None else default_audit_path()
    keys = keys if keys is not None else SigningKeys(keys_dir())
    result = VerifyResult(path)
    try:
        handle = os.fdopen(open_log(path, os.O_RDONLY), "rb")
    except AuditLogReplaced:
        return result.fail(1, _link_problem(path))
    except FileNotFoundError:
        recorded = keys.head(path)
        if recorded is None:
            raise
        result.store = keys.store.where
        return result.fail(1, f"the file is gone, but {result.store} records {recorded.count} entries ending "
                              f"at {recorded.hash}: the log was deleted or moved")
    with handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)  # no writer between the last line and its head
        result.store, result.anchor_warning = keys.store.where, keys.store.anchor_warning
        known, recorded = keys.known(), keys.head(path)
        hash_at_recorded = _check_lines(handle, result, known, recorded.count if recorded else 0)
    if not result.ok:
        return result
    if recorded is not None and recorded.pending_hash:
        recorded = _settle_pending(result, recorded)
        hash_at_recorded = result.head if result.entries == recorded.count else hash_at_recorded
    if recorded is None:
        if result.signed:
            return result.fail(result.entries, f"no head recorded for this file in {result.store}: its end cannot "
                                               "be proven (the file was copied here, or its head was removed)")
        if not result.entries:
            return result.fail(1, f"empty, and no head is recorded for this file in {result.store}: nothing proves "
                                  "what it held (tau-tui never leaves its log empty without a head; it was replaced "
                                  "or emptied)")
    elif result.entries < recorded.count:
        what = "emptied" if not result.entries else "truncated"
        return result.fail(result.entries + 1, f"{what}: {result.store} records {recorded.count} entries ending at "
                                               f"{recorded.hash}; the file has {result.entries}")
    elif hash_at_recorded != recorded.hash:
        return result.fail(recorded.count, f"the recorded head ({recorded.count} entries ending at {recorded.hash}) "
                                           "is not this line: the end of the log was rewritten")
    elif result.entries > recorded.count:
        return result.fail(recorded.count + 1, f"written after the recorded head ({recorded.count} entries): "
                                               "appended without updating the key store")
    if recorded is not None and recorded.note:
        return result.fail(result.entries, f"{recorded.note} (noted in {result.store}); if you moved the log "
                                           "aside yourself, run `tau-tui audit start-over` for a new one")
    if result.unsigned:
        if not result.signed:
            return result.fail(1, f"unsigned: cannot prove the {result.unsigned} entries were not rewritten "
                                  "(written before entries were signed); move the file aside to start a signed log")
        return result.fail(1, f"unsigned: cannot prove lines 1-{result.unsigned} (written before entries were "
                              f"signed); lines {result.unsigned + 1}-{result.entries} are signed and intact")
    return result


def _settle_pending(result: VerifyResult, recorded: Head) -> Head:
    """The head to check against when the last write recorded a pending entry: the log may end at
    it (the key store failed after the line was written) or just before it (the line's write failed,
    so the change was not made, or the line was cut); the summary says which."""
    if result.entries == recorded.pending_count and result.head == recorded.pending_hash:
        result.notes.append(f"the head of entry {recorded.pending_count} was recorded as pending (the key store "
                            "failed after its line was written)")
        return Head(recorded.pending_hash, recorded.pending_count, recorded.note)
    if result.entries == recorded.count:
        result.notes.append(f"entry {recorded.pending_count} was being written when the head was last recorded and is "
                            "not in the file: its write failed (the change it announced was not made), or it was cut")
    return Head(recorded.hash, recorded.count, recorded.note)


def _check_lines(handle: Any, result: VerifyResult, known: dict[str, KnownKey], recorded_count: int) -> str | None:
    """Check each line in turn, stopping at the first bad one (``result.fail``).  Returns the
    hash of line ``recorded_count`` (to compare with the recorded head), or None."""
    prev = GENESIS
    retired: set[str] = set()
    hash_at_recorded = GENESIS if recorded_count == 0 else None
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            result.fail(number, "empty line (entries are never blank)")
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("hash"), str):
            result.fail(number, "not an audit entry (not JSON with a hash)")
            return None
        if record.get("prev") != prev:
            result.fail(number, "chain broken: prev does not match the previous line's hash "
                                "(a line before it was deleted, inserted or edited)")
            return None
        if entry_hash(record) != record["hash"]:
            result.fail(number, "hash mismatch: this line was edited")
            return None
        if "sig" not in record and "key" not in record:
            if result.signed:
                result.fail(number, "unsigned entry after signed ones: it was inserted, or its signature removed")
                return None
            result.unsigned += 1
        else:
            problem = _signature_problem(record, known, retired)
            if problem:
                result.fail(number, problem)
                return None
            result.signed += 1
            if record["key"] not in result.keys:
                result.keys.append(record["key"])
            target = record.get("target")
            if record.get("verb") == ROTATE_VERB and isinstance(target, str) and target.startswith(ROTATE_TARGET):
                retired.add(target.rsplit(" ", 1)[-1])
        prev = record["hash"]
        result.entries += 1
        if number == recorded_count:
            hash_at_recorded = prev
    result.head = prev
    return hash_at_recorded


def _signature_problem(record: dict[str, Any], known: dict[str, KnownKey], retired: set[str]) -> str:
    """Why the entry's signature does not prove it, or ""."""
    fp = record.get("key")
    if not isinstance(fp, str) or not fp:
        return "signed entry without a key fingerprint"
    key = known.get(fp)
    if key is None:
        return (f"signed by key {_printable(fp)}, which is not one of your keys: the line was re-signed by "
                "someone else, or your key store was replaced")
    if fp in retired and not key.compromised:
        return f"signed by key {fp} after the entry that retired it"
    problem = retirement_problem(key, record.get("at"))
    if problem:
        return problem + ("; move this log aside and run `tau-tui audit start-over`" if key.compromised else "")
    if not signature_valid(key.public_raw, str(record["hash"]).encode("utf-8"), record.get("sig")):
        return "signature does not match: this line was rewritten (only the key's holder can sign)"
    return ""


def _printable(text: str, limit: int = 80) -> str:
    return repr(text[:limit]) if not text.isprintable() or len(text) > limit else text


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())
