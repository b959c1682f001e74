"""Exercise records: every wizard, checklist or rotation run leaves a JSON and
a Markdown file under ``$XDG_DATA_HOME/tau-tui/multikueue/records`` (default
``~/.local/share``): when, who (SelfSubjectReview on the manager), which
cluster, and each step with its evidence and result.  They are the seed's
"repeatable enablement, drain and rollback exercises" evidence.

Records hold names, conditions and credential *fingerprints*, never a
credential: everything written passes :func:`tau_tui.core.operations.audit.redact`, and
files are created 0600.  A run that does not end verified stays open; the
next run of the same flow on the same cluster continues that record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.audit import APP_DIR, redact

IN_PROGRESS = "in-progress"


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_DIR / "multikueue" / "records"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class Recorder:
    """Appends steps to one record and rewrites both files after each step."""

    def __init__(self, flow: str, cluster: str, identity: str, *, directory: Path | None = None,
                 clock: Callable[[], datetime] | None = None, plan: str = ""):
        self.directory = directory or data_dir()
        self.clock = clock or (lambda: datetime.now(UTC))
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
        self._save()

    def _now(self) -> str:
        return self.clock().isoformat(timespec="seconds")

    def _unfinished(self, flow: str, cluster: str) -> tuple[Path, dict[str, Any]] | None:
        for path in sorted(self.directory.glob(f"*-{flow}-*.json"), reverse=True):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if data.get("cluster") == cluster and data.get("flow") == flow:
                return (path, data) if data.get("outcome") != "verified" else None
        return None

    def step(self, step: Any, result: str, check: Any, applied: Sequence[str] = ()) -> None:
        self.data["steps"].append({
            "at": self._now(), "step": step.key, "title": step.title, "kind": step.kind, "result": result,
            "reason": redact(check.reason), "evidence": [redact(e) for e in check.evidence],
            "applied": [redact(a) for a in applied]})
        self._save()

    def finish(self, outcome: str) -> None:
        self.data["outcome"] = outcome
        self.data["finished"] = self._now()
        self._save()

    def _save(self) -> None:
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
        if step.get("applied"):
            lines += ["", "applied:"] + [f"- {a}" for a in step["applied"]]
        if step.get("evidence"):
            lines += ["", "evidence:"] + [f"- {e}" for e in step["evidence"]]
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


def list_records(directory: Path | None = None) -> list[RecordSummary]:
    out = []
    for path in sorted((directory or data_dir()).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        out.append(RecordSummary(path, data.get("flow", "?"), data.get("cluster", "?"), data.get("started", "?"),
                                 data.get("outcome", "?"), len(data.get("steps") or ()), data.get("identity", "?")))
    return out
