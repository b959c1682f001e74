"""Tables at scale and k9s table habits: work bounded by counts (never by time), sort,
live filter, narrow layout, Tab completion in ``:`` mode, clickable tabs, read-only feedback."""

from __future__ import annotations

from collections import Counter

import pytest
from rich.style import Style
from rich.text import Span, Text
from textual.app import App
from textual.widgets import Input

from tau_tui.screens.queue import QueueScreen
from tau_tui.widgets.command_line import CommandLine, complete
from tau_tui.widgets.header_bar import HeaderBar
from tau_tui.widgets.keyed_table import NOTICE_KEY, ColumnSpec, KeyedTable, sort_key
from tau_tui.widgets.line_table import styled_cell_line
from tau_tui.widgets.row_filter import folded_texts, kept_rows, parse_filter
from tau_tui.widgets.row_strips import plain_text_line, text_cell_segments
from tau_tui.widgets.table_plan import TableState, as_cell, cell_width, plan_rows
from tests.app.helpers import async_test, demo_app, make_app, record_notifications, settle, settle_until

ROWS = 20_000


class CountingTable(KeyedTable):
    """Counts the rows added, the table cleared, and the lines rendered (the table's own ``stats``
    count its cell writes, removals and re-indexing)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = {"add_row": 0, "clear": 0, "render_line": 0}

    # rows are added and cells written in batches; count what each batch touches
    def _insert_rows(self, rows):
        self.calls["add_row"] += len(rows)
        return super()._insert_rows(rows)

    def clear(self, *args, **kwargs):
        self.calls["clear"] += 1
        return super().clear(*args, **kwargs)

    def render_line(self, y):
        self.calls["render_line"] += 1
        return super().render_line(y)


class TableApp(App):
    def compose(self):
        yield CountingTable([ColumnSpec("name", "Name", "N"), ColumnSpec("state", "State", "S"),
                             ColumnSpec("age", "Age", "A")], id="t")


def big_rows(n: int = ROWS) -> list:
    return [(f"ns/wl-{i:05d}", [Text(f"ns/wl-{i:05d}"), Text("pending"), Text(f"{i % 60}m")]) for i in range(n)]


def reset(table: CountingTable) -> None:
    table.cells_written = 0
    for key in table.calls:
        table.calls[key] = 0
    for key in table.stats:
        table.stats[key] = 0


async def filled_table(app, pilot) -> tuple[CountingTable, list]:
    """The app's table with ROWS rows applied and drawn."""
    table = app.query_one(CountingTable)
    rows = big_rows()
    table.apply_rows(rows)
    await pilot.pause()
    return table, rows


@async_test
async def test_one_row_change_in_20000_rows_touches_one_cell():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows = await filled_table(app, pilot)
        assert table.row_count == ROWS and table.calls["add_row"] == ROWS

        # one changed cell; every other row is the same cells object (as panes hand them over)
        reset(table)
        rows[12345] = (rows[12345][0], [Text("ns/wl-12345"), Text("admitted"), Text("45m")])
        table.apply_rows(rows)
        await pilot.pause()
        assert table.cells_written == 1 and table.calls["add_row"] == 0 and table.calls["clear"] == 0
        # nothing went round the diff: no row dropped, re-added or re-indexed, no rebuild
        assert table.stats["updated"] == 1 and table.stats["moved"] == 0
        assert table.stats["added"] == table.stats["removed"] == table.stats["rebuilt"] == 0
        assert table.stats["measured"] == 2  # the old and the new width of that one cell
        assert table.calls["render_line"] <= 30 * 2  # at most the visible lines, not 20,000

        # rows rebuilt as new but equal objects: still only the changed cell is written
        reset(table)
        rebuilt = [(key, [Text(c.plain) for c in cells]) for key, cells in rows]
        rebuilt[7] = (rebuilt[7][0], [Text("ns/wl-00007"), Text("finished"), Text("7m")])
        table.apply_rows(rebuilt)
        assert table.cells_written == 1 and table.calls["add_row"] == 0

        # one row removed, one added: no rebuild, no per-row re-add
        reset(table)
        changed = rebuilt[:100] + rebuilt[101:] + [("ns/new", [Text("ns/new"), Text("pending"), Text("1m")])]
        table.apply_rows(changed)
        assert table.calls["add_row"] == 1 and table.calls["clear"] == 0
        assert table.stats["removed"] == 1 and table.stats["added"] == 1
        assert table.stats["moved"] == 1 and table.stats["rebuilt"] == 0  # the rows re-indexed once
        assert table.row_count == ROWS

        # one row moved: re-indexed, nothing re-added or re-written
        reset(table)
        moved = [changed[500]] + changed[:500] + changed[501:]
        table.apply_rows(moved)
        assert table.calls["add_row"] == 0 and table.cells_written == 0 and table.stats["moved"] == 1
        assert table.keys[0] == changed[500][0]


