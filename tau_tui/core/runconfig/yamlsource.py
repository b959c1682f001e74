"""Load a YAML mapping while remembering where every key came from.

PyYAML's composer gives nodes with marks; we build plain Python data from them ourselves so
that we can (a) report duplicate keys with both lines, (b) record a position for every key
path, and (c) bound alias expansion ("billion laughs") by counting constructed nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError, Position

MAX_FILE_BYTES = 1024 * 1024
# Far above any real tau.yaml, far below what would take seconds or hundreds of MB to build.
MAX_CONSTRUCTED_NODES = 100_000

KeyPath = tuple[str | int, ...]


def format_path(path: KeyPath) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass
class SourceMap:
    """Positions of keys (and list items) by key path."""

    file: str
    positions: dict[KeyPath, Position]

    def position_of(self, path: KeyPath) -> Position | None:
        # Fall back to the nearest parent that has a recorded position.
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get(())


class _AliasBudgetExceeded(Exception):
    pass


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions: dict[KeyPath, Position] = {}
        self.diagnostics: list[Diagnostic] = []
        self.constructed = 0
        self._scalars = yaml.SafeLoader("")

    def _count(self) -> None:
        self.constructed += 1
        if self.constructed > MAX_CONSTRUCTED_NODES:
            raise _AliasBudgetExceeded

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self._count()
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.positions.setdefault(path + (index,), _pos(item))
                items.append(self.build(item, path + (index,)))
            return items
        value = self._scalars.construct_object(node, deep=True)
        # Dates and timestamps are kept as the text the user wrote.
        if not isinstance(value, (str, int, float, bool, type(None))):
            return str(node.value)
        return value

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        seen: dict[str, Position] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged.update(self._merge_sources(value_node, path))
                continue
            key = self._scalars.construct_object(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                shown = repr(key) if isinstance(key_node, yaml.ScalarNode) else "a list or mapping"
                self.diagnostics.append(
                    Diagnostic(
                        self.file,
                        f"keys must be plain strings (got {shown})",
                        path=format_path(path),
                        position=_pos(key_node),
                        hint="quote the key or rename it",
                    )
                )
                continue
            key_path = path + (key,)
            if key in seen:
                first = seen[key]
                self.diagnostics.append(
                    Diagnostic(
                        self.file,
                        f"duplicate key (first defined on line {first.line}, again on line {_pos(key_node).line})",
                        path=format_path(key_path),
                        position=_pos(key_node),
                        hint="keep one of the two entries; YAML would silently use the last one",
                    )
                )
                continue
            seen[key] = _pos(key_node)
            self.positions[key_path] = _pos(key_node)
            result[key] = self.build(value_node, key_path)
        for key, value in merged.items():
            result.setdefault(key, value)
        return result

    def _merge_sources(self, node: yaml.Node, path: KeyPath) -> dict[str, Any]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        merged: dict[str, Any] = {}
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                self.diagnostics.append(
                    Diagnostic(
                        self.file,
                        "a merge key (<<) must point at a mapping",
                        path=format_path(path),
                        position=_pos(source),
                        hint="use <<: *anchor where the anchor names a mapping",
                    )
                )
                continue
            for key, value in self._mapping(source, path).items():
                merged.setdefault(key, value)
        return merged


def _pos(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def load_mapping_text(text: str, file: str) -> tuple[dict[str, Any], SourceMap]:
    """Parse YAML text that must hold one mapping. Raises DiagnosticError with every problem."""
    if "\x00" in text:
        raise DiagnosticError(
            [Diagnostic(file, "this looks like a binary file, not YAML (it contains NUL bytes)", hint="point at the tau.yaml text file")]
        )
    if not text.strip():
        raise DiagnosticError(
            [Diagnostic(file, "the file is empty", hint="run `tau-tui init` for an example, or add at least name, image and compute.gpus")]
        )
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        position = Position(mark.line + 1, mark.column + 1) if mark else None
        problem = err.problem or err.context or "invalid YAML"
        raise DiagnosticError(
            [Diagnostic(file, f"YAML syntax error: {problem}", position=position, hint="check indentation and quoting on that line")]
        ) from None
    except yaml.YAMLError as err:
        raise DiagnosticError([Diagnostic(file, f"YAML error: {err}", hint="check the file is valid YAML")]) from None
    except RecursionError:
        raise DiagnosticError([Diagnostic(file, "YAML nesting is too deep", hint="flatten the structure")]) from None
    documents = [d for d in documents if d is not None]
    if not documents:
        raise DiagnosticError([Diagnostic(file, "the file holds no YAML document", hint="add the run configuration")])
    if len(documents) > 1:
        raise DiagnosticError(
            [Diagnostic(file, f"expected one YAML document, found {len(documents)}", position=_pos(documents[1]), hint="remove the extra '---' sections or split them into separate files")]
        )
    root = documents[0]
    if not isinstance(root, yaml.MappingNode):
        kind = "a list" if isinstance(root, yaml.SequenceNode) else f"a single value ({root.value!r})"
        raise DiagnosticError(
            [Diagnostic(file, f"the top level must be a mapping of keys, but it is {kind}", position=_pos(root), hint="write `key: value` lines such as `name: my-run`")]
        )
    builder = _Builder(file)
    builder.positions[()] = _pos(root)
    try:
        data = builder.build(root, ())
    except _AliasBudgetExceeded:
        raise DiagnosticError(
            [Diagnostic(file, f"YAML aliases expand to more than {MAX_CONSTRUCTED_NODES} nodes", hint="remove the nested anchors/aliases; a run config never needs that many values")]
        ) from None
    except yaml.YAMLError as err:
        raise DiagnosticError([Diagnostic(file, f"YAML value error: {err}", hint="check the value's type and quoting")]) from None
    except RecursionError:
        raise DiagnosticError([Diagnostic(file, "YAML nesting is too deep", hint="flatten the structure")]) from None
    if builder.diagnostics:
        raise DiagnosticError(builder.diagnostics)
    return data, SourceMap(file, builder.positions)


def read_text_file(path: Path, label: str | None = None) -> str:
    """Read a small UTF-8 text file, turning every failure into a Diagnostic."""
    name = label or str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DiagnosticError([Diagnostic(name, "file not found", hint="check the path")]) from None
    except OSError as err:
        raise DiagnosticError([Diagnostic(name, f"cannot read the file: {err.strerror}", hint="check the path and its permissions")]) from None
    if path.is_dir():
        raise DiagnosticError([Diagnostic(name, "is a directory, not a file", hint="point at the tau.yaml file inside it")])
    if size > MAX_FILE_BYTES:
        raise DiagnosticError(
            [Diagnostic(name, f"the file is {size / 1024 / 1024:.1f} MiB; the limit is {MAX_FILE_BYTES // 1024 // 1024} MiB", hint="a run config is a few KiB: check you opened the right file, and move large data to storage")]
        )
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DiagnosticError([Diagnostic(name, f"cannot read the file: {err.strerror}", hint="check the path and its permissions")]) from None
    if b"\x00" in raw:
        raise DiagnosticError([Diagnostic(name, "this looks like a binary file, not YAML (it contains NUL bytes)", hint="point at the tau.yaml text file")])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DiagnosticError(
            [Diagnostic(name, f"not valid UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})", position=Position(line, 1), hint="save the file as UTF-8")]
        ) from None


def load_mapping_file(path: Path, label: str | None = None) -> tuple[dict[str, Any], SourceMap]:
    name = label or str(path)
    return load_mapping_text(read_text_file(path, name), name)
