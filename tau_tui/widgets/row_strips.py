"""Whole-row strips for a one-line-per-row table, kept by row key and cells, not by row index.

A row's strip is built once from its cells (the segments Rich's pipeline makes for them) and
kept until its cells, the column widths, the table's base style or the styles of its cells (the
cursor's or the hover's when on it) change, so a filter that moves rows, a tick that changes one
row, or the cursor moving draws only the rows that changed; the row index goes on afterwards as
the mouse metadata only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text
from textual.strip import Strip

from tau_tui.widgets.table_columns import fit_cell

#: Rows kept (a few screens' worth); the cache starts over when full.
ROW_STRIPS_KEPT = 2048


@dataclass(frozen=True)
class RowLook:
    """What a row's strip depends on besides its cells: the widths of its columns (0 is hidden),
    the table's base style and width, and the styles under and over its cells (the cursor's or the
    hover's when on it).  A restyle that changes no row's styles (the table losing focus changes
    only the cursor's) keeps every other row's strip."""

    widths: tuple[int, ...]
    base_style: Style
    width: int
    #: (the style under each cell, the style over it)
    cell_styles: tuple[Style, Style]
    #: The columns whose cells too wide keep both ends (names); the others end in "…".
    middle_cuts: frozenset[int] = frozenset()


def plain_text_line(cell: Any) -> Text | None:
    """``cell`` when it is a one-line Text drawn left-aligned and cut at its width (every cell the
    panes make; a stored plain string is printable, so one line); None for anything else, which
    is drawn through Rich (``line_table.styled_cell_line``)."""
    if isinstance(cell, str):
        return Text(cell)
    if (not isinstance(cell, Text) or cell.justify not in (None, "default")
            or cell.overflow not in (None, "fold", "crop", "ignore") or cell.no_wrap is False):
        return None
    plain = cell.plain
    if "\n" in plain or "\t" in plain:
        return None
    return cell


def text_cell_segments(console: Console, cell: Text, width: int, padding: int, pre_style: Style,
                       post_style: Style) -> list[Segment]:
    """One line of a Text cell as Rich renders it unwrapped: its style under its spans (as
    ``Text.__rich_console__`` joins it), cut or padded to the width less the padding on each side,
    then ``pre_style`` under and ``post_style`` over every segment (textual's ``Styled``)."""
    if cell.style:
        cell = Text(cell.plain, spans=[Span(0, len(cell), cell.style), *cell.spans], end="")
    inner = width - 2 * padding
    line = Segment.adjust_line_length(list(cell.render(console, end="")), inner, style=Style.null(), pad=True)
    if padding:
        line = [Segment(" " * padding, Style.null()), *line, Segment(" " * padding, Style.null())]
    return list(Segment.apply_style(line, pre_style, post_style))


class RowStrips:
    """Rows' segments, kept by row key, with the cells they were built from; each row's strip for
    the index it was last drawn at is kept too."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, RowLook], KeptRow] = {}
        self._meta_styles: dict[tuple[int, int, bool], Style] = {}
        #: Rows built and rows reused (tests bound the drawing work by these).
        self.built = 0
        self.reused = 0

    def clear(self) -> None:
        self._kept.clear()

    def strip(self, key: str, cells: Sequence[Any], look: RowLook, row_index: int, console: Console,
              padding: int) -> Strip | None:
        """The row's strip at the table's full width, each cell's segments carrying the mouse
        metadata (row, column), or None when a cell is not plain text (the caller draws the row
        through Rich)."""
        kept = self._kept.get((key, look))
        if kept is not None and kept.cells is cells:
            self.reused += 1
        else:
            kept = KeptRow(cells, self._build(cells, look, console, padding))
            if len(self._kept) >= ROW_STRIPS_KEPT:
                self._kept.clear()
            self._kept[(key, look)] = kept
            self.built += 1
        if kept.parts is None:
            return None
        if kept.strip is None or kept.row_index != row_index:
            kept.strip, kept.row_index = self._with_meta(kept.parts, row_index, look.width), row_index
        return kept.strip

    def _with_meta(self, parts: list[tuple[int, list[Segment]]], row_index: int, width: int) -> Strip:
        """Segments of each cell (and last the fill to the table's edge, column -1) with their metadata."""
        segments: list[Segment] = []
        for column, cell in parts:
            meta = self._meta_style(row_index, max(column, 0), column < 0)
            segments.extend(Segment(text, style + meta if style is not None else meta, control)
                            for text, style, control in cell)
        return Strip(segments, max(width, sum(segment.cell_length for segment in segments)))

    def _meta_style(self, row_index: int, column: int, beyond: bool) -> Style:
        key = (row_index, column, beyond)
        style = self._meta_styles.get(key)
        if style is None:
            if len(self._meta_styles) >= ROW_STRIPS_KEPT * 8:
                self._meta_styles.clear()
            meta: dict[str, Any] = {"row": row_index, "column": column}
            if beyond:
                meta["out_of_bounds"] = True
            style = self._meta_styles[key] = Style.from_meta(meta)
        return style

    @staticmethod
    def _build(cells: Sequence[Any], look: RowLook, console: Console, padding: int) -> list[tuple[int, list[Segment]]] | None:
        component, post = look.cell_styles
        pre = look.base_style + component
        parts: list[tuple[int, list[Segment]]] = []
        used = 0
        for column, (cell, width) in enumerate(zip(cells, look.widths, strict=False)):
            if width == 0:
                continue
            text = plain_text_line(cell)
            if text is None or width <= 2 * padding:
                return None
            text = fit_cell(text, width - 2 * padding, column in look.middle_cuts)
            parts.append((column, list(Segment.simplify(text_cell_segments(console, text, width, padding, pre, post)))))
            used += width
        parts.append((-1, [Segment(" " * max(look.width - used, 0), pre)]))
        return parts


@dataclass
class KeptRow:
    """A row's cells, its segments by cell (None: not plain text) and its last strip with metadata."""

    cells: Sequence[Any]
    parts: list[tuple[int, list[Segment]]] | None
    strip: Strip | None = None
    row_index: int = -1