@async_test
async def test_cursor_moves_and_a_change_at_the_bottom_of_20000_rows_look_up_only_what_is_shown():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows = await filled_table(app, pilot)
        await pilot.press("G")
        await pilot.pause()
        assert table.cursor_row == ROWS - 1
        header = table.header_height
        assert table.row_region(ROWS - 1).y == ROWS - 1 + header
        assert table.row_key_at(ROWS - 1) == rows[-1][0] and table.get_row_index(rows[-1][0]) == ROWS - 1

        lookups = []
        key_at = table.row_key_at
        table.row_key_at = lambda index: lookups.append(index) or key_at(index)
        rows[ROWS - 3] = (rows[ROWS - 3][0], [Text(rows[ROWS - 3][0]), Text("admitted"), Text("1m")])
        table.apply_rows(rows)
        await pilot.press("k")
        await pilot.pause()
        assert table.cursor_row == ROWS - 2 and table.cells_written >= 1
        # the visible lines and the cursor's row, not every row
        assert 0 < len(lookups) <= 30 * 10, len(lookups)  # the lines drawn, never every row


@async_test
async def test_text_cells_are_drawn_as_richs_pipeline_draws_them():
    """KeyedTable draws one-line Text cells from their segments; every cell, under the cursor or not,
    at any width, must come out as Rich's own rendering of it (styles, spans, wide characters,
    cut and padded)."""
    cells = [Text("team-a/job-12345-xyz-long-name", style="bold"), Text(""), Text("—"), Text("✓ admitted", style="green"),
             Text("日本語テキスト"), Text.assemble(("◐ ", "yellow"), "starting", (" (2)", "dim")), Text("  spaced  "),
             Text("abc def", style="on red", spans=[Span(1, 3, "italic"), Span(2, 5, "red")])]
    cells[0].stylize("red", 0, 4)
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(CountingTable)
        table.apply_rows([(f"r{i}", [cell, Text("x"), Text("1m")]) for i, cell in enumerate(cells)])
        await pilot.pause()
        drawn = 0
        for row in range(len(cells)):
            for width in (3, 4, 7, 12, 40):
                for cursor in (False, True):
                    component, post = table.cell_styles(False, False, cursor)
                    pre = table.rich_style + Style.from_meta({"row": row, "column": 0}) + component
                    if width > 2 * table.cell_padding:
                        ours = text_cell_segments(app.console, cells[row], width, table.cell_padding, pre, post)
                    else:  # too narrow for its padding: drawn through Rich
                        ours = styled_cell_line(app.console, cells[row], width, table.cell_padding, pre, post)
                    theirs = styled_cell_line(app.console, cells[row], width, table.cell_padding, pre, post)
                    assert ours == theirs, (cells[row].plain, width, cursor)
                    drawn += 1
        assert drawn == len(cells) * 5 * 2
        assert plain_text_line(Text("two\nlines")) is None


@async_test
async def test_sort_each_direction_and_header_arrow():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(CountingTable)
        table.apply_rows([("b", ["b", "x", "10m"]), ("a", ["a", "y", "2h"]), ("c", ["c", "z", "5s"])])
        table.focus()
        await pilot.pause()
        await pilot.press("A")  # shift+a: by age ascending
        assert table.keys == ["c", "b", "a"]
        assert str(table.columns["age"].label).endswith("↑")
        await pilot.press("A")  # again: descending
        assert table.keys == ["a", "b", "c"]
        assert str(table.columns["age"].label).endswith("↓")
        await pilot.press("N")
        assert table.keys == ["a", "b", "c"] and table.sort_column == "name" and not table.sort_reverse
        # new data keeps the chosen order
        table.apply_rows([("b", ["b", "x", "10m"]), ("a", ["a", "y", "2h"]), ("c", ["c", "z", "5s"]), ("0", ["0", "w", "1s"])])
        assert table.keys == ["0", "a", "b", "c"]


