"""A total read from the cache is only a total once the list behind it has ended: before that it
reads "…" (not yet known), and "?" where the kind cannot be read at all, never a zero.  While a filter
hides rows, a count says how many it shows of how many (``5 of 14 nodes``): :class:`CountedStatus`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text

from tau_tui.core.cluster.changes import ViewState, ViewStatus

STILL_LISTING = "…"
UNREADABLE = "?"


def count_text(count: int, *states: ViewState | None) -> str:
    """``count`` as known from the views of ``states`` (a kind not installed holds nothing: known)."""
    statuses = {state.status for state in states if state is not None}
    if ViewStatus.SYNCING in statuses:
        return STILL_LISTING
    if ViewStatus.FORBIDDEN in statuses:
        return UNREADABLE
    return str(count)


def counts_known(*states: ViewState | None) -> bool:
    """Whether every list behind a total has ended and could be read."""
    return not any(state is not None and state.status in (ViewStatus.SYNCING, ViewStatus.FORBIDDEN) for state in states)


@dataclass(frozen=True)
class RowCount:
    """A count of rows in a pane's status line: ``14 nodes``, and while a filter hides some of them
    ``5 of 14 nodes``.  ``table_id``: the table whose rows it counts (a table that filters itself says
    how many it shows); None: the rows the pane's own read kept (its filter's tally)."""

    total: str
    noun: str
    table_id: str | None = None
    #: Said only while a filter is on (the pane's summary around it counts all rows either way).
    only_filtered: bool = False
    #: Put before and after it when it is said.
    prefix: str = ""
    suffix: str = ""

    def text(self, shown: int | None) -> str:
        if shown is None:
            return "" if self.only_filtered else f"{self.prefix}{self.total} {self.noun}{self.suffix}"
        return f"{self.prefix}{shown} of {self.total} {self.noun}{self.suffix}"


@dataclass(frozen=True)
class CountedStatus:
    """A status line with row counts in it, drawn again whenever the filter or the rows change."""

    parts: tuple[str | Text | RowCount, ...]

    def render(self, shown: Callable[[RowCount], int | None]) -> Text:
        """The line, each count as ``shown`` says (None: no filter on, the plain total)."""
        line = Text()
        for part in self.parts:
            if isinstance(part, RowCount):
                line.append(part.text(shown(part)))
            else:
                line.append(part)
        return line

    @property
    def plain(self) -> str:
        """The line as it reads with no filter on."""
        return self.render(lambda _count: None).plain

    def __str__(self) -> str:
        return self.plain
