"""The tau.yaml the compose pane edits, as a round-trip document.

Edits go through ruamel.yaml's round-trip model, so the user's comments, key
order and aliases (``name:`` at the top level stays there) survive.  Saving is
careful: the new text must parse back to the same data, must keep every
comment line the file had, and the file must not have changed on disk since it
was opened; then it is written to a temporary file in the same directory and
renamed over the original.  No Textual here.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from tau_tui.core.runconfig.config import ALIASES

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


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


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


@dataclass
class LoadProblem:
    message: str


class ComposeDocument:
    """A round-trip tau.yaml.  ``path`` None means a new, unsaved file."""

    def __init__(self, text: str, path: Path | None = None):
        self.path = path
        self.original_text = text
        self.original_hash = hashlib.sha256(text.encode()).hexdigest()
        self.yaml = _yaml()
        data = self.yaml.load(text) if text.strip() else CommentedMap()
        if data is None:
            data = CommentedMap()
        if not isinstance(data, CommentedMap):
            raise ValueError("the top level of tau.yaml must be a mapping (key: value)")
        self.data: CommentedMap = data
        self.dirty = False

    @classmethod
    def open(cls, path: Path | str) -> ComposeDocument:
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        return cls(text, path)

    @classmethod
    def new(cls) -> ComposeDocument:
        return cls(NEW_TEMPLATE, None)

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "tau.yaml (new)"

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent if self.path else Path.cwd()

    # -- access by canonical path, honouring the aliases the file uses -----------------

    def _locate(self, canonical: tuple[str, ...]) -> tuple[str, ...]:
        for source in ALIASES.get(canonical, [canonical]):
            if self._get(source)[0]:
                return source
        return canonical

    def _get(self, path: tuple[str, ...]) -> tuple[bool, Any]:
        node: Any = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return False, None
            node = node[part]
        return True, node

    def get(self, canonical: str) -> Any:
        return self._get(self._locate(parse_path(canonical)))[1]

    def written_path(self, canonical: str) -> str:
        return ".".join(self._locate(parse_path(canonical)))

    def set(self, canonical: str, value: Any) -> None:
        """Set (or with None / "" remove) a value where the file keeps it."""
        path = self._locate(parse_path(canonical))
        if value is None or value == "" or value == []:
            self._remove(path)
            return
        node = self.data
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = CommentedMap()
                node[part] = child
            node = child
        existing = node.get(path[-1])
        if isinstance(value, dict) and isinstance(existing, CommentedMap):
            # edit the map in place: its comments and key order survive
            changed = False
            for key in [k for k in existing if k not in value]:
                del existing[key]
                changed = True
            for key, item in value.items():
                if existing.get(key) != item:
                    existing[key] = item
                    changed = True
            self.dirty = self.dirty or changed
        elif existing != value:
            node[path[-1]] = value
            self.dirty = True

    def _remove(self, path: tuple[str, ...]) -> None:
        parents = []
        node: Any = self.data
        for part in path[:-1]:
            if not isinstance(node, dict) or part not in node:
                return
            parents.append((node, part))
            node = node[part]
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            self.dirty = True
            # a section our removal emptied goes too (no stray "resilience: {}")
            for parent, key in reversed(parents):
                if isinstance(parent[key], dict) and not parent[key]:
                    del parent[key]
                else:
                    break

    # -- text and saving -------------------------------------------------------------

    def text(self) -> str:
        buffer = io.StringIO()
        self.yaml.dump(self.data, buffer)
        return buffer.getvalue()

    def check_save(self, text: str, target: Path) -> None:
        """Raise :class:`SaveRefused` unless writing ``text`` to ``target`` is safe."""
        try:
            reparsed = _yaml().load(text)
        except Exception as err:
            raise SaveRefused(f"the edited document does not parse back ({err}); nothing was written") from None
        if _plain(reparsed) != _plain(self.data):
            raise SaveRefused("the edited document does not round-trip to the same data; nothing was written")
        if target == self.path and target.exists():
            on_disk = target.read_text(encoding="utf-8")
            if hashlib.sha256(on_disk.encode()).hexdigest() != self.original_hash:
                raise SaveRefused(f"{target} changed on disk since it was opened; reopen it (ctrl+o) or save under another name")
            missing = [c for c in comment_lines(self.original_text) if c not in set(comment_lines(text))]
            if missing:
                raise SaveRefused(
                    "saving would drop comment line(s) from the file: " + "; ".join(missing[:3])
                    + ". Nothing was written; save under another name to keep both"
                )

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
        self.original_text = text
        self.original_hash = hashlib.sha256(text.encode()).hexdigest()
        self.dirty = False
        return target
