"""A table of one-line rows drawn with Textual's Line API (``ScrollView.render_line``): the header,
the row cursor, keys, mouse and styles.  What the rows hold and in what order is the subclass's
(``KeyedTable``); this draws line ``y`` from row ``y`` and never walks the rows.

It looks and behaves as Textual's ``DataTable`` with a row cursor: the same component classes
(``datatable--cursor``, ``datatable--hover``, ``datatable--header``...) and CSS, the same keys, the
same lines segment for segment.  A data row is drawn from a strip kept by its key and cells
(``row_strips``), so a redraw, a filter or a scroll draws again only rows it has not drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Spacing
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tau_tui.widgets.row_strips import RowLook, RowStrips, plain_text_line, text_cell_segments
from tau_tui.widgets.table_columns import TableColumn, fit_cell
from tau_tui.widgets.table_messages import HeaderSelected, RowHighlighted, RowSelected
from tau_tui.widgets.table_plan import as_text


def styled_cell_line(console: Any, cell: Any, width: int, padding: int, pre_style: Style,
                     post_style: Style) -> list[Segment]:
    """Any renderable as one line of a cell, through Rich (padded, styled under and over, cut to
    one line): the way cells that are not one plain line of text are drawn."""
    options = console.options.update_dimensions(width, 1).update(no_wrap=True)
    lines = console.render_lines(Styled(Padding(cell, (0, padding)), pre_style=pre_style, post_style=post_style),
                                 options)
    return lines[0]


class LineTable(ScrollView, can_focus=True):
    """One-line rows with a row cursor (see module docstring).  Subclasses give the rows:
    :attr:`row_count`, :meth:`row_key_at`, :meth:`row_cells` and :attr:`table_columns`."""

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "cursor_right", "Cursor right", show=False),
        Binding("left", "cursor_left", "Cursor left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor",
        "datatable--hover",
        "datatable--fixed",
        "datatable--fixed-cursor",
        "datatable--header",
        "datatable--header-cursor",
        "datatable--header-hover",
        "datatable--odd-row",
        "datatable--even-row",
    }

    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &.datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
        }

        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }

            & > .datatable--header {
                background-tint: $foreground 5%;
            }

            & > .datatable--fixed-cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }

        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }

        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }

        & > .datatable--fixed {
            background: $secondary-muted;
            color: $foreground;
        }

        & > .datatable--odd-row {

        }

        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }

        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }

        & > .datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
            color: $foreground;
        }

        & > .datatable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }

        & > .datatable--header-hover {
            background: $accent 30%;
        }

        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """

    def __init__(self, *, show_header: bool = True, zebra_stripes: bool = False, show_cursor: bool = True,
                 cell_padding: int = 1, name: str | None = None, id: str | None = None,
                 classes: str | None = None, disabled: bool = False) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.show_header = show_header
        self.header_height = 1
        self.zebra_stripes = zebra_stripes
        self.show_cursor = show_cursor
        self.cell_padding = max(cell_padding, 0)
        #: (row, column) of the cursor; a row cursor keeps the column a click put it on.
        self._cursor_at = (0, 0)
        self._hover_at = (0, 0)
        #: The hover row is drawn only while the mouse is the last thing used (keys hide it).
        self._hover_shown = False
        #: Rows were added and the widths are worked out on idle: scroll to the cursor after that.
        self._sizes_pending = False
        self.row_strips = RowStrips()
        self._cell_style_cache: dict[tuple[bool, bool, bool], tuple[Style, Style]] = {}
        self._header_strips: dict[tuple, Strip] = {}
        self._render_widths: tuple[int, ...] | None = None
        self._middle_cuts: frozenset[int] | None = None

    # -- what the subclass gives ----------------------------------------------------------

    @property
    def row_count(self) -> int:
        return 0

    def row_key_at(self, row_index: int) -> str | None:
        return None

    def row_cells(self, key: str) -> Sequence[Any] | None:
        return None

    @property
    def table_columns(self) -> list[TableColumn]:
        return []

    def columns_changed(self) -> None:
        """The columns' widths changed: every line is drawn again."""
        self._render_widths = None
        self._middle_cuts = None
        self._header_strips.clear()
        self.row_strips.clear()

    def labels_changed(self) -> None:
        """A column's label changed (the sort arrow): the header is drawn again."""
        self._header_strips.clear()

    # -- rows and regions -----------------------------------------------------------------

    @property
    def header_lines(self) -> int:
        return self.header_height if self.show_header else 0

    @property
    def cursor_row(self) -> int:
        return self._cursor_at[0]

    @property
    def hover_row(self) -> int:
        return self._hover_at[0]

    def is_valid_row_index(self, row_index: int) -> bool:
        return 0 <= row_index < self.row_count

    def get_row_at(self, row_index: int) -> list[Any]:
        """The cells of the row shown at ``row_index``, as drawn (a plain string as Text)."""
        key = self.row_key_at(row_index)
        cells = self.row_cells(key) if key is not None else None
        if cells is None:
            raise IndexError(row_index)
        return [as_text(cell) for cell in cells]

    def middle_cut_columns(self) -> frozenset[int]:
        """The columns whose cells too wide keep both ends (names)."""
        if self._middle_cuts is None:
            self._middle_cuts = frozenset(i for i, column in enumerate(self.table_columns) if column.middle_cut)
        return self._middle_cuts

    def column_render_widths(self) -> tuple[int, ...]:
        if self._render_widths is None:
            self._render_widths = tuple(column.render_width(self.cell_padding) for column in self.table_columns)
        return self._render_widths

    def row_region(self, row_index: int) -> Region:
        if not self.is_valid_row_index(row_index):
            return Region(0, 0, 0, 0)
        return Region(0, row_index + self.header_lines, max(self.size.width, sum(self.column_render_widths())), 1)

    def refresh_row(self, row_index: int) -> None:
        """Repaint the row's line when it is on screen."""
        region = self.row_region(row_index)
        if region and self.window_region.overlaps(region):
            self.refresh(region.translate(-self.scroll_offset))

    # -- the cursor -----------------------------------------------------------------------

    def move_cursor(self, *, row: int | None = None, column: int | None = None, animate: bool = False,
                    scroll: bool = True) -> None:
        """Put the cursor on ``row`` (kept within the rows) and, with ``scroll``, into view."""
        cursor_row, cursor_column = self._cursor_at
        if scroll:
            if self._sizes_pending:
                self.call_after_refresh(self.scroll_cursor_into_view, animate=animate)
            else:
                self.scroll_cursor_into_view(animate=animate)
        self.set_cursor(cursor_row if row is None else row, cursor_column if column is None else column)

    def set_cursor(self, row: int, column: int | None = None) -> None:
        """Move the cursor (clamped to the rows); a move repaints both rows, says so
        (:class:`RowHighlighted`) and scrolls the cursor into view."""
        columns = len(self.table_columns)
        column = self._cursor_at[1] if column is None else column
        new = (max(0, min(row, self.row_count - 1)), max(0, min(column, columns - 1)))
        old, self._cursor_at = self._cursor_at, new
        if old == new:
            return
        self.refresh_row(old[0])
        self.refresh_row(new[0])
        if new[0] < self.row_count:
            self.post_message(RowHighlighted(self, new[0], self.row_key_at(new[0])))
        if self._sizes_pending:
            self.call_after_refresh(self.scroll_cursor_into_view)
        else:
            self.scroll_cursor_into_view()

    def keep_cursor(self) -> None:
        """The rows changed: keep the cursor within them (a cursor moved by that says so)."""
        self.set_cursor(*self._cursor_at)

    def scroll_cursor_into_view(self, animate: bool = False) -> None:
        top = self.header_lines
        _, y, width, height = self.row_region(self.cursor_row)
        region = Region(int(self.scroll_x), y, width, height)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(top, 0, 0, 0), force=True)

    def _show_hover(self, shown: bool) -> None:
        self._hover_shown = shown
        self.refresh_row(self.hover_row)

    def _move_hover(self, row: int, column: int) -> None:
        old, self._hover_at = self._hover_at, (row, column)
        self.refresh_row(old[0])
        self.refresh_row(row)

    def _post_selected(self) -> None:
        if self.row_count == 0:
            return
        row = self.cursor_row
        self.post_message(RowSelected(self, row, self.row_key_at(row)))

    # -- keys -----------------------------------------------------------------------------

    def action_select_cursor(self) -> None:
        self._show_hover(False)
        if self.show_cursor:
            self._post_selected()

    def action_cursor_up(self) -> None:
        self._show_hover(False)
        if self.show_cursor:
            self.set_cursor(self.cursor_row - 1)
        else:
            self.action_scroll_up()

    def action_cursor_down(self) -> None:
        self._show_hover(False)
        if self.show_cursor:
            self.set_cursor(self.cursor_row + 1)
        else:
            self.action_scroll_down()

    def action_cursor_right(self) -> None:
        self._show_hover(False)
        self.action_scroll_right()

    def action_cursor_left(self) -> None:
        self._show_hover(False)
        self.action_scroll_left()

    def _page_height(self) -> int:
        return self.scrollable_content_region.height - self.header_lines

    def action_page_down(self) -> None:
        self._show_hover(False)
        if not self.show_cursor:
            super().action_page_down()
            return
        height = self._page_height()
        row = self.cursor_row
        rows_to_scroll = max(1, min(height + 1, self.row_count - row))  # one line per row
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=row + rows_to_scroll - 1, scroll=False)

    def action_page_up(self) -> None:
        self._show_hover(False)
        if not self.show_cursor:
            super().action_page_up()
            return
        height = self._page_height()
        row = self.cursor_row
        rows_to_scroll = max(1, min(height + 1, row + 1))
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=row - rows_to_scroll + 1, scroll=False)

    def action_page_left(self) -> None:
        self._show_hover(False)
        self.scroll_page_left()

    def action_page_right(self) -> None:
        self._show_hover(False)
        self.scroll_page_right()

    def action_scroll_top(self) -> None:
        self._show_hover(False)
        if self.show_cursor:
            self.set_cursor(0)
        else:
            super().action_scroll_home()

    def action_scroll_bottom(self) -> None:
        self._show_hover(False)
        if self.show_cursor:
            self.set_cursor(self.row_count - 1)
        else:
            super().action_scroll_end()

    def action_scroll_home(self) -> None:
        self._show_hover(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._show_hover(False)
        self.scroll_x = self.max_scroll_x

    # -- the mouse ------------------------------------------------------------------------

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """The row under the mouse, from the metadata its segments carry."""
        self._show_hover(True)
        meta = event.style.meta
        if not meta:
            self._show_hover(False)
            return
        if self.show_cursor and "row" in meta and "column" in meta:
            self._move_hover(meta["row"], meta["column"])

    def on_leave(self, _: events.Leave) -> None:
        self._show_hover(False)

    def on_click(self, event: events.Click) -> None:
        self._show_hover(True)
        meta = event.style.meta
        if "row" not in meta or "column" not in meta:
            return
        row, column = meta["row"], meta["column"]
        if self.show_header and row == -1:
            columns = self.table_columns
            if 0 <= column < len(columns):
                self.post_message(HeaderSelected(self, columns[column].key, column, columns[column].label))
        elif self.show_cursor:
            clicked_the_cursor = (row, column) == self._cursor_at
            self.set_cursor(row, column)
            if clicked_the_cursor:
                self._post_selected()
            self.scroll_cursor_into_view(animate=True)
            event.stop()

    # -- drawing --------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cell_style_cache.clear()
        self._header_strips.clear()  # row strips are kept by the styles they were drawn in (RowLook)
        self.refresh()

    def cell_styles(self, header: bool, hover: bool, cursor: bool) -> tuple[Style, Style]:
        """(the style under a cell, the style over it): the hover's and the cursor's component
        styles, and the cursor's colour over the cell's own."""
        key = (header, hover and self.show_cursor and self._hover_shown, cursor and self.show_cursor)
        styles = self._cell_style_cache.get(key)
        if styles is None:
            get_component = self.get_component_rich_style
            component = Style()
            if key[1]:
                component += get_component("datatable--hover")
                if header:
                    component += get_component("datatable--header-hover")
            if key[2]:
                component += get_component("datatable--cursor")
                if header:
                    component += get_component("datatable--header-cursor")
            styles = self._cell_style_cache[key] = (component, Style.from_color(color=component.color) + Style.null())
        return styles

    def _row_style(self, row_index: int, base_style: Style) -> Style:
        if row_index == -1:
            return self.get_component_styles("datatable--header").rich_style
        if self.zebra_stripes:
            name = "datatable--odd-row" if row_index % 2 else "datatable--even-row"
            return self.get_component_styles(name).rich_style
        return base_style

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        base_style = self.rich_style
        if y < self.header_lines:
            return self._header_line(scroll_x, width, base_style)
        row_index = y - self.header_lines + scroll_y
        key = self.row_key_at(row_index)
        cells = self.row_cells(key) if key is not None else None
        if key is None or cells is None:
            return Strip.blank(width, base_style)
        row_style = self._row_style(row_index, base_style)
        cursor, hover = row_index == self.cursor_row, row_index == self.hover_row
        look = RowLook(self.column_render_widths(), row_style, width, self.cell_styles(False, hover, cursor),
                       self.middle_cut_columns())
        strip = self.row_strips.strip(key, cells, look, row_index, self.app.console, self.cell_padding)
        if strip is None:
            return self._line_through_rich(row_index, cells, look, scroll_x, base_style)
        if scroll_x or strip.cell_length != width:  # the strip's cells carry their own metadata
            strip = strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, base_style)
        return strip

    def _header_line(self, scroll_x: int, width: int, base_style: Style) -> Strip:
        hover = self.hover_row == -1
        key = (scroll_x, width, base_style, self.cell_styles(True, hover, False))
        strip = self._header_strips.get(key)
        if strip is None:
            labels = [column.label for column in self.table_columns]
            look = RowLook(self.column_render_widths(), self._row_style(-1, base_style), width, key[3])
            strip = self._header_strips[key] = self._line_through_rich(-1, labels, look, scroll_x, base_style)
        return strip

    def _line_through_rich(self, row_index: int, cells: Sequence[Any], look: RowLook, scroll_x: int,
                           base_style: Style) -> Strip:
        """A line cell by cell: plain text from its segments, anything else through Rich."""
        console = self.app.console
        component, post = look.cell_styles
        padding = self.cell_padding
        segments: list[Segment] = []
        for column, (cell, width) in enumerate(zip(cells, look.widths, strict=False)):
            if width == 0:
                continue
            pre = look.base_style + Style.from_meta({"row": row_index, "column": column}) + component
            cell = as_text(cell)
            if isinstance(cell, Text) and width > 2 * padding and "\n" not in cell.plain:
                cell = fit_cell(cell, width - 2 * padding, column in look.middle_cuts)  # "…" where it is cut
            text = plain_text_line(cell)
            if text is not None and width > 2 * padding:
                segments.extend(text_cell_segments(console, text, width, padding, pre, post))
            else:
                segments.extend(styled_cell_line(console, as_text(cell), width, padding, pre, post))
        fill = max(0, look.width - sum(look.widths))
        meta = Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * fill, look.base_style + component + meta))
        line = Strip(segments)
        return line.crop(scroll_x, scroll_x + look.width).adjust_cell_length(look.width, base_style).simplify()

