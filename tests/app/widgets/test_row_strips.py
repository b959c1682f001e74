"""A table row is drawn from a strip kept by its key and cells (``widgets/row_strips.py``): the lines
are Rich's own rendering of every cell, segment for segment (text, style and the mouse metadata), and a filter that
moves rows, a scroll back, or a redraw with nothing changed draws no row again (counted, never
timed)."""

from __future__ import annotations

from rich.text import Span, Text
from textual.app import App
from textual.widgets import Input

from tau_tui.widgets import line_table
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.row_filter import parse_filter
from tests.app.helpers import async_test

ROWS = 20_000

CELLS = [Text("team-a/job-12345-xyz-long-name", style="bold"), Text(""), Text("—"), Text("✓ admitted", style="green"),
         Text("日本語テキスト"), Text.assemble(("◐ ", "yellow"), "starting", (" (2)", "dim")), Text("  spaced  "),
         Text("abc def", style="on red", spans=[Span(1, 3, "italic"), Span(2, 5, "red")])]


class StripsApp(App):
    def __init__(self, flexible: bool = True):
        super().__init__()
        self.flexible = flexible

    def compose(self):
        yield KeyedTable([ColumnSpec("name", "Name", "N", flexible=self.flexible, min_width=6),
                          ColumnSpec("state", "State", "S"), ColumnSpec("age", "Age", "A", optional=True)], id="t")
        yield Input(id="elsewhere")


def segments(strip) -> list[tuple]:
    return [(segment.text, segment.style) for segment in strip if segment.text]


def same_as_datatable(table: KeyedTable) -> int:
    """Compare every drawn line with the same line drawn cell by cell through Rich (no kept strip,
    no cell drawn from its segments); the number of data lines compared."""
    compared = 0
    for y in range(table.header_height, table.size.height):
        ours = table.render_line(y)
        kept_strip, plain_line = table.row_strips.strip, line_table.plain_text_line
        table.row_strips.strip = lambda *args, **kwargs: None  # type: ignore[method-assign]
        line_table.plain_text_line = lambda cell: None  # type: ignore[assignment]
        try:
            theirs = table.render_line(y)
        finally:
            table.row_strips.strip, line_table.plain_text_line = kept_strip, plain_line  # type: ignore[method-assign]
        assert segments(ours) == segments(theirs), y
        compared += table.header_height <= y < table.header_height + table.row_count
    return compared


@async_test
async def test_rows_come_out_as_datatable_draws_them_focused_blurred_narrow_and_scrolled():
    # at 30 columns the age column is hidden and the name cut; at 20 with no flexible column it scrolls
    for size, flexible in (((100, 20), True), ((30, 20), True), ((20, 20), False)):
        app = StripsApp(flexible)
        async with app.run_test(size=size) as pilot:
            table = app.query_one(KeyedTable)
            cells = [*CELLS, Text("two\nlines")]  # a cell that is not one plain line: Rich draws that row
            table.apply_rows([(f"r{i}", [cell, Text("pending"), Text(f"{i}m")]) for i, cell in enumerate(cells)])
            table.focus()
            await pilot.pause()
            table.move_cursor(row=3)
            await pilot.pause()
            assert same_as_datatable(table) == len(cells)
            app.query_one("#elsewhere", Input).focus()  # the cursor and background change with focus
            await pilot.pause()
            assert same_as_datatable(table) == len(cells)
            assert table.row_strips.built >= len(cells)
            table.scroll_to(x=3, animate=False, immediate=True)
            await pilot.pause()
            assert table.scroll_x == (3 if not flexible else 0)
            assert same_as_datatable(table) == len(cells)


@async_test
async def test_a_filter_a_scroll_back_and_an_idle_redraw_draw_no_row_again():
    app = StripsApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(KeyedTable)
        rows = [(f"ns/wl-{i:05d}", [Text(f"ns/wl-{i:05d}"), Text("pending"), Text(f"{i % 60}m")]) for i in range(ROWS)]
        table.apply_rows(rows, matchable={key: (key, {}) for key, _ in rows})
        table.focus()
        await pilot.pause()
        visible = table.size.height - table.header_height
        assert table.row_strips.built == visible  # the rows on screen, not 20,000

        strips = table.row_strips
        strips.built = strips.reused = 0
        table.refresh()
        await pilot.pause()
        assert strips.built == 0 and strips.reused == visible

        # the filter keeps ten of the rows drawn, at new indexes: none is drawn again
        table.set_row_filter(parse_filter("wl-0000"))
        await pilot.pause()
        assert table.row_count == 10 and strips.built == 0

        # back to every row, down a page and back up: only the page below is drawn
        table.set_row_filter(parse_filter(""))
        await pilot.pause()
        table.scroll_to(y=visible, animate=False, immediate=True)
        await pilot.pause()
        drawn_below = strips.built
        assert 0 < drawn_below <= visible
        table.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        assert strips.built == drawn_below


@async_test
async def test_plain_string_cells_are_kept_as_strings_and_drawn_as_text_never_as_markup():
    from tau_tui.widgets.table_plan import as_cell

    texts = ["[bold]not bold[/bold]", "[/oops] a closing tag", "ctrl\x1b[31m codes", "two\nlines", "日本語", ""]
    assert [type(as_cell(t)) for t in texts] == [str, str, Text, Text, str, str]  # unprintable: Text drops codes
    drawn = []
    for make in (str, Text):
        app = StripsApp()
        async with app.run_test(size=(100, 20)) as pilot:
            table = app.query_one(KeyedTable)
            table.apply_rows([(f"r{i}", [make(t), "pending", f"{i}m"]) for i, t in enumerate(texts)])
            await pilot.pause()
            assert same_as_datatable(table) == len(texts)  # Rich's own path sees Text, not markup
            drawn.append([segments(table.render_line(y)) for y in range(table.header_height, table.header_height + len(texts))])
            assert "[bold]not bold[/bold]" in table.cells_of("r0")[0].plain
    assert drawn[0] == drawn[1]  # a string cell looks exactly as the same text given as Text
