"""Load a YAML mapping while remembering where every key came from.

PyYAML's composer gives nodes with marks; we build plain Python data from them ourselves so
that we can (a) report duplicate keys with both lines, (b) record a position for every key
path, and (c) bound alias expansion ("billion laughs") by counting constructed nodes.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError, Position, clip, shown

MAX_FILE_BYTES = 1024 * 1024
# Far above any real tau.yaml, far below what would take seconds or hundreds of MB to build.
MAX_CONSTRUCTED_NODES = 100_000
# Aliases can repeat a long string without adding nodes: bound the characters built, too.
MAX_EXPANDED_CHARS = 2 * MAX_FILE_BYTES
# Run configs nest four or five levels; deeper input is refused before Python's recursion limit.
MAX_DEPTH = 64
# A number with more digits than this is a typo or an attack, and int() on it is quadratic.
MAX_NUMBER_DIGITS = 64

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
TAG_WORDS = {_INT: "a whole number", _FLOAT: "a number", _TIMESTAMP: "a timestamp", "tag:yaml.org,2002:binary": "base64 data"}
_SURROGATE = re.compile("[\ud800-\udfff]")


class _DepthBound:
    """Nesting deeper than MAX_DEPTH stops with a position instead of a RecursionError."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)  # type: ignore[attr-defined]
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


