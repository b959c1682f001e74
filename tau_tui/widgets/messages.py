"""The messages the command line and the log view post (the table's are in ``table_messages.py``).

Each widget also names its own as class attributes (``CommandLine.Submitted``,
``LogView.FollowChanged``), as Textual's widgets do.  The class names keep the handler names
those nested classes had (``on_command_line_submitted``, ``on_log_view_indexed``…).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from textual.message import Message


@dataclass
class CommandLineSubmitted(Message):
    """Enter in the command line."""

    #: "command", "filter" or "search"
    mode: str
    text: str


@dataclass
class CommandLineChanged(Message):
    """The filter text as typed (filter mode only)."""

    mode: str
    text: str


@dataclass
class LogViewFollowChanged(Message):
    """The log view started or stopped following the end of the log."""

    following: bool


@dataclass
class LogViewWindowLoaded(Message):
    """Lines ``start..`` read by the window worker (committed lines only)."""

    generation: int
    start: int
    lines: list[str]


@dataclass
class LogViewIndexed(Message):
    """The index worker read lines ``start..upto`` (and laid them out)."""

    layout: int
    start: int
    upto: int
    row_starts: array
    rows_end: int
    max_width: int
    tail_start: int
    tail: list[str]
    partials: list[str]


@dataclass
class LogViewLayoutDone(Message):
    """A whole-spool re-layout (wrap / JSON toggle, width change) finished."""

    lines: int
    rows: int
