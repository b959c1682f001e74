"""The local evidence store: one SQLite file under the XDG data directory.

``$XDG_DATA_HOME/tau-tui/evidence.sqlite3`` (default ``~/.local/share``), mode 0600 in a 0700
directory; the simulated cluster's (``--demo``) records are kept apart, in
``$XDG_DATA_HOME/tau-tui/demo/evidence.sqlite3``, and every record names its cluster (its API
server and ``kube-system`` UID, ``cluster_identity.py``).  Three tables: ``submissions`` (the tau.yaml and rendered manifests of a run tau-tui
submitted, keyed by namespace, name and submission id), ``records`` (one per finished run and
submission: capturing twice keeps the first) and ``record_files`` (the files of a record, as they
go into a bundle).  Everything stored is already redacted by the capture; nothing here talks to
the network.  Each call opens its own connection, so the app's recorder thread and a CLI process
can write at the same time (SQLite's file lock serialises them).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tau_tui.core.operations.private_dirs import private_directory

if TYPE_CHECKING:
    from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity

APP_DIR = "tau-tui"
#: The demo's records (and its own signing key, beside the demo's audit log) live under this.
DEMO_DIR = "demo"
STORE_FILE = "evidence.sqlite3"
#: Seconds a writer waits for another process's lock before failing.
LOCK_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    namespace TEXT NOT NULL, name TEXT NOT NULL, submission_id TEXT NOT NULL,
    config_hash TEXT, tau_yaml TEXT, tau_yaml_path TEXT, manifests TEXT NOT NULL,
    source TEXT NOT NULL, submitted_at TEXT NOT NULL,
    PRIMARY KEY (namespace, name, submission_id));
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL, name TEXT NOT NULL, submission_id TEXT NOT NULL,
    kind TEXT NOT NULL, uid TEXT, outcome TEXT NOT NULL, finished_at TEXT, captured_at TEXT NOT NULL,
    source TEXT NOT NULL, config_hash TEXT, nodes TEXT NOT NULL DEFAULT '',
    cluster_server TEXT, cluster_uid TEXT, simulated INTEGER NOT NULL DEFAULT 0,
    UNIQUE (namespace, name, submission_id));
CREATE TABLE IF NOT EXISTS record_files (
    record_id INTEGER NOT NULL REFERENCES records(id), path TEXT NOT NULL, content BLOB NOT NULL,
    PRIMARY KEY (record_id, path));
"""


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_DIR


#: Columns added after the first release: a store made before them gets them (NULL: unknown cluster).
_ADDED_COLUMNS = (("cluster_server", "TEXT"), ("cluster_uid", "TEXT"), ("simulated", "INTEGER NOT NULL DEFAULT 0"))


def default_store_path() -> Path:
    return data_dir() / STORE_FILE


def demo_store_path() -> Path:
    return data_dir() / DEMO_DIR / STORE_FILE


@dataclass(frozen=True)
class Submission:
    """What tau-tui knew when it submitted a run (the cluster keeps neither the tau.yaml nor the render)."""

    namespace: str
    name: str
    submission_id: str
    config_hash: str | None
    tau_yaml: str | None
    tau_yaml_path: str | None
    manifests: str  # YAML, redacted
    source: str  # app or cli
    submitted_at: str


@dataclass(frozen=True)
class RecordSummary:
    id: int
    namespace: str
    name: str
    submission_id: str
    kind: str
    uid: str | None
    outcome: str  # succeeded, failed, cancelled
    finished_at: str | None
    captured_at: str
    source: str
    config_hash: str | None
    nodes: str  # comma-separated node names
    file_count: int = 0
    total_bytes: int = 0
    #: The cluster it is evidence of: API server URL and kube-system UID (None: unknown).
    cluster_server: str | None = None
    cluster_uid: str | None = None
    #: A record of the simulated cluster (--demo).
    simulated: bool = False

    @property
    def run(self) -> str:
        return f"{self.namespace}/{self.name}"