@async_test
async def test_a_sort_of_20000_rows_compares_no_cell_and_orders_as_a_fresh_plan_would():
    """A sort puts the rows in the new order from the table's state (no plan, no cell compared or
    measured); ties keep the pane's order both ways, as a plan made with that sort gives."""
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows = await filled_table(app, pilot)
        reset(table)
        table.sort_by("state")
        assert table.stats["sorted"] == 1 and table.stats["measured"] == 0 and table.cells_written == 0
        assert table.stats["matched"] == 0 and table.calls["add_row"] == 0
        given = [key for key, _ in rows]
        assert table.keys == given  # every state is "pending": a stable sort keeps the pane's order
        table.sort_by("age")
        fresh = plan_rows(TableState(columns=3, sort_index=2), rows)
        assert table.keys == fresh.keys
        table.sort_by("age")  # again: reversed, from the kept sort keys
        fresh = plan_rows(TableState(columns=3, sort_index=2, sort_reverse=True), rows)
        assert table.keys == fresh.keys and table.sort_reverse
        assert table.stats["sorted"] == 3 and table.stats["measured"] == 0
        # the next update keeps the order and its rows' sort keys
        rows[5] = (rows[5][0], [Text(rows[5][0]), Text("admitted"), Text("99h")])
        table.apply_rows(rows)
        assert table.keys[0] == rows[5][0]


@async_test
async def test_a_plan_made_before_the_table_existed_is_taken_as_made_unless_it_holds_a_notice():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(CountingTable)
        rows = big_rows(100)
        table.apply_plan(plan_rows(TableState(), rows))  # planned against another empty state
        await pilot.pause()
        assert table.stats["replanned"] == 0 and table.row_count == 100
        other = app.query_one(CountingTable)
        other.clear()
        notice_plan = plan_rows(TableState(), [], Text("forbidden: cannot list"))  # sized for 0 columns
        other.apply_plan(notice_plan)
        await pilot.pause()
        assert other.stats["replanned"] == 1 and len(other.cells_of("__notice__")) == 3  # made again


def test_sort_key_orders_numbers_positions_and_ages_by_value():
    assert sort_key("#2") < sort_key("#10")
    assert sort_key("~3") < sort_key("#4")
    assert sort_key("59s") < sort_key("1m") < sort_key("2h") < sort_key("1d")
    assert sort_key("alpha") < sort_key("Beta")
    assert sort_key("") > sort_key("zzz")


def test_complete_extends_to_the_common_prefix():
    assert complete("mult", ["multikueue", "queue"]) == ("multikueue ", ["multikueue"])
    assert complete("no", ["nodes", "node", "ns"]) == ("node", ["node", "nodes"])
    assert complete("ns team", ["all", "team-nlp", "team-vision"]) == ("ns team-", ["team-nlp", "team-vision"])
    assert complete("zz", ["queue"]) == ("zz", [])


def focused_workloads(app) -> KeyedTable:
    """The queue pane's workloads table, given the focus (as a person's click or tab would)."""
    table = app.screen.query_one("#workloads-table", KeyedTable)
    table.focus()
    return table


