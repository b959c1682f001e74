"""Local audit log of every mutation the app and the CLI attempt: append-only,
hash-chained JSON lines.

Each attempt leaves several entries (``phase``): ``preview`` (the server
dry-run and its answer), ``declined`` (the user said no), ``refused`` (read-only
mode), ``intent`` (written *before* the call) and ``outcome`` (after it).
Every entry carries when, the local login, the Kubernetes identity the API
server reported (SelfSubjectReview), the context and namespace, the verb, the
target and a message.  No manifests, environment values or credentials are
written: messages are redacted (bearer tokens, ``token``/``password``/
``secret``-like fields, private keys, ``client-key-data``).

Tamper evidence: each line holds ``prev`` (the previous line's ``hash``; the
first line chains from 64 zeros) and ``hash`` = SHA-256 over ``prev`` and the
canonical JSON of the entry without ``hash``.  :func:`verify` re-computes the
chain and names the first line that was edited, inserted, deleted or is not
JSON; nothing is skipped silently.  Truncating the *end* of the file cannot be
seen from the file alone: ``verify`` prints the head hash and count so they
can be kept elsewhere.  Writers hold an exclusive ``flock`` so the app and
CLI runs interleave whole lines with an unbroken chain.

The file lives in the XDG state directory (``$XDG_STATE_HOME/tau-tui/audit.jsonl``,
default ``~/.local/state``), mode 0600 in a 0700 directory.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

APP_DIR = "tau-tui"
AUDIT_FILE = "audit.jsonl"
GENESIS = "0" * 64
PHASES = ("preview", "declined", "refused", "intent", "outcome")
MESSAGE_LIMIT = 2000

#: ``key: value`` / ``key=value`` with a credential-like key, in free text.
_SECRETISH = re.compile(
    r"(?i)\b([\w.-]*(?:token|password|passwd|secret|api[_-]?key|client[_-]?key[_-]?data|authorization|credential)[\w.-]*)"
    r"(\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|\S+)")
#: ``"token": "..."`` in JSON text.
_JSON_SECRET = re.compile(
    r"(?i)(\"[^\"]*(?:token|password|passwd|secret|api[_-]?key|client[_-]?key[_-]?data|authorization|credential)[^\"]*\"\s*:\s*)"
    r"(\"(?:[^\"\\]|\\.)*\"|[^,}\s]+)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)
_SECRET_KEY = re.compile(r"(?i)token|password|passwd|secret|api[_-]?key|client[_-]?key|authorization|credential")


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / APP_DIR


def default_audit_path() -> Path:
    return state_dir() / AUDIT_FILE


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``<redacted>`` (free text and JSON alike)."""
    text = _PEM.sub("<redacted private key>", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} <redacted>", text)
    text = _JSON_SECRET.sub(lambda m: f'{m.group(1)}"<redacted>"', text)
    return _SECRETISH.sub(lambda m: m.group(0) if m.group(3).startswith('"<redacted>') else
                          f"{m.group(1)}{m.group(2)}<redacted>", text)


def redact_value(value: Any) -> Any:
    """A JSON-able value with credential-like keys blanked and strings redacted."""
    if isinstance(value, dict):
        return {str(k): "<redacted>" if _SECRET_KEY.search(str(k)) else redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


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
    hash: str = ""


def entry_hash(record: dict[str, Any]) -> str:
    """SHA-256 over ``prev`` and the canonical JSON of the record without ``hash``."""
    body = {k: v for k, v in record.items() if k != "hash"}
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
    ) -> None:
        self.path = Path(path) if path is not None else default_audit_path()
        self._lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))
        self.source = source

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
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                record["prev"] = _chain_head(_last_line(fd))
                record["hash"] = entry_hash(record)
                line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)  # closing releases the lock
        return AuditEntry(**record)

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

    @property
    def ok(self) -> bool:
        return self.bad_line is None

    def summary(self) -> str:
        if self.ok:
            return f"{self.path}: {self.entries} entries, chain intact, head {self.head}"
        return f"{self.path}:{self.bad_line}: {self.reason}"


def verify(path: Path | str | None = None) -> VerifyResult:
    """Re-compute the hash chain; the result names the first bad line."""
    path = Path(path) if path is not None else default_audit_path()
    result = VerifyResult(path)
    prev = GENESIS
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                result.bad_line, result.reason = number, "empty line (entries are never blank)"
                return result
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("hash"), str):
                result.bad_line, result.reason = number, "not an audit entry (not JSON with a hash)"
                return result
            if record.get("prev") != prev:
                result.bad_line = number
                result.reason = ("chain broken: prev does not match the previous line's hash "
                                 "(a line before it was deleted, inserted or edited)")
                return result
            if entry_hash(record) != record["hash"]:
                result.bad_line, result.reason = number, "hash mismatch: this line was edited"
                return result
            prev = record["hash"]
            result.entries += 1
    result.head = prev
    return result


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())
