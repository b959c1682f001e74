"""One evidence record (from the Evidence pane): its summary, its files with size and SHA-256, and
the selected file's text.  ``x`` exports it; ``esc`` goes back to the list."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tau_tui.core.operations.evidence.bundle import ExportError, default_bundle_name, sha256_hex, write_bundle
from tau_tui.core.operations.evidence.store import RecordSummary
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.host import PaneHost
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable

#: Lines of a file shown on screen (the bundle has all of it).
SHOWN_LINES = 400


@dataclass
class RecordData:
    files: dict[str, bytes] = field(default_factory=dict)
    rows: list = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def _when(value: str | None) -> str:
    """``2025-03-03T08:05:10Z`` → ``2025-03-03 08:05:10``."""
    return value.replace("T", " ").rstrip("Z") if value else "—"


def summary_lines(record: RecordSummary, files: dict[str, bytes]) -> list[str]:
    """What a reader asks first, from ``record.json``: outcome, times, config, images, nodes, gaps."""
    try:
        doc: dict[str, Any] = json.loads(files.get("record.json", b"{}"))
    except ValueError:
        doc = {}
    wait = doc.get("queueWaitSeconds")
    finished = _when(record.finished_at)
    started = _when(doc.get("startedAt"))
    same_day = finished[:10] == started[:10]
    lines = [
        f"{record.kind} {record.run} · {record.outcome} · submission {record.submission_id}",
        f"ran {started} → {finished[11:] if same_day else finished}"
        + (f" · queue wait {wait:.0f}s" if isinstance(wait, (int, float)) else "")
        + f" · captured {_when(record.captured_at)} by {record.source}",
        f"config hash {record.config_hash or 'unknown'} · image digests {', '.join(doc.get('imageDigests') or []) or 'unknown'}",
        f"images {', '.join(doc.get('images') or []) or 'unknown'}",
        f"nodes {record.nodes.replace(',', ', ') or '—'} · checkpoint {', '.join(doc.get('checkpointPaths') or []) or 'none'}",
    ]
    lines += [f"⚠ {gap}" for gap in doc.get("unavailable") or []]
    return lines


class EvidenceRecordScreen(PaneScreen):
    PANE = "evidence"
    PANE_TITLE = "Evidence record"
    FILTERS_ROWS = False
    HELP = (
        "One evidence record: the summary (outcome, times, config hash, images and digests, nodes, checkpoint, "
        "and what could not be captured), its files with their size and SHA-256 as the bundle's manifest lists "
        "them, and the selected file's text.  x exports the record as a .tar.gz bundle; esc goes back."
    )
    MUTATING_ACTIONS = frozenset({"export"})
    MAX_UNCHANGED_S = 3600.0  # a record never changes once stored
    BINDINGS = [Binding("x", "export", "Export", id="evidence_record.export")]

    DEFAULT_CSS = """
    EvidenceRecordScreen #record-summary { height: auto; padding: 0 1; }
    EvidenceRecordScreen #record-files { height: auto; max-height: 10; }
    EvidenceRecordScreen.-narrow #record-files { max-height: 5; }
    EvidenceRecordScreen #record-file-view { height: 1fr; border-top: solid $panel-lighten-2; }
    """

    def __init__(self, record: RecordSummary) -> None:
        super().__init__()
        self.record = record
        self.data = RecordData()

    def crumbs(self) -> str:
        return f"Evidence › {self.record.run}"

    def compose_body(self) -> ComposeResult:
        yield Static(Text(f"{self.record.run}: loading"), id="record-summary")
        yield KeyedTable([ColumnSpec("path", "File", flexible=True, min_width=16, cut="middle"), ColumnSpec("size", "Bytes"),
                          ColumnSpec("sha", "SHA-256", flexible=True, min_width=12, cut="middle")], id="record-files")
        with VerticalScroll(id="record-file-view"):
            yield Static(Text(""), id="record-file-text")

    def needs_backend(self) -> bool:
        return False

    def data_signature(self) -> tuple | None:
        return (self.record.id,)

    def collect(self, request: ReadRequest) -> RecordData:
        files = self.tau.evidence.files(self.record.id)
        rows = [(path, [Text(path), Text(str(len(content))), Text(sha256_hex(content)[:16] + "…")])
                for path, content in files.items()]
        return RecordData(files, rows, summary_lines(self.record, files))

    def apply(self, data: RecordData) -> None:
        self.data = data
        self.query_one("#record-summary", Static).update(Text("\n".join(data.summary)))
        self.query_one("#record-files", KeyedTable).apply_rows(data.rows, notice=None if data.rows else Text("the record has no files"))
        self.set_status(f"{len(data.files)} files · {sum(len(c) for c in data.files.values())} bytes · x export · esc back")
        self._show_file()

    def on_keyed_table_row_highlighted(self, event: Any) -> None:
        self._show_file()

    def _show_file(self) -> None:
        path = self.query_one("#record-files", KeyedTable).selected_key
        content = self.data.files.get(path or "")
        view = self.query_one("#record-file-text", Static)
        if content is None:
            view.update(Text("select a file"))
            return
        lines = content.decode("utf-8", errors="replace").split("\n")
        shown = "\n".join(lines[:SHOWN_LINES])
        if len(lines) > SHOWN_LINES:
            shown += f"\n… {len(lines) - SHOWN_LINES} more lines in the bundle (x to export)"
        view.update(Text(shown))  # plain text: a log or a message is never markup

    def action_export(self) -> None:
        export_record(self, self.record)


def export_record(screen: Screen, record: RecordSummary) -> None:
    """Ask where, then write the bundle in a worker; refused in --readonly, as compose save is."""
    host = cast(PaneHost, screen.app)
    if host.readonly:
        host.block_mutation("export", f"evidence {record.run}")
        return

    def write() -> None:  # worker thread: the store read and the file write
        try:
            written = write_bundle(record, host.evidence.files(record.id), Path(target[0]).expanduser())
        except ExportError as err:
            screen.app.call_from_thread(screen.notify, str(err), title="not exported", severity="error", timeout=10)
            return
        check = f"tau-tui evidence verify{' --demo' if record.simulated else ''} {written}"  # the demo's key is its own
        screen.app.call_from_thread(screen.notify, f"exported {written}\ncheck it with: {check}",
                                    title="evidence exported", timeout=10)

    target: list[str] = []

    def chosen(path: str | None) -> None:
        if path:
            target.append(path)
            screen.run_worker(write, thread=True, exclusive=True, exit_on_error=False, group="evidence-export")

    screen.app.push_screen(InputDialog(f"Export the evidence of {record.run} to:",
                                       str(Path.cwd() / default_bundle_name(record))), chosen)
