"""Local audit log of every mutation the app performs (append-only JSON lines).

One line per attempt: when, who (local user), which context/namespace, the
verb, the target, whether it was a dry-run, and the outcome message.  No
manifests, environment values or credentials are written: only kinds and
names.  The file lives in the XDG state directory
(``$XDG_STATE_HOME/tau-tui/audit.jsonl``, default ``~/.local/state``) and is
created with mode 0600.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

APP_DIR = "tau-tui"
AUDIT_FILE = "audit.jsonl"
#: Values that look like credentials are never written, even inside a message.
_SECRETISH = re.compile(r"(?i)(token|password|secret|bearer|authorization)(\s*[:=]\s*)(\S+)")


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / APP_DIR


def default_audit_path() -> Path:
    return state_dir() / AUDIT_FILE


def redact(text: str) -> str:
    return _SECRETISH.sub(lambda m: f"{m.group(1)}{m.group(2)}<redacted>", text)


@dataclass(frozen=True)
class AuditEntry:
    at: str
    user: str
    context: str | None
    namespace: str | None
    verb: str  # cancel, hold, hold-and-drain, resume, cordon, uncordon, drain, submit, save
    target: str  # "Job team-a/train" / "Node h100-node-1"
    dry_run: bool
    ok: bool
    message: str
    readonly_blocked: bool = False


class AuditLog:
    """Thread-safe appender; each entry is flushed and fsync'd before returning."""

    def __init__(self, path: Path | str | None = None, clock: Callable[[], datetime] | None = None):
        self.path = Path(path) if path is not None else default_audit_path()
        self._lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(UTC))

    def append(
        self,
        verb: str,
        target: str,
        *,
        ok: bool,
        message: str,
        dry_run: bool = False,
        context: str | None = None,
        namespace: str | None = None,
        readonly_blocked: bool = False,
    ) -> AuditEntry:
        entry = AuditEntry(
            at=self._clock().isoformat(),
            user=_user(),
            context=context,
            namespace=namespace,
            verb=verb,
            target=target,
            dry_run=dry_run,
            ok=ok,
            message=redact(message)[:2000],
            readonly_blocked=readonly_blocked,
        )
        line = json.dumps(asdict(entry), sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        return entry

    def entries(self) -> Iterator[dict[str, Any]]:
        """Read back every entry (skipping lines that are not valid JSON)."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        yield json.loads(line)
                    except ValueError:
                        continue
        except FileNotFoundError:
            return


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())
