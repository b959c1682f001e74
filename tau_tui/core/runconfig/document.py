"""The tau.yaml the compose pane edits: the file's text and the form's edits to it.

The document keeps the text it was opened with and, per form field, the value typed where it
differs from the file (compared as the field shows them: ``4`` and ``"4"`` are the same).  Its text
is always the opened text with only those keys rewritten, in place (:mod:`yaml_splice`): a key
keeps its position, spelling and alias form (a top-level ``name:`` stays top-level, even cleared
and typed again), and comments, order and untouched keys stay byte for byte.  Saving is careful:
the new text must parse back to the form's values and to the file's data everywhere else, must
keep every comment line outside the removed keys, and the file must not have changed on disk
since it was opened; then it is written to a temporary file in the same directory and renamed
over the original.  No Textual here.
"""

from __future__ import annotations

import copy
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from tau_tui.core.runconfig.config import ALIASES
from tau_tui.core.runconfig.form_text import field_text
from tau_tui.core.runconfig.yaml_splice import AnchorInUse, Splice

NEW_TEMPLATE = """\
# tau.yaml: a direct run config (see `tau-tui validate`).
run:
  name: my-run
  entrypoint: train.py

runtime:
  image: python:3.12-slim

compute:
  workers: 1
  gpus_per_worker: 1

policy: {}
"""


class SaveRefused(Exception):
    """Saving would lose data or overwrite someone else's change; the message says which."""


class EditRefused(ValueError):
    """An edit that cannot be written into the file in place; the message says why."""


def _load(text: str) -> Any:
    yaml = YAML(typ="rt")
    return yaml.load(text) if text.strip() else CommentedMap()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def comment_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("#")]


