"""Edits to a YAML text that rewrite only the edited keys' own characters.

A round-trip dump of the whole document re-indents sequences, drops a ``---`` and moves a
re-added key to the end of its map; here each edit is a replacement of the characters of one
key's value (or entry), found by the positions ruamel's composer gives every node.  Everything
else in the text stays byte for byte.  A changed scalar keeps its quoting where it can, a map's
untouched entries keep their lines and comments, and a new key goes to the end of the map it
belongs in, indented as its neighbours.  No Textual here."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from tau_tui.core.runconfig.form_text import field_text

KeyPath = tuple[str, ...]
Edit = tuple[int, int, str]  # replace text[start:end] with the string


@dataclass
class Layout:
    """How the file indents: a nested map's step and where a sequence's dash sits under its key."""

    step: int = 2
    dash: int = 2


@dataclass
class Splice:
    """One document's text while edits are applied; ``dropped`` holds the comment lines of the
    entries the edits removed (the user removed those keys; no other comment may go)."""

    text: str
    dropped: list[str] = field(default_factory=list)

    def apply(self, path: KeyPath, value: Any) -> None:
        """Set ``path`` to ``value`` (None removes the key), in place."""
        root, data = _parse(self.text)
        layout = _layout(self.text, root)
        if value is None:
            edits = _remove(self, root, path)
        else:
            edits = _set(self, root, data, path, value, layout)
        _keep_anchors(self.text, edits)
        self.text = _apply(self.text, edits)

    def drop_comments(self, start: int, end: int) -> None:
        self.dropped += [line.strip() for line in self.text[start:end].splitlines() if "#" in line]


class AnchorInUse(ValueError):
    """The edit would rewrite a value other keys refer to through an alias (``&name`` … ``*name``)."""


_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)")


def _keep_anchors(text: str, edits: list[Edit]) -> None:
    """Refuse edits that would take away an anchor an alias elsewhere still uses: the alias would
    then follow the new value (or dangle), changing a key nobody edited."""
    for start, end, replacement in edits:
        for name in _ANCHOR.findall(text[start:end]):
            used = re.compile(r"\*" + re.escape(name) + r"(?![^\s,\[\]{}])")
            if f"&{name}" not in replacement and (used.search(text[:start]) or used.search(text[end:])):
                raise AnchorInUse(f"this value carries the anchor &{name}, which *{name} elsewhere in the file "
                                  f"refers to; change it in the file itself")


def _parse(text: str) -> tuple[Node | None, Any]:
    """The text's node tree (with each node's position) and its data, from one parse."""
    yaml = YAML(typ="rt")
    root = yaml.compose(text)
    return root, (yaml.constructor.construct_document(root) if root is not None else None)


def _apply(text: str, edits: list[Edit]) -> str:
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """Just past the newline that ends the line holding ``index`` (or the text's end)."""
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _is_block(node: Node) -> bool:
    return isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style and bool(node.value)


def _layout(text: str, root: Node | None) -> Layout:
    layout = Layout()
    found_step = found_dash = False
    stack = [root] if root is not None else []
    while stack and not (found_step and found_dash):
        node = stack.pop()
        if not isinstance(node, MappingNode) or not _is_block(node):
            continue
        for key, value in node.value:
            if _is_block(value) and isinstance(value, MappingNode) and not found_step:
                layout.step = max(1, value.value[0][0].start_mark.column - key.start_mark.column)
                found_step = True
            if _is_block(value) and isinstance(value, SequenceNode) and not found_dash:
                first = value.value[0].start_mark.index
                dash = text[_line_start(text, first):first].find("-")
                layout.dash = max(0, dash - key.start_mark.column)
                found_dash = True
            stack.append(value)
    return layout


# -- where a value and an entry are in the text ---------------------------------------------------


def _colon_end(text: str, key: Node) -> int:
    return text.index(":", key.end_mark.index) + 1


def _is_alias(key: Node, value: Node) -> bool:
    """An alias (``*name``): the composer hands back the anchored node, which sits before the key."""
    return bool(value.start_mark.index < key.end_mark.index)


def _is_empty(value: Node) -> bool:
    return isinstance(value, ScalarNode) and value.value == "" and value.style is None


def _value_span(text: str, key: Node, value: Node) -> tuple[int, int]:
    """The characters of ``value`` after ``key:`` (an empty value: the point after the colon)."""
    if _is_alias(key, value) or _is_empty(value):
        start = _colon_end(text, key)
        while start < len(text) and text[start] in " \t":
            start += 1
        if _is_empty(value) or text[start] != "*":
            return _colon_end(text, key), _colon_end(text, key)
        end = start
        while end < len(text) and not text[end].isspace():
            end += 1
        return start, end
    return value.start_mark.index, value.end_mark.index


def _node_end(text: str, node: Node) -> int:
    """Just past the last line holding ``node`` (a comment on that line included)."""
    if _is_block(node):
        if isinstance(node, MappingNode):
            key, value = node.value[-1]
            return _entry_end(text, key, value)
        return _node_end(text, node.value[-1])
    end = node.end_mark.index
    if isinstance(node, ScalarNode) and node.style in ("|", ">"):
        return end if end > 0 and text[end - 1] == "\n" else _line_end(text, end)
    return _line_end(text, max(end - 1, node.start_mark.index))


def _entry_end(text: str, key: Node, value: Node) -> int:
    if _is_alias(key, value) or _is_empty(value):
        return _line_end(text, _value_span(text, key, value)[1])
    return _node_end(text, value)


def _single_line(text: str, key: Node, value: Node) -> bool:
    start, end = _value_span(text, key, value)
    return not _is_block(value) and "\n" not in text[key.start_mark.index:end] and not (
        isinstance(value, ScalarNode) and value.style in ("|", ">"))


# -- rendering new text ---------------------------------------------------------------------------


def _dump_scalar(value: Any) -> str:
    yaml = YAML(typ="rt")
    yaml.width = 1 << 30
    buffer = io.StringIO()
    yaml.dump([value], buffer)
    return buffer.getvalue().rstrip("\n")[2:]


def _reads_back(rendered: str, value: Any) -> bool:
    """Whether the run-config loader (PyYAML, YAML 1.1: ``yes`` is a bool, ``1:30`` a number)
    reads ``rendered`` as ``value``, type included."""
    try:
        read = pyyaml.safe_load(rendered)
    except pyyaml.YAMLError:
        return False
    return type(read) is type(value) and read == value and (not isinstance(value, list)
                                                            or all(type(a) is type(b) for a, b in zip(read, value, strict=True)))


def render_scalar(value: Any, like: Node | None = None) -> str:
    """``value`` as one YAML scalar; a string keeps the quoting of the scalar it replaces, and is
    quoted wherever either YAML reader would read it as something else."""
    if isinstance(value, str):
        style = like.style if isinstance(like, ScalarNode) else None
        if style == '"' or "\n" in value or not value.isprintable():
            value = DoubleQuotedScalarString(value)
        elif style == "'":
            value = SingleQuotedScalarString(value)
    rendered = _dump_scalar(value)
    if isinstance(value, str) and not _reads_back(rendered, str(value)):
        rendered = _dump_scalar(DoubleQuotedScalarString(value) if not value.isprintable() else SingleQuotedScalarString(value))
    return rendered


def render_flow(value: dict[Any, Any] | list[Any]) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render_scalar(k)}: {render_flow_item(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(render_flow_item(v) for v in value) + "]"


def render_flow_item(value: Any, like: Node | None = None) -> str:
    """A value inside ``[...]`` or ``{...}``, where ``,[]{}`` end a plain scalar: quoted when they would."""
    if isinstance(value, (dict, list)):
        return render_flow(value)
    rendered = render_scalar(value, like)
    if isinstance(value, str) and not _reads_back("[" + rendered + "]", [value]):
        rendered = _dump_scalar(SingleQuotedScalarString(value) if value.isprintable() else DoubleQuotedScalarString(value))
    return rendered


def render_lines(value: dict[Any, Any] | list[Any], indent: int, layout: Layout) -> str:
    """A map's or a sequence's block lines, each line at ``indent``, each ending in a newline."""
    pad = " " * indent
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                child = indent + (layout.step if isinstance(item, dict) else layout.dash)
                out.append(f"{pad}{render_scalar(key)}:\n{render_lines(item, child, layout)}")
            else:
                out.append(f"{pad}{render_scalar(key)}: {render_flow_item(item)}\n")
    else:
        out += [f"{pad}- {render_flow_item(item)}\n" for item in value]
    return "".join(out)


def render_entry(key: str, value: Any, indent: int, layout: Layout) -> str:
    if isinstance(value, (dict, list)) and value:
        return render_lines({key: value}, indent, layout)
    return f"{' ' * indent}{render_scalar(key)}: {render_flow_item(value)}\n"


# -- setting a value ------------------------------------------------------------------------------


def _entry(node: Node | None, name: str) -> tuple[Node, Node] | None:
    if not isinstance(node, MappingNode):
        return None
    return next(((k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == name), None)


def _nest(path: KeyPath, value: Any) -> Any:
    for part in reversed(path):
        value = {part: value}
    return value


def _set(splice: Splice, root: Node | None, data: Any, path: KeyPath, value: Any, layout: Layout) -> list[Edit]:
    text = splice.text
    node, parent_entry, depth = root, None, 0
    while depth < len(path):
        found = _entry(node, path[depth])
        if found is None:
            break
        key, child = found
        if depth == len(path) - 1 or not isinstance(data.get(path[depth]) if isinstance(data, dict) else None, dict):
            old = data.get(path[depth]) if isinstance(data, dict) else None
            in_flow = isinstance(node, MappingNode) and bool(node.flow_style)
            return _value_edits(splice, key, child, old, _nest(path[depth + 1:], value), layout, in_flow)
        node, parent_entry, data, depth = child, found, data[path[depth]], depth + 1
    return _insert(splice, text, node, parent_entry, data, path[depth], _nest(path[depth + 1:], value), layout)


def _insert(splice: Splice, text: str, node: Node | None, parent_entry: tuple[Node, Node] | None,
            data: Any, name: str, value: Any, layout: Layout) -> list[Edit]:
    """A key the map ``node`` lacks: after its last entry, indented as its entries."""
    if isinstance(node, MappingNode) and _is_block(node):
        last_key, last_value = node.value[-1]
        at = _entry_end(text, last_key, last_value)
        lead = "" if at == 0 or text[at - 1] == "\n" else "\n"
        return [(at, at, lead + render_entry(name, value, node.value[0][0].start_mark.column, layout))]
    if isinstance(node, MappingNode) and node.value:  # a flow map keeps its style and its entries' text
        entries = [text[k.start_mark.index:_value_span(text, k, v)[1]] for k, v in node.value]
        entries.append(f"{render_scalar(name)}: {render_flow_item(value)}")
        return [(node.start_mark.index, node.end_mark.index, "{" + ", ".join(entries) + "}")]
    if parent_entry is not None:  # an empty map under a key: becomes a block
        key, child = parent_entry
        return _value_edits(splice, key, child, data, {name: value}, layout)
    if isinstance(node, MappingNode):  # the whole document is "{}"
        return [(node.start_mark.index, node.end_mark.index, render_entry(name, value, 0, layout).rstrip("\n"))]
    lead = "" if not text or text.endswith("\n") else "\n"
    return [(len(text), len(text), lead + render_entry(name, value, 0, layout))]


def _value_edits(splice: Splice, key: Node, node: Node, old: Any, new: Any, layout: Layout,
                 in_flow: bool = False) -> list[Edit]:
    """Edits that make the value of ``key`` (``node``, loaded as ``old``) read ``new``; ``in_flow``:
    the key is inside ``{...}``, where a value stays on its line and ``,[]{}`` need quotes."""
    text = splice.text
    collection = isinstance(new, (dict, list))
    if field_text(old) == field_text(new) and (type(old) is type(new) or not collection):
        return []  # the same text (4 and "4" too): the file keeps its spelling
    if isinstance(new, dict) and isinstance(node, MappingNode) and _is_block(node):
        return _map_edits(splice, node, old if isinstance(old, dict) else {}, new, layout)
    if isinstance(new, list) and isinstance(node, SequenceNode) and _is_block(node):
        return _sequence_edits(splice, node, old, new)
    if field_text(old) == field_text(new):
        return []
    start, end = _value_span(text, key, node)
    alias = _is_alias(key, node)
    if in_flow:
        return [(start, end, (" " if _is_empty(node) else "") + render_flow_item(new, node))]
    if not collection and (isinstance(node, ScalarNode) or alias):
        block_scalar = isinstance(node, ScalarNode) and node.style in ("|", ">") and not alias
        tail = "\n" if block_scalar and text[end - 1] == "\n" else ""
        return [(start, end, (" " if _is_empty(node) else "") + render_scalar(new, node) + tail)]
    if collection and isinstance(node, (MappingNode, SequenceNode)) and node.flow_style and node.value and not alias:
        return [(start, end, render_flow(new))]  # a flow collection keeps its style
    colon = _colon_end(text, key)
    if not collection:  # a scalar where a collection was
        entry_end = _entry_end(text, key, node)
        splice.drop_comments(colon, entry_end)
        return [(colon, entry_end, " " + render_scalar(new) + "\n")]
    # a block where there was a scalar, an empty map or another shape: below the key's line
    indent = key.start_mark.column + (layout.step if isinstance(new, dict) else layout.dash)
    if _single_line(text, key, node):
        line_end = _line_end(text, colon)
        kept = text[end:line_end]  # a comment after the old value stays on the key's line
        return [(colon, line_end, kept if kept.endswith("\n") else kept + "\n"),
                (line_end, line_end, render_lines(new, indent, layout))]
    entry_end = _entry_end(text, key, node)
    splice.drop_comments(colon, entry_end)
    return [(colon, entry_end, "\n" + render_lines(new, indent, layout))]


def _chunks(text: str, nodes: list[tuple[Node | None, Node]]) -> tuple[int, list[tuple[int, int]]]:
    """Each entry's (or item's) characters: from the end of the one before (its leading comments
    and blank lines come with it) to the end of its own last line."""
    first_key = nodes[0][0] if nodes[0][0] is not None else nodes[0][1]
    start = _line_start(text, first_key.start_mark.index)
    bounds, previous = [], start
    for key, value in nodes:
        end = _entry_end(text, key, value) if key is not None else _node_end(text, value)
        bounds.append((previous, end))
        previous = end
    return start, bounds


def _rebuild(splice: Splice, start: int, bounds: list[tuple[int, int]], pieces: list[str], used: set[int]) -> Edit:
    text = splice.text
    end = bounds[-1][1]
    for index, (s, e) in enumerate(bounds):
        if index not in used:
            splice.drop_comments(s, e)
    body = "".join(piece if piece.endswith("\n") else piece + "\n" for piece in pieces)
    if not text[start:end].endswith("\n"):
        body = body[:-1]
    return start, end, body


def _map_edits(splice: Splice, node: MappingNode, old: dict[Any, Any], new: dict[Any, Any], layout: Layout) -> list[Edit]:
    text = splice.text
    entries = [(k, v) for k, v in node.value]
    names = [str(k.value) for k, _ in entries]
    start, bounds = _chunks(text, entries)
    inner: list[Edit] = []
    for (key, value), name in zip(entries, names, strict=True):
        if name in new:
            inner += _value_edits(splice, key, value, old.get(name), new[name], layout)
    kept = [n for n in new if n in names]
    if kept == names and len(new) == len(names):  # the same keys in the same order: only values change
        return inner
    indent = entries[0][0].start_mark.column
    pieces, used = [], set()
    for name, value in new.items():
        if name in names:
            index = names.index(name)
            used.add(index)
            s, e = bounds[index]
            pieces.append(_apply(text[s:e], [(a - s, b - s, r) for a, b, r in inner if s <= a and b <= e]))
        else:
            pieces.append(render_entry(name, value, indent, layout))
    return [_rebuild(splice, start, bounds, pieces, used)]


def _sequence_edits(splice: Splice, node: SequenceNode, old: list[Any], new: list[Any]) -> list[Edit]:
    text = splice.text
    items = list(node.value)
    shown = [field_text(item) for item in (old if isinstance(old, list) else [])]
    start, bounds = _chunks(text, [(None, item) for item in items])
    first = items[0].start_mark.index
    prefix = text[_line_start(text, first):first]  # "  - ": new items are written as the first one
    if prefix.strip() != "-":
        prefix = " " * max(prefix.find("-"), 0) + "- "
    pieces, used = [], []
    for value in new:
        match = next((i for i, s in enumerate(shown) if s == field_text(value) and i not in used), None)
        if match is None:
            pieces.append(f"{prefix}{render_flow_item(value)}\n")
            used.append(-1)
        else:
            used.append(match)
            pieces.append(text[bounds[match][0]:bounds[match][1]])
    if used == list(range(len(items))):
        return []
    return [_rebuild(splice, start, bounds, pieces, {i for i in used if i >= 0})]


# -- removing a key -------------------------------------------------------------------------------


def _remove(splice: Splice, root: Node | None, path: KeyPath) -> list[Edit]:
    text = splice.text
    node: Node | None = root
    nodes: list[tuple[Node, tuple[Node, Node]]] = []
    for depth, name in enumerate(path):
        found = _entry(node, name)
        if found is None:
            return []
        assert node is not None  # _entry found one in it
        nodes.append((node, found))
        if depth < len(path) - 1:
            node = found[1]
    # a map the removal empties goes too (no stray "resilience: {}"), up to the document
    while len(nodes) > 1 and len(nodes[-1][0].value) == 1:
        nodes.pop()
    parent, (key, value) = nodes[-1]
    if isinstance(parent, MappingNode) and parent.flow_style:  # the other entries keep their text
        rest = [text[k.start_mark.index:_value_span(text, k, v)[1]] for k, v in parent.value if k is not key]
        return [(parent.start_mark.index, parent.end_mark.index, "{" + ", ".join(rest) + "}")]
    start, end = _line_start(text, key.start_mark.index), _entry_end(text, key, value)
    splice.drop_comments(start, end)
    return [(start, end, "")]
