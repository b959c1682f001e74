"""Evidence pane: the local evidence records of finished runs (k9s-style table), newest first.

Records are read from the evidence store (SQLite under the XDG data directory) in the refresh
worker, never on the UI thread.  ``enter``/``d`` opens a record, ``x`` exports it as a bundle
(refused in --readonly: an export writes a file where the user says, and read-only allows no
file write beyond the app's own state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding

from tau_tui.core.operations.evidence.store import RecordSummary
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.evidence_record import EvidenceRecordScreen, export_record
from tau_tui.screens.known_counts import CountedStatus, RowCount
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_messages import RowSelected

#: Outcome → the status word status_text knows (symbol and word, never colour alone).
OUTCOME_STATES = {"succeeded": "succeeded", "failed": "failed", "cancelled": "finished"}


@dataclass
class EvidenceData:
    rows: list = field(default_factory=list)
    records: dict[str, RecordSummary] = field(default_factory=dict)
    status: str | CountedStatus = ""


def size_text(size: int) -> str:
    for unit, step in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size >= step:
            return f"{size / step:.1f} {unit}"
    return f"{size} B"


def short_time(value: str | None) -> str:
    """``2025-03-03T08:23:30Z`` → ``03-03 08:23``."""
    if not value or len(value) < 16:
        return value or "—"
    return f"{value[5:10]} {value[11:16]}"


class EvidenceScreen(PaneScreen):
    PANE = "evidence"
    PANE_TITLE = "Evidence"
    HELP = (
        "Evidence records of finished runs, kept on this machine (SQLite under $XDG_DATA_HOME/tau-tui). "
        "A record is captured when the app sees a run succeed, fail or be cancelled: its tau.yaml and config "
        "hash, the manifests, images and digests, the Kueue Workload history, events, the log, the checkpoint "
        "path and the nodes it ran on with their GPU health.  enter or d opens a record; x exports it as a "
        ".tar.gz bundle with a SHA-256 per file (tau-tui evidence verify checks it).  Nothing is uploaded."
    )
    MUTATING_ACTIONS = frozenset({"export"})  # writes a file where the user says: refused in --readonly
    MAX_UNCHANGED_S = 5.0
    BINDINGS = [
        Binding("enter", "open", "Open", id="evidence.open", show=False),
        Binding("d", "open", "Open", id="evidence.describe"),
        Binding("x", "export", "Export", id="evidence.export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.data = EvidenceData()

    def compose_body(self) -> ComposeResult:
        yield KeyedTable([ColumnSpec("outcome", "Outcome", "O"), ColumnSpec("run", "Run", "R", flexible=True, min_width=20, cut="middle"),
                          ColumnSpec("kind", "Kind", "K", optional=True), ColumnSpec("finished", "Finished", "F"),
                          ColumnSpec("nodes", "Nodes", "N", flexible=True, min_width=12),
                          ColumnSpec("files", "Files", optional=True), ColumnSpec("size", "Size", "Z", optional=True),
                          ColumnSpec("submission", "Submission", "S", optional=True, flexible=True)],
                         id="evidence-table")

    def needs_backend(self) -> bool:
        return False  # records are local: the pane works without a cluster

    def data_signature(self) -> tuple | None:
        return (self.tau.evidence.writes, self.row_filter.text)

    def collect(self, request: ReadRequest) -> EvidenceData:
        f = request.row_filter
        data = EvidenceData()
        records = self.tau.evidence.records()
        for record in records:
            key = str(record.id)
            if not f.matches(f"{record.run} {record.outcome} {record.kind} {record.nodes} {record.submission_id}"):
                continue
            data.records[key] = record
            data.rows.append((key, [
                status_text(OUTCOME_STATES.get(record.outcome, "unknown"), record.outcome),
                Text(record.run), Text(record.kind), Text(short_time(record.finished_at)),
                Text(record.nodes.replace(",", ", ") or "—"), Text(str(record.file_count)),
                Text(size_text(record.total_bytes)), Text(record.submission_id),
            ]))
        counts: dict[str, int] = {}
        for record in data.records.values():
            counts[record.outcome] = counts.get(record.outcome, 0) + 1
        recorder = self.tau.evidence_recorder
        outcomes = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "none yet"
        failed = f" · ⚠ last capture failed: {recorder.last_error}" if recorder is not None and recorder.last_error else ""
        data.status = CountedStatus((RowCount(str(len(records)), "records"), f" · {outcomes}{failed}"))
        return data

    def apply(self, data: EvidenceData) -> None:
        self.data = data
        notice = None if data.rows else Text(
            "no evidence records yet: a record is captured when the app sees a run finish; "
            "`tau-tui evidence export RUN` captures a finished run on demand")
        self.query_one("#evidence-table", KeyedTable).apply_rows(data.rows, notice=notice)
        self.set_status(data.status)

    def selected(self) -> RecordSummary | None:
        key = self.query_one("#evidence-table", KeyedTable).selected_key
        return self.data.records.get(key) if key else None

    @on(RowSelected)
    def _on_row_selected(self, event: RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        record = self.selected()
        if record is None:
            self.notify("select a record to open", severity="warning")
            return
        self.app.push_screen(EvidenceRecordScreen(record))

    def action_export(self) -> None:
        record = self.selected()
        if record is None:
            self.notify("select a record to export", severity="warning")
            return
        export_record(self, record)