def parse_path(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _get(data: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _without(data: Any, paths: list[tuple[str, ...]]) -> Any:
    """``data`` (plain) less ``paths``, and less the maps that removing them emptied."""
    for path in paths:
        parents = []
        node = data
        for part in path[:-1]:
            if not isinstance(node, dict) or part not in node:
                break
            parents.append((node, part))
            node = node[part]
        else:
            if isinstance(node, dict):
                node.pop(path[-1], None)
            for parent, key in reversed(parents):  # an empty section ("policy:" or "policy: {}") too
                if parent[key] is None or (isinstance(parent[key], dict) and not parent[key]):
                    del parent[key]
    return data


@dataclass(frozen=True)
class Change:
    """One key the form changed: canonical and written path, and what the file and the form say."""

    path: str
    written: str
    before: str
    after: str


class ComposeDocument:
    """A tau.yaml and the form's edits.  ``path`` None means a new, unsaved file."""

    def __init__(self, text: str, path: Path | None = None):
        self.path = path
        self._opened(text)

    def _opened(self, text: str) -> None:
        data = _load(text)
        if data is None:
            data = CommentedMap()
        if not isinstance(data, CommentedMap):
            raise ValueError("the top level of tau.yaml must be a mapping (key: value)")
        self.original_text = text
        self.original_hash = hashlib.sha256(text.encode()).hexdigest()
        self.original: CommentedMap = data
        self._data: CommentedMap | None = data
        #: canonical path → the value typed, for each key whose field reads otherwise than the file
        self.edits: dict[str, Any] = {}
        #: (text, dropped comment lines) before each edit is applied, the last one after all of them:
        #: typing into the field edited last rewrites from the text before its edit only
        self._steps: list[tuple[str, list[str]]] = [(text, [])]

    @classmethod
    def open(cls, path: Path | str) -> ComposeDocument:
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        return cls(text, path)

    @classmethod
    def new(cls) -> ComposeDocument:
        return cls(NEW_TEMPLATE, None)

    @property
    def dirty(self) -> bool:
        return bool(self.edits)

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "tau.yaml (new)"

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent if self.path else Path.cwd()

    # -- access by canonical path, honouring the aliases the file uses -----------------

    def _locate(self, canonical: tuple[str, ...]) -> tuple[str, ...]:
        for source in ALIASES.get(canonical, [canonical]):
            if _get(self.original, source)[0]:
                return source
        return canonical

    @property
    def data(self) -> CommentedMap:
        """The document as the form reads it (loaded on first use after a change)."""
        if self._data is None:
            loaded = _load(self.text())
            self._data = loaded if isinstance(loaded, CommentedMap) else CommentedMap()
        return self._data

    @property
    def dropped(self) -> list[str]:
        """Comment lines inside the entries the edits removed."""
        return self._steps[-1][1]

    def get(self, canonical: str) -> Any:
        return _get(self.data, self._locate(parse_path(canonical)))[1]

    def saved_value(self, canonical: str) -> Any:
        """What the file says (as opened or last saved)."""
        return _get(self.original, self._locate(parse_path(canonical)))[1]

    def written_path(self, canonical: str) -> str:
        return ".".join(self._locate(parse_path(canonical)))

    def set(self, canonical: str, value: Any) -> None:
        """Set (or with None / "" / [] / {} remove) a value where the file keeps it."""
        if value == "" or value == [] or value == {}:
            value = None
        edits = dict(self.edits)
        if field_text(value) == field_text(self.saved_value(canonical)):
            edits.pop(canonical, None)  # as the file has it: the file's own text comes back
        else:
            # the key typed into goes last: each further key rewrites from the text before its edit only
            edits.pop(canonical, None)
            edits[canonical] = value
        if edits != self.edits:
            self._rebuild(edits)

    def revert(self) -> None:
        """Drop every edit: the document reads as the file again."""
        self._rebuild({})

    def _rebuild(self, edits: dict[str, Any]) -> None:
        old = list(self.edits.items())
        new = list(edits.items())
        same = 0  # the edits before the first that differs are applied already
        while same < min(len(old), len(new)) and old[same][0] == new[same][0] and old[same][1] is new[same][1]:
            same += 1
        steps = self._steps[:same + 1]
        text, dropped = steps[-1]
        splice = Splice(text, list(dropped))
        try:
            for canonical, value in new[same:]:
                splice.apply(self._locate(parse_path(canonical)), value)
                steps.append((splice.text, list(splice.dropped)))
        except AnchorInUse as err:
            raise EditRefused(str(err)) from None
        except Exception as err:  # a shape the in-place writer cannot handle: the edit is not taken
            raise EditRefused(f"cannot write this into the file in place ({type(err).__name__}: {err})") from None
        self.edits = edits
        self._steps = steps
        self._data = None

    def snapshot(self) -> ComposeDocument:
        """A copy for a save to write from: edits made meanwhile (UI thread) leave it alone."""
        return copy.copy(self)

    def adopt_save(self, saved: ComposeDocument) -> dict[str, str]:
        """``saved``, a :meth:`snapshot` of this document, was written: the file now reads as
        written, and what was typed since stays an edit.  Returns the edits that no longer apply
        (path → why), for the form to show under their fields."""
        typed = dict(self.edits)
        self.path = saved.path
        self._opened(saved.original_text)
        refused: dict[str, str] = {}
        for canonical, value in typed.items():
            try:
                self.set(canonical, value)
            except EditRefused as err:
                refused[canonical] = str(err)
        return refused

    def changes(self) -> list[Change]:
        return [Change(path, self.written_path(path), field_text(self.saved_value(path)), field_text(value))
                for path, value in self.edits.items()]

    # -- text and saving -------------------------------------------------------------

    def text(self) -> str:
        return self._steps[-1][0]

    def check_save(self, text: str, target: Path) -> None:
        """Raise :class:`SaveRefused` unless writing ``text`` to ``target`` is safe."""
        try:
            reparsed = _load(text)
        except Exception as err:
            raise SaveRefused(f"the edited document does not parse back ({err}); nothing was written") from None
        if reparsed is None:
            reparsed = CommentedMap()
        for path, value in self.edits.items():
            written = _get(reparsed, self._locate(parse_path(path)))[1]
            if field_text(written) != field_text(value):
                raise SaveRefused(f"{self.written_path(path)} would read {field_text(written)!r}, not the form's "
                                  f"{field_text(value)!r}; nothing was written")
        edited = [self._locate(parse_path(path)) for path in self.edits]
        if _without(_plain(reparsed), edited) != _without(_plain(self.original), edited):
            raise SaveRefused("the edited document would change keys the form did not edit; nothing was written")
        kept = comment_lines(text)
        missing = [c for c in comment_lines(self.original_text) if c not in kept and c not in self.dropped]
        if missing:
            raise SaveRefused(
                "saving would drop comment line(s) from the file: " + "; ".join(missing[:3])
                + ". Nothing was written; save under another name to keep both"
            )
        if target == self.path and target.exists():
            on_disk = target.read_text(encoding="utf-8")
            if hashlib.sha256(on_disk.encode()).hexdigest() != self.original_hash:
                raise SaveRefused(f"{target} changed on disk since it was opened; reopen it (ctrl+o) or save under another name")

    def save(self, target: Path | str | None = None) -> Path:
        target = Path(target) if target is not None else self.path
        if target is None:
            raise SaveRefused("this is a new file: give it a name")
        text = self.text()
        self.check_save(text, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        kept_mode = target.stat().st_mode & 0o777 if target.exists() else None
        tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        # A new file gets 0666 less the umask, as any editor's would; a replaced one keeps its mode.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                if kept_mode is not None:
                    os.fchmod(handle.fileno(), kept_mode)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self.path = target
        self._opened(text)
        return target
