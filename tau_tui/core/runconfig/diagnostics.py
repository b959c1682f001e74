"""Diagnostics: one actionable message per problem, pointing at file:line:column and a key path."""

from __future__ import annotations

from dataclasses import dataclass, field


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
        if self.position is None:
            return self.file
        return f"{self.file}:{self.position.line}:{self.position.column}"

    def __str__(self) -> str:
        head = self.location()
        text = f"{head} {self.path}: {self.message}" if self.path else f"{head}: {self.message}"
        if self.severity != "error":
            text = f"{text} [{self.severity}]"
        if self.hint:
            text = f"{text}\n  fix: {self.hint}"
        return text


@dataclass
class DiagnosticError(Exception):
    """Raised when input cannot be used; carries every problem found, not just the first."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Report in file order, so the list reads top to bottom like the file.
        self.diagnostics = sorted(self.diagnostics, key=lambda d: (d.position.line, d.position.column) if d.position else (0, 0))

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)
