"""A keyed table's columns: what a pane asks for (``ColumnSpec``), what is drawn (``TableColumn``),
how widths are cut to fit a narrow table, and how a cell wider than its column is cut.

Each column's width is the widest cell now in it (the table tracks it as rows change); at narrow
widths the columns the pane marks optional are hidden first, lowest ``priority`` first, and the
widest flexible column shrinks, so the state columns stay on screen.  A cell wider than its column
ends in "…"; in a name column (``cut="middle"``) it keeps both ends
(``taugrid-default/job-l…8b-dpo-0eff2``), so two names that differ at the end never read the same.
Cells are cut as they are drawn: only the rows on screen, never every row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

#: What a cut cell ends with (or holds in its middle).
ELLIPSIS = "…"

#: Flexible columns are cut to this width before any optional column is hidden.
COMFORTABLE_WIDTH = 24


@dataclass(frozen=True)
class ColumnSpec:
    """``key``/``label``; ``sort_letter`` (upper case, shift+letter sorts); ``optional`` columns
    are hidden first when the table is narrow, the lowest ``priority`` first (among equals, from the
    right); ``flexible`` ones shrink (with an ellipsis; ``cut="middle"`` keeps both ends of a name)."""

    key: str
    label: str
    sort_letter: str = ""
    optional: bool = False
    flexible: bool = False
    min_width: int = 4
    priority: int = 0
    cut: str = "end"


@dataclass
class TableColumn:
    """A column as drawn: its label (with the sort arrow) and its content width (0: hidden)."""

    key: str
    label: Text
    width: int = 0
    #: Cells too wide keep both ends (names).
    middle_cut: bool = False

    def render_width(self, padding: int) -> int:
        """The width on screen, padding on each side included; a hidden column takes none."""
        return 0 if self.width == 0 else self.width + 2 * padding


def as_spec(column: ColumnSpec | tuple) -> ColumnSpec:
    if isinstance(column, ColumnSpec):
        return column
    return ColumnSpec(*column)


def fitted_widths(specs: Sequence[ColumnSpec], content: list[int], available: int,
                  padding: int) -> tuple[list[int], set[str]]:
    """(widths, hidden column keys) for ``available`` cells: 1. flexible columns shrink to a
    comfortable width; 2. optional columns are hidden from the right until that fits; 3. flexible
    columns shrink down to their minimum.  ``available`` 0 (not laid out yet): the content widths."""
    if available <= 0:
        return content, set()
    optional = [s.key for _, s in sorted(((-i, s) for i, s in enumerate(specs) if s.optional),
                                          key=lambda pair: (pair[1].priority, pair[0]))]
    hidden: set[str] = set()
    for count in range(len(optional) + 1):
        hidden = set(optional[:count])
        fitted = shrunk_widths(specs, content, hidden, available, padding, comfortable=True)
        if fitted is not None:
            return fitted, hidden
    return shrunk_widths(specs, content, hidden, available, padding, comfortable=False) or content, hidden


def shrunk_widths(specs: Sequence[ColumnSpec], content: list[int], hidden: set[str], available: int, padding: int,
                  comfortable: bool) -> list[int] | None:
    """Widths with the flexible columns cut (widest first, water-filling) so the visible
    columns fit ``available``, or None when they cannot without going under the floor."""
    pad = 2 * padding
    widths = list(content)
    floors = [max(s.min_width, COMFORTABLE_WIDTH) if comfortable else s.min_width for s in specs]
    over = sum(w + pad for s, w in zip(specs, widths, strict=False) if s.key not in hidden) - available
    flexible = [i for i, s in enumerate(specs) if s.flexible and s.key not in hidden and widths[i] > floors[i]]
    while over > 0 and flexible:
        top = max(widths[i] for i in flexible)
        widest = [i for i in flexible if widths[i] == top]
        next_width = max([widths[i] for i in flexible if widths[i] < top], default=0)
        floor = max([floors[i] for i in widest] + [next_width])
        step = min(top - floor, -(-over // len(widest)))
        if step <= 0:
            break
        for i in widest:
            cut = min(step, over)
            if cut <= 0:
                break
            widths[i] -= cut
            over -= cut
        flexible = [i for i in flexible if widths[i] > floors[i]]
    return widths if over <= 0 else None


def fit_cell(text: Text, inner: int, middle: bool) -> Text:
    """``text`` cut to ``inner`` cells with an ellipsis: at the end, or (``middle``) in the middle, so
    both ends stay; unchanged when it fits."""
    plain = text.plain
    if (len(plain) if plain.isascii() else text.cell_len) <= inner or inner <= 0:
        return text
    if inner == 1:
        return Text(ELLIPSIS, style=text.style, end="")
    if middle and plain.isascii():
        head = (inner - 1 + 1) // 2
        tail = inner - 1 - head
        return Text.assemble(text[:head], ELLIPSIS, text[len(plain) - tail:] if tail else "", style=text.style, end="")
    cut = text.copy()
    cut.truncate(inner, overflow="ellipsis")
    return cut
