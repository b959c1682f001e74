"""Diagnostics: one actionable message per problem, pointing at file:line:column and a key path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Longest echo of one user value, and of any one part of a message: a 500 KB name is shown as its start.
MAX_SHOWN_CHARS = 80
MAX_PART_CHARS = 2000
# More messages than this are summarised ("… and 29,990 more"): nobody reads the 30,000th.
MAX_MESSAGES = 50
# C0/C1 controls (newline included: one message is one line), DEL, and the bidirectional overrides that reorder what the terminal shows.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_control(text: str) -> str:
    """User text made safe for a terminal: control characters become visible escapes, never raw."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """The start of a long text and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """How a user value is echoed in a message: repr-quoted, escaped, and cut to a bounded length."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value))) if value.bit_length() < 14_000 else None
        if digits is None or digits > 24:
            return f"an integer of {digits or 'over 4,000'} digits"
    text = repr(value)
    return escape_control(clip(text, limit))


@dataclass(frozen=True)
class Position:
    """1-based line and column inside a file."""

    line: int
    column: int


@dataclass(frozen=True)
class Diagnostic:
    """A problem in user input.

    `path` is the dotted key path (``compute.gpus``, ``storage.image_assets[2].image``);
    empty for file-level problems. `hint` says what to do about it.
    """

    file: str
    message: str
    path: str = ""
    position: Position | None = None
    hint: str = ""
    severity: str = "error"

    def location(self) -> str:
        file = _safe(self.file)
        if self.position is None:
            return file
        return f"{file}:{self.position.line}:{self.position.column}"

    def __str__(self) -> str:
        head = self.location()
        path, message = _safe(self.path), _safe(self.message)
        text = f"{head} {path}: {message}" if path else f"{head}: {message}"
        if self.severity != "error":
            text = f"{text} [{self.severity}]"
        if self.hint:
            text = f"{text}\n  fix: {_safe(self.hint)}"
        return text


def _safe(part: str) -> str:
    # The last guard for every message part: whatever a check echoed, the terminal gets escaped, bounded text.
    return clip(escape_control(part), MAX_PART_CHARS)


def report_lines(diagnostics: list[Diagnostic], limit: int = MAX_MESSAGES) -> list[str]:
    """The messages to print: at most `limit`, then one line that counts the rest."""
    lines = [str(d) for d in diagnostics[:limit]]
    if len(diagnostics) > limit:
        lines.append(f"… and {len(diagnostics) - limit:,} more")
    return lines


@dataclass
class DiagnosticError(Exception):
    """Raised when input cannot be used; carries every problem found, not just the first."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Report in file order, so the list reads top to bottom like the file.
        self.diagnostics = sorted(self.diagnostics, key=lambda d: (d.position.line, d.position.column) if d.position else (0, 0))

    def __str__(self) -> str:
        return "\n".join(report_lines(self.diagnostics))