class _TauLoader(_DepthBound, yaml.SafeLoader):
    """YAML 1.1 minus the surprises: `1:30` (base 60) and `010` (octal) stay text instead of 90 and 8,
    an unquoted date stays the text the user wrote (an explicit !!timestamp is still checked), and
    nesting is bounded (_DepthBound)."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _FLOAT, _TIMESTAMP)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_TauLoader.add_implicit_resolver(
    _INT,
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_TauLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _no_base_60(constructor: Any) -> Any:
    def construct(loader: Any, node: yaml.ScalarNode) -> Any:
        if ":" in str(node.value):
            raise ValueError("base-60 (sexagesimal) numbers are not accepted")
        return constructor(loader, node)

    return construct


_TauLoader.add_constructor(_INT, _no_base_60(yaml.constructor.SafeConstructor.construct_yaml_int))
_TauLoader.add_constructor(_FLOAT, _no_base_60(yaml.constructor.SafeConstructor.construct_yaml_float))


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class _FastTauLoader(_DepthBound, yaml.composer.Composer, CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """The same loader with libyaml's scanner and parser (10-30x faster); composing stays in Python so
        that nesting is bounded and every node keeps its position."""

        yaml_implicit_resolvers = _TauLoader.yaml_implicit_resolvers
        yaml_constructors = _TauLoader.yaml_constructors

        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)

    _PARSING_LOADER: type = _FastTauLoader
else:
    _PARSING_LOADER = _TauLoader


def _compose_all(text: str) -> list[yaml.Node]:
    try:
        return list(yaml.compose_all(text, Loader=_PARSING_LOADER))
    except yaml.YAMLError:
        if _PARSING_LOADER is _TauLoader:
            raise
    # A syntax error: parse again in Python for PyYAML's own wording and position of the problem.
    return list(yaml.compose_all(text, Loader=_TauLoader))


class _TooDeep(yaml.MarkedYAMLError):
    def __init__(self, mark: yaml.Mark) -> None:
        super().__init__(problem=f"nesting is deeper than {MAX_DEPTH} levels", problem_mark=mark)
        self.mark = mark  # the base class types problem_mark as optional; here it is always set


KeyPath = tuple[str | int, ...]


def format_path(path: KeyPath) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            # A key is user input: a 500 KB key is shown by its start, like any other echoed value.
            part = clip(part)
            text += f".{part}" if text else part
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
        self.expanded_chars = 0
        self._scalars = _TauLoader("")

    def _count(self, node: yaml.Node) -> None:
        self.constructed += 1
        if isinstance(node, yaml.ScalarNode):
            self.expanded_chars += len(node.value)
        if self.constructed > MAX_CONSTRUCTED_NODES:
            raise _AliasBudgetExceeded(f"YAML aliases expand to more than {MAX_CONSTRUCTED_NODES} nodes")
        if self.expanded_chars > MAX_EXPANDED_CHARS:
            raise _AliasBudgetExceeded(f"YAML aliases expand to more than {MAX_EXPANDED_CHARS:,} characters")

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self._count(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.positions.setdefault(path + (index,), _pos(item))
                items.append(self.build(item, path + (index,)))
            return items
        return self.scalar(node, path)

    def scalar(self, node: yaml.Node, path: KeyPath) -> Any:
        """One scalar as Python data; a value its tag cannot read becomes a message at its position."""
        if node.tag in (_INT, _FLOAT) and len(str(node.value).lstrip("+-")) > MAX_NUMBER_DIGITS:
            digits = len(str(node.value).lstrip("+-"))
            self._value_problem(node, path, f"is a number of {digits:,} digits", "no setting takes a number this long; check the value")
            return str(node.value)
        try:
            value = self._scalars.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as err:
            self._value_problem(node, path, err.problem or "cannot read this value", "remove the tag or quote the value")
            return str(node.value)
        except Exception as err:  # PyYAML's constructors fail with whatever the text provokes (KeyError, IndexError…)
            word = TAG_WORDS.get(node.tag, node.tag)
            self._value_problem(node, path, f"{shown(node.value)} is not {word} ({clip(str(err))})", "fix the value, or quote it to mean text")
            return str(node.value)
        # Dates, timestamps and binary data are kept as the text the user wrote.
        if not isinstance(value, (str, int, float, bool, type(None))):
            return str(node.value)
        if isinstance(value, str) and (surrogate := _SURROGATE.search(value)):
            # "\ud800" in a double-quoted string: not text, and it cannot be encoded to send anywhere.
            self._value_problem(node, path, f"contains a lone surrogate ({shown(surrogate.group())}), which is not text", "remove the \\uD800-\\uDFFF escape")
            return value.encode("utf-8", "replace").decode("utf-8")
        return value

    def _value_problem(self, node: yaml.Node, path: KeyPath, message: str, hint: str) -> None:
        self.diagnostics.append(Diagnostic(self.file, message, path=format_path(path), position=_pos(node), hint=hint))

    def _mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        seen: dict[str, Position] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged.update(self._merge_sources(value_node, path))
                continue
            if isinstance(key_node, yaml.ScalarNode):
                self._count(key_node)
                key = self.scalar(key_node, path)
            else:
                key = None
            if not isinstance(key, str):
                what = shown(key) if isinstance(key_node, yaml.ScalarNode) else "a list or mapping"
                self.diagnostics.append(
                    Diagnostic(
                        self.file,
                        f"keys must be plain strings (got {what})",
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
        documents = _compose_all(text)
    except _TooDeep as err:
        raise DiagnosticError(
            [Diagnostic(file, f"YAML {err.problem}", position=Position(err.mark.line + 1, err.mark.column + 1), hint="flatten the structure; a run config never nests this deep")]
        ) from None
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
    except _AliasBudgetExceeded as err:
        raise DiagnosticError(
            [Diagnostic(file, str(err), hint="remove the nested anchors/aliases; a run config never needs that many values")]
        ) from None
    except yaml.YAMLError as err:
        raise DiagnosticError([Diagnostic(file, f"YAML value error: {err}", hint="check the value's type and quoting")]) from None
    except RecursionError:
        raise DiagnosticError([Diagnostic(file, "YAML nesting is too deep", hint="flatten the structure")]) from None
    if builder.diagnostics:
        raise DiagnosticError(builder.diagnostics)
    return data, SourceMap(file, builder.positions)


class FileRefused(Exception):
    """A local file that is not read: missing, not a regular file, too large, or outside where it may be."""

    def __init__(self, message: str, hint: str, size: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.size = size  # set when the only problem is the size


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def _os_problem(err: OSError) -> FileRefused:
    if isinstance(err, FileNotFoundError):
        return FileRefused("file not found", "check the path")
    if err.errno == errno.ENAMETOOLONG:
        return FileRefused("the path or one of its names is too long for the file system", "check the path")
    if err.errno == errno.ELOOP:
        return FileRefused("the path loops through symbolic links", "check the path")
    if err.errno == errno.ENOTDIR:
        return FileRefused("a part of the path is not a directory", "check the path")
    return FileRefused(f"cannot read the file: {err.strerror}", "check the path and its permissions")


def file_mode(path: Path | str) -> int:
    """stat() of a path the user named, as a FileRefused instead of the many ways it can fail."""
    if "\x00" in str(path):
        raise FileRefused("the path contains a NUL character", "check the path")
    try:
        return os.stat(path).st_mode
    except OSError as err:
        raise _os_problem(err) from None
    except ValueError:
        raise FileRefused("the path cannot be used on this system", "check the path") from None


def read_regular_file(path: Path | str, limit: int) -> bytes:
    """Read at most `limit` bytes of a regular file; anything else (FIFO, device, directory) is refused
    before it is opened for reading, so nothing blocks and nothing grows without bound."""
    mode = file_mode(path)
    kind = _not_regular(mode)
    if kind is not None:
        hint = "point at the file inside it" if stat.S_ISDIR(mode) else "point at a regular file"
        raise FileRefused(f"is {kind}, not a regular file", hint)
    size = os.stat(path).st_size
    if size > limit:
        raise FileRefused(f"is {size:,} bytes; the limit is {limit:,}", "", size=size)
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open() still returns at once.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise _os_problem(err) from None
    with os.fdopen(fd, "rb") as handle:
        kind = _not_regular(os.fstat(fd).st_mode)
        if kind is not None:
            raise FileRefused(f"is {kind}, not a regular file", "point at a regular file")
        try:
            raw = handle.read(limit + 1)
        except OSError as err:
            raise _os_problem(err) from None
    if len(raw) > limit:
        raise FileRefused(f"grew past {limit:,} bytes while it was read", "", size=len(raw))
    return raw


def read_text_file(path: Path, label: str | None = None) -> str:
    """Read a small UTF-8 text file, turning every failure into a Diagnostic."""
    name = label or str(path)
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES)
    except FileRefused as refused:
        if refused.size is not None:
            raise DiagnosticError(
                [Diagnostic(name, f"the file is {refused.size / 1024 / 1024:.1f} MiB; the limit is {MAX_FILE_BYTES // 1024 // 1024} MiB", hint="a run config is a few KiB: check you opened the right file, and move large data to storage")]
            ) from None
        raise DiagnosticError([Diagnostic(name, refused.message, hint=refused.hint)]) from None
    if b"\x00" in raw:
        raise DiagnosticError([Diagnostic(name, "this looks like a binary file, not YAML (it contains NUL bytes)", hint="point at the tau.yaml text file")])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DiagnosticError(
            [Diagnostic(name, f"not valid UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})", position=Position(line, 1), hint="save the file as UTF-8")]
        ) from None


def resolve_inside(base: Path, relative: str) -> Path:
    """`base/relative` with every symbolic link resolved, refused if it leaves `base` (also resolved).

    Files named in a config go into cluster objects; a link out of the config's directory would carry
    any local file (a key, a token) to everyone who can read those objects."""
    if "\x00" in relative or "\x00" in str(base):
        raise FileRefused("the path contains a NUL character", "check the path")
    root = os.path.realpath(base)
    target = os.path.realpath(os.path.join(root, relative))
    if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
        raise FileRefused(
            f"{shown(relative)} leads outside {root} (through a symbolic link, to {shown(target)})",
            "copy the file into the config's directory; tau-tui never follows a symbolic link out of it",
        )
    return Path(target)


def load_mapping_file(path: Path, label: str | None = None) -> tuple[dict[str, Any], SourceMap]:
    name = label or str(path)
    return load_mapping_text(read_text_file(path, name), name)
