"""An oracle for what a Compose save may write, independent of the writer (ruamel.yaml): PyYAML
reads the saved text, and the text's lines are compared outside the edited keys' entries.

* every edited key reads, through PyYAML's safe loader (the run-config loader's reader), as the
  value the field's text stands for, type included (``5`` in a number field is 5, in a text field
  "5"); a key whose field reads as the file already did keeps the file's own value;
* every line of the file outside the entries of the edited keys is kept, byte for byte and in
  order; the entry of an edited key is its lines from the key to its value's last line (for a key
  added or removed with its section, the section's; for a key inside a flow collection, that
  collection's entry).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tau_tui.core.runconfig.config import ALIASES

Path = tuple[str, ...]
MISSING = object()


def field_text(value: Any) -> str:
    """What a Compose field shows for ``value`` (docs/guide/researcher.md: lists "a, b", maps "K=v, K2=v")."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(field_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={field_text(v)}" for k, v in value.items())
    return str(value)


def typed_value(kind: str, text: str) -> Any:
    """The value a field's text stands for, by the form's rules: a number field's plain whole number
    is a number, other text stays text; lists are split on commas, maps are KEY=value entries; an
    empty field removes the key.  None also for text a map field cannot take (the save is refused)."""
    text = text.strip()
    if not text:
        return None
    if kind == "int":
        return int(text) if re.fullmatch(r"-?(0|[1-9][0-9]*)", text) else text
    if kind == "list":
        return [part.strip() for part in text.split(",") if part.strip()] or None
    if kind == "map":
        entries = {}
        for part in (p.strip() for p in text.split(",")):
            key, sep, value = part.partition("=")
            if part and (not sep or not key.strip() or key.strip() in entries):
                raise ValueError(part)
            if part:
                entries[key.strip()] = value.strip()
        return entries or None
    return text


def written_path(original: Any, canonical: str) -> Path:
    """Where the file keeps ``canonical``: the first alias the original file uses, else the canonical path."""
    parts = tuple(canonical.split("."))
    for source in ALIASES.get(parts, [parts]):
        if lookup(original, source) is not MISSING:
            return source
    return parts


def lookup(data: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return MISSING
        data = data[part]
    return data


def _entry(node: Any, name: str) -> tuple[Any, Any] | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)


def _last_line(node: Any) -> int:
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1])
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def _anchor(path: Path, here: Any, there: Any) -> Path:
    """The key whose entry an edit of ``path`` rewrites in ``here`` (compared with ``there``)."""
    node_here, node_there = here, there
    for depth in range(1, len(path) + 1):
        found_here, found_there = _entry(node_here, path[depth - 1]), _entry(node_there, path[depth - 1])
        if found_here is None or found_there is None or depth == len(path):
            return path[:depth]
        node_here, node_there = found_here[1], found_there[1]
        for node in (node_here, node_there):
            if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
                return path[:depth]
    return path


def _span(root: Any, path: Path) -> tuple[int, int] | None:
    node, found = root, None
    for part in path:
        found = _entry(node, part)
        if found is None:
            return None
        node = found[1]
    assert found is not None
    key, value = found
    if value.start_mark.index < key.start_mark.index:  # an alias: the composer hands back the anchored node
        return key.start_mark.line, key.start_mark.line
    return key.start_mark.line, _last_line(value)


def lines_outside(text: str, spans: list[tuple[int, int]]) -> list[str]:
    lines = text.splitlines()  # a last line that gains its newline is the same line
    return [line for number, line in enumerate(lines) if not any(a <= number <= b for a, b in spans)]


def spans_of(text: str, other: str, paths: list[Path]) -> list[tuple[int, int]]:
    here, there = yaml.compose(text), yaml.compose(other)
    spans = [_span(here, _anchor(path, here, there)) for path in paths]
    return [s for s in spans if s is not None]


def same_as_typed(expected: Any, actual: Any, before: Any) -> bool:
    """``actual`` (read back) is what the field's text stands for; text the file already had keeps its type."""
    if expected is None:  # cleared: the key goes, unless the file had it empty already
        return actual is MISSING or (before is None and actual is None)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(actual) != list(expected):
            return False
        before = before if isinstance(before, dict) else {}
        return all(same_as_typed(expected[k], actual[k], before.get(k, MISSING)) for k in expected)
    if isinstance(expected, list):
        return isinstance(actual, list) and [field_text(a) for a in actual] == [field_text(e) for e in expected]
    if before is not MISSING and field_text(before) == field_text(expected):
        return field_text(actual) == field_text(expected)
    return type(actual) is type(expected) and actual == expected


def check_save(original: str, saved: str, typed: dict[str, Any]) -> None:
    """Assert the oracle for ``saved``, written from ``original`` with ``typed`` (canonical path → the
    value each edited field's text stands for, None for a cleared field)."""
    before, after = yaml.safe_load(original) or {}, yaml.safe_load(saved) or {}
    paths = [written_path(before, canonical) for canonical in typed]
    for (canonical, expected), path in zip(typed.items(), paths, strict=True):
        actual = lookup(after, path)
        assert same_as_typed(expected, actual, lookup(before, path)), (canonical, expected, actual, saved)
    kept_before = lines_outside(original, spans_of(original, saved, paths))
    kept_after = lines_outside(saved, spans_of(saved, original, paths))
    assert kept_before == kept_after, "\n".join(["lines outside the edited keys changed", original, "----", saved])
