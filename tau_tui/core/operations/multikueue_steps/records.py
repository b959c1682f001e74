"""Exercise records: every wizard, checklist or rotation run leaves a JSON and
a Markdown file under ``$XDG_DATA_HOME/tau-tui/multikueue/records`` (default
``~/.local/share``): when, who (SelfSubjectReview on the manager), which
cluster, and each step with its evidence and result.  They are the seed's
"repeatable enablement, drain and rollback exercises" evidence.

Records hold names, conditions and credential *fingerprints*, never a
credential: everything written passes :func:`tau_tui.core.operations.redaction.redact`, and
files are created 0600.  A run that does not end verified stays open; the
next run of the same flow on the same cluster continues that record.

Revocation evidence (``revocations``) is what a revoke step must still know
after a restart: per worker, the revoked credential's fingerprint, how it was
revoked, and the proof (time, HTTP status 401).  The credential itself is kept
only in the OS keyring while its proof is pending (``rotate.CredentialVault``),
never here.  A record reads the evidence of every earlier record of its flow
and cluster, and a proof counts only for the fingerprint the manager says it
last stored (``credential_ledger.py``): a drain verified yesterday still
proves today what it revoked, and proves nothing about a credential stored
since, from this machine or any other.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.audit import APP_DIR
from tau_tui.core.operations.redaction import redact

IN_PROGRESS = "in-progress"
REVOCATIONS = "revocations"


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_DIR / "multikueue" / "records"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f"{path.suffix}.{os.getpid()}-{threading.get_ident()}.tmp")  # writers never share one
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _newest_first(directory: Path, flow: str) -> list[Path]:
    """The records of ``flow``, last written first (two started in the same second differ only by a serial)."""
    def written(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return 0
    return sorted(directory.glob(f"*-{flow}-*.json"), key=lambda p: (written(p), p.name), reverse=True)


def _earlier_revocations(directory: Path, flow: str, cluster: str, skip: Path | None = None) -> list[dict[str, Any]]:
    """The revocation evidence of every earlier record of ``flow`` on ``cluster``, oldest first.  A proof
    binds to a fingerprint (:func:`RevocationEvidence.proof`), never to a record: which credential still has
    to be proven revoked is the manager's to say (``credential_ledger.py``), not this directory's."""
    out: list[dict[str, Any]] = []
    for path in reversed(_newest_first(directory, flow)):
        if path == skip:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # `tau-tui multikueue records` names an unreadable record
        if isinstance(data, dict) and data.get("cluster") == cluster and data.get("flow") == flow:
            out += [dict(e) for e in data.get(REVOCATIONS) or () if isinstance(e, dict)]
    return out


class RevocationEvidence:
    """Per worker, what a revoke step revoked and its proof; the newest entry of a worker counts."""

    earlier: list[dict[str, Any]]
    #: Whether what is noted here is written to a record (else it is lost with this process).
    persistent = False

    def _entries(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _now(self) -> str:
        raise NotImplementedError

    def _saved(self) -> None:
        """Called after each change."""

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        """Held while changing the evidence."""
        return contextlib.nullcontext()

    def revocation(self, worker: str) -> dict[str, Any] | None:
        return next((e for e in reversed([*self.earlier, *self._entries()]) if e.get("worker") == worker), None)

    def proof(self, worker: str, fingerprint: str) -> dict[str, Any] | None:
        """The newest 401 seen for ``fingerprint`` on ``worker``, in this record or an earlier one."""
        return next((e for e in reversed([*self.earlier, *self._entries()]) if e.get("worker") == worker
                     and e.get("fingerprint") == fingerprint and e.get("http_status") == 401), None)

    def note_revocation(self, worker: str, fingerprint: str, how: str) -> None:
        """``fingerprint`` was revoked on ``worker`` (``how``; empty: left to the operator), proof pending."""
        with self._guard():
            self._entries().append({"worker": worker, "fingerprint": fingerprint, "revoked_at": self._now(),
                                    "how": redact(how), "http_status": None, "proven_at": None, "evidence": ""})
            self._saved()

    def note_proof(self, worker: str, fingerprint: str, http_status: int, evidence: str) -> dict[str, Any]:
        """The worker rejected ``fingerprint`` with ``http_status``: the proof, kept with its time."""
        with self._guard():
            entry = self.revocation(worker)
            if entry is None or entry.get("fingerprint") != fingerprint:
                entry = {"worker": worker, "fingerprint": fingerprint, "revoked_at": None, "how": ""}
                self._entries().append(entry)
            elif not any(e is entry for e in self._entries()):  # first noted in an earlier record: carried into this one
                entry = dict(entry)
                self._entries().append(entry)
            entry.update(http_status=http_status, proven_at=self._now(), evidence=redact(evidence))
            self._saved()
            return entry


class RecordJournal(RevocationEvidence):
    """The evidence without a record of this run (``status``, ``record=False``): read from the
    newest record of the flow, changes kept in memory only."""

    def __init__(self, earlier: list[dict[str, Any]]):
        self.earlier = earlier
        self.current: list[dict[str, Any]] = []

    @classmethod
    def latest(cls, flow: str, cluster: str, directory: Path | None = None) -> RecordJournal:
        return cls(_earlier_revocations(directory or data_dir(), flow, cluster))

    def _entries(self) -> list[dict[str, Any]]:
        return self.current

    def _now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")


class Recorder(RevocationEvidence):
    """Appends steps to one record and rewrites both files after each step."""

    persistent = True
    #: The app verifies (which may note a proof) while its worker thread applies a step: one writer at a time.
    _lock: threading.RLock

    def __init__(self, flow: str, cluster: str, identity: str, *, directory: Path | None = None,
                 clock: Callable[[], datetime] | None = None, plan: str = ""):
        self.directory = directory or data_dir()
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        resumed = self._unfinished(flow, cluster)
        if resumed is not None:
            self.path, self.data = resumed
            self.data["resumed"] = self.data.get("resumed", []) + [self._now()]
        else:
            started = self._now()
            stamp = started.replace(":", "").replace("-", "")[:15]
            name = f"{stamp}-{flow}-{cluster}".replace("/", "_")
            self.path = self.directory / f"{name}.json"
            # Two exercises in the same second each keep their own record.
            serial = 2
            while self.path.exists():
                self.path = self.directory / f"{name}-{serial}.json"
                serial += 1
            self.data = {"flow": flow, "cluster": cluster, "identity": identity, "started": started, "finished": None,
                         "outcome": IN_PROGRESS, "plan": plan, "steps": []}
        self.data["identity"] = identity
        self.earlier = _earlier_revocations(self.directory, flow, cluster, self.path)
        self._save()

    def _now(self) -> str:
        return self.clock().isoformat(timespec="seconds")

    def _unfinished(self, flow: str, cluster: str) -> tuple[Path, dict[str, Any]] | None:
        for path in _newest_first(self.directory, flow):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if data.get("cluster") == cluster and data.get("flow") == flow:
                return (path, data) if data.get("outcome") != "verified" else None
        return None

    def step(self, step: Any, result: str, check: Any, applied: Sequence[str] = ()) -> None:
        with self._lock:
            self.data["steps"].append({
                "at": self._now(), "step": step.key, "title": step.title, "kind": step.kind, "result": result,
                "reason": redact(check.reason), "evidence": [redact(e) for e in check.evidence],
                "applied": [redact(a) for a in applied]} | ({"action": redact(check.action)} if getattr(check, "action", "") else {}))
            self._save()

    def _entries(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.data.setdefault(REVOCATIONS, [])
        return entries

    def _saved(self) -> None:
        self._save()

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        return self._lock

    def finish(self, outcome: str) -> None:
        with self._lock:
            self.data["outcome"] = outcome
            self.data["finished"] = self._now()
            self._save()

    def _save(self) -> None:
        with self._lock:
            _write(self.path, json.dumps(self.data, indent=2, ensure_ascii=False) + "\n")
            _write(self.path.with_suffix(".md"), markdown(self.data))


def markdown(data: dict[str, Any]) -> str:
    lines = [f"# MultiKueue {data['flow']} exercise on {data['cluster']}", "",
             f"- started: {data['started']}", f"- finished: {data.get('finished') or '—'}",
             f"- identity: {data['identity']}", f"- outcome: **{data['outcome']}**"]
    if data.get("plan"):
        lines.append(f"- plan: {data['plan']}")
    if data.get("resumed"):
        lines.append(f"- resumed at: {', '.join(data['resumed'])}")
    lines.append("")
    for i, step in enumerate(data.get("steps") or (), 1):
        lines += [f"## {i}. {step['title']} — {step['result']}", "", f"at {step['at']}"]
        if step.get("reason"):
            lines += ["", f"reason: {step['reason']}"]
        if step.get("action"):
            lines += ["", f"⚠ to do: {step['action']}"]
        if step.get("applied"):
            lines += ["", "applied:"] + [f"- {a}" for a in step["applied"]]
        if step.get("evidence"):
            lines += ["", "evidence:"] + [f"- {e}" for e in step["evidence"]]
        lines.append("")
    if data.get(REVOCATIONS):
        lines += ["## Credential revocations", ""]
        for e in data[REVOCATIONS]:
            proof = (f"rejected with HTTP {e['http_status']} at {e['proven_at']}" if e.get("http_status")
                     else "not proven: the credential was not seen rejected")
            how = (f"{e['how']} at {e['revoked_at']}" if e.get("how")
                   else "left to your identity system (no adminContext)" + (f", noted at {e['revoked_at']}" if e.get("revoked_at") else ""))
            lines.append(f"- worker {e['worker']}, credential {e['fingerprint']}: {how}; {proof}")
        lines.append("")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RecordSummary:
    path: Path
    flow: str
    cluster: str
    started: str
    outcome: str
    steps: int
    identity: str
    #: Why the file cannot be read as a record ("" when it can): listed, never skipped.
    unreadable: str = ""


def list_records(directory: Path | None = None) -> list[RecordSummary]:
    """Every record file, oldest name first; one that cannot be read is listed with the reason."""
    out = []
    for path in sorted((directory or data_dir()).glob("*.json")):
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            out.append(RecordSummary(path, str(data.get("flow", "?")), str(data.get("cluster", "?")),
                                     str(data.get("started", "?")), str(data.get("outcome", "?")),
                                     len(data.get("steps") or ()), str(data.get("identity", "?"))))
        except (OSError, ValueError, TypeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            out.append(RecordSummary(path, "?", "?", "?", "unreadable", 0, "?", unreadable=why or type(exc).__name__))
    return out