class EvidenceStore:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        #: Records this process added (a pane re-reads when it moves; other processes' records
        #: show at the pane's periodic re-read).
        self.writes = 0

    @classmethod
    def demo(cls) -> EvidenceStore:
        """The simulated cluster's store, apart from the real one."""
        return cls(demo_store_path())

    @property
    def is_demo(self) -> bool:
        return self.path == demo_store_path()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        private_directory(self.path.parent)
        # Create the file 0600 before SQLite opens it (SQLite would use the umask); its journal
        # files copy the database's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        connection = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_S)
        try:
            connection.executescript(_SCHEMA)
            present = {row[1] for row in connection.execute("PRAGMA table_info(records)")}
            for column, declaration in _ADDED_COLUMNS:
                if column not in present:
                    connection.execute(f"ALTER TABLE records ADD COLUMN {column} {declaration}")
            with connection:
                yield connection
        finally:
            connection.close()

    # -- submissions -------------------------------------------------------------

    def record_submission(self, submission: Submission) -> bool:
        """Keep what was submitted; a second submit of the same id keeps the first.  True if new."""
        with self._connect() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (submission.namespace, submission.name, submission.submission_id, submission.config_hash,
                 submission.tau_yaml, submission.tau_yaml_path, submission.manifests, submission.source,
                 submission.submitted_at))
            return cursor.rowcount == 1

    def submission(self, namespace: str, name: str, submission_id: str) -> Submission | None:
        if not self.path.exists():
            return None
        with self._connect() as db:
            row = db.execute("SELECT * FROM submissions WHERE namespace=? AND name=? AND submission_id=?",
                             (namespace, name, submission_id)).fetchone()
        return Submission(*row) if row else None

    # -- records -----------------------------------------------------------------

    def add_record(self, summary: RecordSummary, files: Mapping[str, bytes]) -> tuple[RecordSummary, bool]:
        """Store a record with its files, once per (namespace, name, submission id).  Returns the
        stored record and whether this call created it (False: it was captured before)."""
        with self._connect() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO records (namespace, name, submission_id, kind, uid, outcome, finished_at,"
                " captured_at, source, config_hash, nodes, cluster_server, cluster_uid, simulated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (summary.namespace, summary.name, summary.submission_id, summary.kind, summary.uid, summary.outcome,
                 summary.finished_at, summary.captured_at, summary.source, summary.config_hash, summary.nodes,
                 summary.cluster_server, summary.cluster_uid, int(summary.simulated)))
            created = cursor.rowcount == 1
            if created:
                self.writes += 1
                db.executemany("INSERT INTO record_files VALUES (?, ?, ?)",
                               [(cursor.lastrowid, path, content) for path, content in sorted(files.items())])
        stored = self.find(summary.namespace, summary.name, summary.submission_id)
        assert stored is not None  # inserted above, or there before
        return stored, created

    def records(self, namespace: str | None = None) -> list[RecordSummary]:
        """Every record, newest capture first (one namespace with ``namespace``)."""
        if not self.path.exists():
            return []
        where, args = ("WHERE r.namespace = ?", (namespace,)) if namespace else ("", ())
        with self._connect() as db:
            rows = db.execute(
                "SELECT r.id, r.namespace, r.name, r.submission_id, r.kind, r.uid, r.outcome, r.finished_at,"
                " r.captured_at, r.source, r.config_hash, r.nodes, COUNT(f.path), COALESCE(SUM(LENGTH(f.content)), 0),"
                " r.cluster_server, r.cluster_uid, r.simulated"
                f" FROM records r LEFT JOIN record_files f ON f.record_id = r.id {where}"
                " GROUP BY r.id ORDER BY r.captured_at DESC, r.id DESC", args).fetchall()
        return [RecordSummary(*(*row[:-1], bool(row[-1]))) for row in rows]  # simulated: SQLite's 0/1

    def find(self, namespace: str, name: str, submission_id: str | None = None,
             cluster: ClusterIdentity | None = None) -> RecordSummary | None:
        """The record of a run (its latest submission without ``submission_id``; only one of
        ``cluster`` when given)."""
        for record in self.records(namespace):
            if record.name == name and (submission_id is None or record.submission_id == submission_id) and (
                    cluster is None or not cluster.conflicts(record.cluster_server, record.cluster_uid,
                                                             record.simulated)):
                return record
        return None

    def get(self, record_id: int) -> RecordSummary | None:
        return next((r for r in self.records() if r.id == record_id), None)

    def files(self, record_id: int) -> dict[str, bytes]:
        with self._connect() as db:
            rows = db.execute("SELECT path, content FROM record_files WHERE record_id = ? ORDER BY path",
                              (record_id,)).fetchall()
        return {str(path): bytes(content) for path, content in rows}