@async_test
async def test_queue_pane_sorts_by_name_both_ways(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        table = focused_workloads(app)
        await pilot.press("N")
        await settle(pilot)
        assert table.keys == sorted(table.keys, key=str.lower)
        await pilot.press("N")
        await settle(pilot)
        assert table.keys == sorted(table.keys, key=str.lower, reverse=True)
        keys = dict(app.screen.help_keys())
        assert "shift+n" in keys and "sort" in keys["shift+n"]


@async_test
async def test_live_filter_counts_matches_and_esc_clears(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        everything = list(table.keys)
        await pilot.press("slash", *"llama")  # no enter: filters as you type
        await settle(pilot)
        assert table.keys and all("llama" in k for k in table.keys) and len(table.keys) < len(everything)
        count = str(app.screen.query_one("#command-count").render())
        matched, seen = app.screen.filter_matches
        assert f"{matched}/{seen} match" == count and matched >= len(table.keys)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.row_filter.text == ""
        assert table.keys == everything


@async_test
async def test_enter_and_esc_in_the_filter_line_give_the_focus_back_to_the_table_that_had_it(tmp_path):
    """k9s: after `/text` enter, j and k move in the table filtered; after esc, in the table cleared."""
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        table = focused_workloads(app)
        await pilot.press("slash", *"job", "enter")
        await settle(pilot)
        assert app.screen.row_filter.text == "job" and app.focused is table
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("slash", "escape")
        await settle(pilot)
        assert app.screen.row_filter.text == "" and app.focused is table


@async_test
async def test_typed_filter_applies_after_the_frame_that_echoes_it_once_for_keys_typed_together(tmp_path, monkeypatch):
    import tau_tui.screens.typed_filter as typed_filter

    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        # the keys' pause a busy machine could make between two of five keys posted together stays under it
        monkeypatch.setattr(typed_filter, "FILTER_QUIET_S", 1.0)
        monkeypatch.setattr(typed_filter, "FILTER_LONGEST_WAIT_S", 2.0)
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        applied: list[str] = []
        set_filter = screen.set_filter
        screen.set_filter = lambda text, live=False: (applied.append(text), set_filter(text, live))[1]
        line = screen.query_one(CommandLine)
        line.open("filter")
        for char in "llama":  # five keys before any frame: the echo first, then one filter
            post_key_without_waiting(app, char, char)
        await settle_until(pilot, lambda: screen.row_filter.text == "llama")
        assert applied == ["llama"], applied
        assert table.keys and all("llama" in k for k in table.keys)
        # enter settles the filter: text typed just before it is not applied after it
        post_key_without_waiting(app, "x", "x")
        post_key_without_waiting(app, "enter", None)
        await settle(pilot)
        assert screen.typed_filter is None and screen.row_filter.text == "llamax"
        assert applied[-1] == "llamax"


@async_test
async def test_a_typed_filter_waits_for_the_keys_to_pause_and_never_longer_than_its_bound(tmp_path, monkeypatch):
    import tau_tui.screens.typed_filter as typed_filter

    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        screen = app.screen
        applied: list[str] = []
        set_filter = screen.set_filter
        screen.set_filter = lambda text, live=False: (applied.append(text), set_filter(text, live))[1]
        line = screen.query_one(CommandLine)
        field = line.query_one(Input)
        # keys that keep coming (no pause reaches the quiet time): each is echoed, none filtered yet
        monkeypatch.setattr(typed_filter, "FILTER_QUIET_S", 30.0)
        monkeypatch.setattr(typed_filter, "FILTER_LONGEST_WAIT_S", 30.0)
        line.open("filter")
        for char in "lla":
            await pilot.press(char)
            await pilot.pause()
        assert field.value == "lla" and applied == [] and screen.row_filter.text == ""
        await pilot.press("enter")  # enter settles what was typed at once
        await settle(pilot)
        assert applied == ["lla"] and screen.row_filter.text == "lla"
        # keys that never pause are still filtered once the first has waited the bound
        monkeypatch.setattr(typed_filter, "FILTER_LONGEST_WAIT_S", 0.2)
        line.open("filter")
        await pilot.press("m")
        await settle_until(pilot, lambda: screen.row_filter.text == "m")
        assert applied == ["lla", "m"]
        # esc while a typed filter waits (none applied before it): the waiting one is never applied after
        monkeypatch.setattr(typed_filter, "FILTER_LONGEST_WAIT_S", 30.0)  # x still waits when esc comes, however busy the machine
        screen.set_filter("")
        line.open("filter")
        await pilot.press("x")
        assert screen.typed_filter == "x"
        await pilot.press("escape")
        await settle(pilot)
        screen.filter_typing.apply_now()  # what the waiting filter's timer does, however late it fires
        await settle(pilot)
        assert not line.is_open and screen.row_filter.text == "" and screen.typed_filter is None
        assert "x" not in applied and "mx" not in applied


@async_test
async def test_keys_typed_right_after_slash_go_to_the_filter(tmp_path):
    """The reported bug: '/Xid' opened Describe because focus moved one frame late."""
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        line = app.screen.query_one(CommandLine)
        line.open("filter")
        field = line.query_one(Input)
        assert app.screen.focused is field  # at once, not on the next idle
        await pilot.press(*"Xid")
        assert field.value == "Xid"
        assert app.screen is not None and len(app.screen_stack) == 1  # no Describe dialog


@async_test
async def test_the_open_line_takes_the_status_lines_place_so_the_tables_keep_their_size(tmp_path):
    """Opening ``/`` or ``:`` must not shrink the table above it: a new size redraws every row."""
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        status = screen.query_one("#pane-status")
        before, status_row = table.region, status.region.y
        for key in ("slash", "colon"):
            await pilot.press(key)
            await settle(pilot)
            line = screen.query_one(CommandLine)
            assert line.is_open and not status.display and line.region.y == status_row
            assert table.region == before, key
            await pilot.press("escape")
            await settle(pilot)
            assert not line.is_open and status.display and table.region == before


def post_key_without_waiting(app, key: str, char: str) -> None:
    """A key as the terminal driver posts it, with no wait for the app to go idle (Pilot.press
    waits, which hid keys typed faster than the app routed the one before)."""
    from textual import events

    event = events.Key(key, char)
    event.set_sender(app)
    app.post_message(event)


@async_test
async def test_keys_sent_back_to_back_after_slash_and_colon_land_in_the_line(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        table = app.screen.query_one(KeyedTable)
        cursor = table.cursor_row
        for key, char in [("slash", "/"), ("j", "j"), ("o", "o"), ("b", "b")]:
            post_key_without_waiting(app, key, char)
        field = app.screen.query_one(CommandLine).query_one(Input)
        await settle_until(pilot, lambda: field.value == "job")
        assert field.value == "job" and table.cursor_row == cursor  # no "j" went to the table

        # "/" and ":" typed inside the line are text, not a new line
        for key, char in [("slash", "/"), ("colon", ":")]:
            post_key_without_waiting(app, key, char)
        await settle_until(pilot, lambda: field.value == "job/:")
        assert field.value == "job/:"


@async_test
async def test_queue_pane_at_80x24_keeps_name_state_position_and_why(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(80, 24)) as (_, _, app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        visible = table.visible_column_keys
        assert {"name", "state", "pos", "why"} <= set(visible)
        drawn = sum(table.column_width(k) + 2 * table.cell_padding for k in visible)
        assert drawn <= table.scrollable_content_region.width
        assert table.column_width("why") >= 12


@async_test
async def test_widths_follow_content_after_a_notice(tmp_path):
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(CountingTable)
        table.apply_rows([], notice=Text("◌ loading workloads.kueue.x-k8s.io (first list not finished) " * 2))
        await pilot.pause()
        assert table.column_width("name") > 60
        table.apply_rows([("a", ["CQ jobqueue (research)", "ok", "1m"])])
        await pilot.pause()
        assert table.column_width("name") == len("CQ jobqueue (research)")


@async_test
async def test_tab_completes_commands(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        await pilot.press("colon", *"mult", "tab")
        field = app.screen.query_one("#command-input", Input)
        assert field.value == "multikueue "
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "multikueue"
        await pilot.press("colon", *"ns team", "tab")
        field = app.screen.query_one("#command-input", Input)
        assert field.value == "ns team-"
        assert "team-nlp" in str(app.screen.query_one("#command-count").render())


@async_test
async def test_clicking_a_pane_tab_switches_pane(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        header = app.screen.query_one(HeaderBar)
        start, end, mode = next(span for span in header.tab_spans if span[2] == "runs")
        await pilot.click(HeaderBar, offset=(start + 2, 1))
        await settle(pilot)
        assert app.current_mode == "runs"


@async_test
async def test_readonly_says_why_a_key_does_nothing(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", readonly=True, size=(120, 30)) as (_, _, app, pilot):
        notifications = record_notifications(app)
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert any("read-only" in message and "Cancel" in message for message in notifications), notifications
        assert len(app.screen_stack) == 1  # nothing previewed


@async_test
async def test_a_change_is_read_without_waiting_for_the_refresh_tick(tmp_path):
    """The change poll (every 0.1 s) starts the pane's refresh once a kind it reads moved; the tick
    (a minute here) would be far later.  Bounded by pauses, never by the clock; no settle (it ticks)."""
    from tau_tui.app import CHANGE_POLL_S
    from tau_tui.core.cluster.kinds import ResourceKind
    from tau_tui.settings.settings_file import AppSettings

    async with demo_app(tmp_path, start_pane="queue", settings=AppSettings(refresh_tick=60.0), size=(120, 30),
                        settled=False) as (_, backend, app, pilot):
        screen = app.screen
        for _ in range(400):
            await pilot.pause(CHANGE_POLL_S)
            if screen.refreshes_applied and not screen.refresh_running:
                break
        assert screen.refreshes_applied >= 1
        started, polls = screen.reader.collects_started, 0
        for _ in range(20):  # nothing moved: the poll starts no read
            await pilot.pause(CHANGE_POLL_S / 2)
        assert screen.reader.collects_started == started
        workload = backend.workloads()[0]
        backend._api_patch(ResourceKind.WORKLOAD.type, workload.name, workload.namespace,
                           {"metadata": {"labels": {"touched": "yes"}}}, False)
        while screen.reader.collects_started == started and polls < 400:
            await pilot.pause(CHANGE_POLL_S)
            polls += 1
        assert screen.reader.collects_started == started + 1, "the change never started a refresh"


@async_test
async def test_tick_rereads_only_when_a_generation_moved(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (world, backend, app, pilot):
        screen = app.screen
        started = screen.reader.collects_started
        for _ in range(5):
            app.refresh_tick()
        await settle(pilot)
        assert screen.reader.collects_started == started  # nothing moved: no collect
        world.advance(30)
        await settle_until(pilot, lambda: screen.reader.collects_started > started)
        assert screen.reader.collects_started > started


@async_test
async def test_invisible_pane_does_no_work_on_a_tick(tmp_path, monkeypatch):
    from tests.app.helpers import demo_backend

    world, backend = demo_backend()
    calls = {"queue": 0}
    original = QueueScreen.collect

    def counting(self, request):
        calls["queue"] += 1
        return original(self, request)

    monkeypatch.setattr(QueueScreen, "collect", counting)
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert calls["queue"] >= 1
        await pilot.press("6")  # nodes
        await settle(pilot)
        before = calls["queue"]
        world.advance(30)  # the queue pane's data moved, but it is not on screen
        for _ in range(5):
            app.refresh_tick()
        await settle(pilot)
        assert calls["queue"] == before


@async_test
async def test_positions_are_read_once_per_changed_local_queue(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (world, backend, app, pilot):
        screen = app.screen
        reads = screen._positions.reads
        assert reads >= 1
        for _ in range(3):
            screen.tick(force=True)  # re-collect with nothing changed
            await settle(pilot)
        assert screen._positions.reads == reads


@async_test
async def test_column_widths_come_from_the_plans_and_a_redraw_measures_no_cell():
    """A cell is measured once, in the plan that brings it; a redraw of 20,000 rows measures none."""
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows = await filled_table(app, pilot)
        measured = table.stats["measured"]
        table.refresh()
        await pilot.pause()
        assert table.stats["measured"] == measured
        assert table.column_width("age") == 3  # "59m" and the label "Age", as the plan measured


def test_a_new_tables_column_widths_are_counted_per_column_like_cell_by_cell():
    """A first plan counts each column's widths at once; rows shorter than others, wide characters,
    None and control characters count as each cell would alone."""
    rows = [("a", ["abc", Text("● ok"), None, "x\x1by"]), ("b", ["abcd", Text("日本")]), ("c", ["", Text("● ok"), "zz"])]
    plan = plan_rows(TableState(columns=4), rows)
    expected = [Counter() for _ in range(4)]
    for _, cells in rows:
        for index, cell in enumerate(cells):
            expected[index][cell_width(as_cell(cell))] += 1
    assert [dict(column) for column in plan.width_deltas] == [dict(column) for column in expected]
    assert plan.measured == sum(len(cells) for _, cells in rows)
    assert [widths for _, _, widths in plan.added] == [tuple(cell_width(as_cell(c)) for c in cells) for _, cells in rows]


@pytest.mark.parametrize("text", ["job", "JOB-1", "job-1 lq", "ns-é", "x:y=z", "a/b", "nothing-like-it", "job.1", "! job",
                                  "-l app=x"])
def test_a_plain_filter_found_in_folded_texts_keeps_exactly_the_rows_its_regex_keeps(text):
    rows = {f"k{i}": (t, {"app": "x"} if i % 2 else {}) for i, t in enumerate(
        ["team/JOB-1 lq-0 pending", "team/job-12 LQ-1 admitted", "ns-É/job-1 lq", "ns-é/other", "X:Y=Z", "a/b/c",
         "İstanbul job-1", "job_1", ""])}
    row_filter = parse_filter(text)
    keys = [*rows, "missing", NOTICE_KEY]
    assert kept_rows(row_filter, keys, rows, NOTICE_KEY, folded_texts(rows)) == kept_rows(row_filter, keys, rows, NOTICE_KEY)


@async_test
async def test_typing_in_the_filter_line_lays_out_neither_the_field_nor_its_count(tmp_path):
    """A layout refresh re-renders the whole screen (about 40 ms at 160x48 on a 20,000-row queue);
    a typed character repaints the field and a count that fits the label's least width."""
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        await pilot.press("slash")
        await settle(pilot)
        line = app.screen.query_one(CommandLine)
        field, count = line.query_one(Input), line.query_one("#command-count")
        layouts: Counter[str] = Counter()
        for widget in (field, count):
            original = widget.refresh

            def counted(*regions, _original=original, _name=widget.id, **flags):
                layouts[_name] += bool(flags.get("layout"))
                return _original(*regions, **flags)

            widget.refresh = counted  # type: ignore[method-assign]
        await pilot.press(*"llama")
        await settle(pilot)
        assert field.value == "llama" and "match" in str(count.render())
        assert layouts == Counter({"command-input": 0, "command-count": 0})
        long_text = "x" * 30
        line.set_count(long_text)  # wider than the label's least width: laid out, as it must be
        await settle(pilot)
        assert layouts["command-count"] >= 1  # (and once more when a shorter count replaces it)


class FilteredTableApp(App):
    def compose(self):
        yield KeyedTable([ColumnSpec("name", "Name", "N"), ColumnSpec("state", "State", "S")], id="t")


@async_test
async def test_a_filter_that_changes_the_row_count_lays_the_screen_out_only_when_a_scrollbar_comes_or_goes():
    app = FilteredTableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(KeyedTable)
        rows = [(f"ns/wl-{i:05d}", [f"ns/wl-{i:05d}", "pending"]) for i in range(5_000)]
        table.apply_rows(rows, matchable={key: (key, {}) for key, _ in rows})
        await pilot.pause()
        assert table.show_vertical_scrollbar
        layouts = []
        original = table.refresh

        def counted(*regions, **flags):
            layouts.append(bool(flags.get("layout")))
            return original(*regions, **flags)

        table.refresh = counted  # type: ignore[method-assign]
        for text in ("wl-01", "wl-012", "wl-0123"):  # 1,000, 100 and 10 rows: the scrollbar stays, until 10
            table.set_row_filter(parse_filter(text))
            await pilot.pause()
        assert table.row_count == 10 and table.virtual_size.height == 10 + table.header_height
        assert table.stats["layouts_spared"] >= 3  # row counts changed three times, without a layout of their own
        assert layouts.count(True) == 1 and not table.show_vertical_scrollbar  # 10 rows fit: the bar went
        table.set_row_filter(parse_filter(""))
        await pilot.pause()
        assert table.row_count == 5_000 and table.show_vertical_scrollbar and layouts.count(True) == 2
        table.move_cursor(row=4_999)
        await pilot.pause()
        assert table.scroll_y == table.max_scroll_y > 0  # the virtual size it scrolls in is the new one
