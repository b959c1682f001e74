"""The messages the screens post to themselves from their worker threads.

Each keeps the handler name it had as a class nested in its screen (``namespace=``), so an
``on_<screen>_<message>`` handler still finds it; the screens handle them with ``@on``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from tau_tui.screens.pane_reader import PaneRead, ReadAbandoned, ReadFailed, ReadOutcome

if TYPE_CHECKING:  # the types of fields only: the compose and logs panes load when first opened
    from tau_tui.core.cluster.logspool.log_requests import LogRequest
    from tau_tui.core.cluster.logspool.stream import LogStream
    from tau_tui.core.operations.compose_drafts import Draft
    from tau_tui.core.runconfig.document import ComposeDocument
    from tau_tui.screens.compose_form import Validation

# -- a pane's read (pane_reader.py) ------------------------------------------


@dataclass
class Collected(Message, namespace="pane_screen"):
    """A refresh's read came: shown unless a newer refresh started since."""

    read: PaneRead


@dataclass
class CollectFailed(Message, namespace="pane_screen"):
    error: str


@dataclass
class CollectAbandoned(Message, namespace="pane_screen"):
    """The pane left the screen while it read: the read stopped, nothing to show."""


def read_message(outcome: ReadOutcome) -> Message:
    """The message that carries a read's outcome to the UI thread."""
    if isinstance(outcome, PaneRead):
        return Collected(outcome)
    if isinstance(outcome, ReadFailed):
        return CollectFailed(outcome.error)
    assert isinstance(outcome, ReadAbandoned)
    return CollectAbandoned()


# -- the compose pane (compose.py) -------------------------------------------


@dataclass
class Validated(Message, namespace="compose_screen"):
    """A validation of the form's document ended (``generation``: the edit it was made for)."""

    result: Validation
    generation: int


@dataclass
class ServerDryRunDone(Message, namespace="compose_screen"):
    ok: bool
    text: str


@dataclass
class FileOpened(Message, namespace="compose_screen"):
    """A tau.yaml was read (``document``), or why not (``error``); ``draft``: the unsaved form a
    session that ended kept for it."""

    document: ComposeDocument | None
    error: str = ""
    draft: Draft | None = None


@dataclass
class DraftFound(Message, namespace="compose_screen"):
    """The draft a session that ended kept for the new, unsaved form."""

    draft: Draft


@dataclass
class FileSaved(Message, namespace="compose_screen"):
    """``saved`` (a snapshot of ``source``, the form's document) was written to ``path``, or why
    not (``error``); ``warning``: written as typed, but it will not validate."""

    path: str
    error: str = ""
    source: ComposeDocument | None = None
    saved: ComposeDocument | None = None
    warning: str = ""


# -- the logs pane (logs.py) -------------------------------------------------


@dataclass
class StreamOpened(Message, namespace="logs_screen"):
    stream: LogStream
    request: LogRequest
    title: str


@dataclass
class StreamFailed(Message, namespace="logs_screen"):
    message: str


@dataclass
class SearchDone(Message, namespace="logs_screen"):
    """The lines (``hits``) of the log that match ``pattern``, or why the search failed."""

    pattern: re.Pattern[str]
    hits: list[int]
    error: str = ""


@dataclass
class Saved(Message, namespace="logs_screen"):
    """The log was saved to ``path`` (``lines`` of it), or why not; ``note``: what was left out."""

    path: str
    lines: int
    error: str = ""
    note: str = ""
