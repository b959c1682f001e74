"""Drafts of unsaved Compose forms, as an editor's swap files.

When the app ends with a form that differs from its file (SIGTERM, SIGHUP, a crash), the form is
kept under ``$XDG_STATE_HOME/tau-tui/drafts/`` (the directory 0700, each file 0600): one draft per
tau.yaml, named by the SHA-256 of its absolute path, and one for a new, unsaved document.  The next
open of that file offers it (restore, discard, keep for later); saving the file or discarding the
draft removes it.  A draft holds the user's own tau.yaml text and field texts, as the file would:
it is never logged, and nothing here prints it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from tau_tui.core.operations.audit import state_dir

DRAFTS_DIR = "drafts"
#: The draft of a form that has no file yet.
NEW_DOCUMENT_KEY = "new-document"
DIR_MODE = 0o700
FILE_MODE = 0o600
#: A draft is a form's worth of text; a larger file is not one of ours and is not read.
MAX_DRAFT_BYTES = 8 * 1024 * 1024
FORMAT = 1


@dataclass(frozen=True)
class Draft:
    #: The tau.yaml's absolute path, or None for a new document.
    file: str | None
    #: canonical key → the text its field showed, for every field that differed from the file
    fields: dict[str, str]
    #: The document's text then, for a person who recovers it by hand.
    text: str
    #: SHA-256 of the file's text the edits were made on: a file changed since is said so.
    base_sha256: str
    kept_at: str
    #: What ended the app: "SIGTERM", "SIGHUP", "a crash (RuntimeError)", ...
    reason: str


def drafts_dir() -> Path:
    return state_dir() / DRAFTS_DIR


def draft_key(file: Path | str | None) -> str:
    if file is None:
        return NEW_DOCUMENT_KEY
    absolute = os.path.abspath(os.path.expanduser(str(file)))
    return hashlib.sha256(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def draft_path(file: Path | str | None) -> Path:
    return drafts_dir() / f"{draft_key(file)}.json"


def _private_dir() -> Path:
    directory = drafts_dir()
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o777 != DIR_MODE:
        os.chmod(directory, DIR_MODE)
    return directory


def keep_draft(draft: Draft) -> Path:
    """Write ``draft`` (replacing an older one of the same file) and return where it is."""
    directory = _private_dir()
    target = draft_path(draft.file)
    partial = directory / f".{target.name}.{secrets.token_hex(6)}.tmp"
    body = json.dumps({"format": FORMAT, **asdict(draft)}, ensure_ascii=False, indent=1)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)  # whatever the umask
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
    return target


def find_draft(file: Path | str | None) -> Draft | None:
    """The draft kept for ``file``, or None (none, or one this version cannot read)."""
    path = draft_path(file)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_DRAFT_BYTES + 1)
    if len(raw) > MAX_DRAFT_BYTES:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        fields = data["fields"]
        if data.get("format") != FORMAT or not isinstance(fields, dict):
            return None
        return Draft(file=data["file"], fields={str(k): str(v) for k, v in fields.items()}, text=str(data["text"]),
                     base_sha256=str(data["base_sha256"]), kept_at=str(data["kept_at"]), reason=str(data["reason"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def remove_draft(file: Path | str | None) -> bool:
    """Remove the draft of ``file``; whether there was one."""
    try:
        os.unlink(draft_path(file))
    except FileNotFoundError:
        return False
    return True
