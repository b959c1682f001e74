"""What a refresh costs, counted (never timed): the table filter looks only at the rows it must,
a plan made in the worker is carried out as made, unchanged rows are not drawn again, a Runs
refresh with nothing changed computes no run status, a slow read backs the next one off, and the
`tau-tui` process tunes and freezes its garbage collector."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from unittest.mock import patch

from rich.text import Text
from textual.app import App

from tau_tui.screens import pane_reader
from tau_tui.screens.messages import read_message
from tau_tui.screens.pane_reader import PaneRead, ReadAbandoned, ReadRequest
from tau_tui.screens.runs import RunsScreen
from tau_tui.textual_compat import probes
from tau_tui.textual_compat.app import repaint_holds
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.keyed_table import ColumnSpec, KeyedTable
from tau_tui.widgets.row_filter import RowFilter, parse_filter
from tau_tui.widgets.table_plan import plan_rows
from tests.app.helpers import async_test, demo_app, make_app, settle, settle_until, settle_until_done, wait_until

ROWS = 20_000


class TableApp(App):
    def compose(self):
        yield KeyedTable([ColumnSpec("name", "Name", "N"), ColumnSpec("state", "State", "S"),
                          ColumnSpec("age", "Age", "A")], id="t")


def rows_and_match(ages: int = 0) -> tuple[list, dict]:
    rows = [(f"ns/wl-{i:05d}", [Text(f"ns/wl-{i:05d}"), Text("pending"), Text(f"{(i + ages) % 60}s")]) for i in range(ROWS)]
    return rows, {key: (key, {}) for key, _ in rows}


async def filled(app, pilot) -> tuple[KeyedTable, list, dict]:
    """The app's table with ROWS matchable rows applied and drawn."""
    table = app.query_one(KeyedTable)
    rows, match = rows_and_match()
    table.apply_rows(rows, matchable=match)
    await pilot.pause()
    return table, rows, match


@async_test
async def test_typing_one_more_character_looks_only_at_the_rows_still_shown():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows, match = await filled(app, pilot)
        table.set_row_filter(parse_filter("wl-1"))
        shown = table.row_count
        assert shown == 10_000 and table.stats["matched"] == ROWS  # the first character: every row
        table.stats["matched"] = 0
        table.set_row_filter(parse_filter("wl-12"))
        assert table.row_count == 1_000 and table.stats["matched"] == shown  # only the rows shown
        table.stats["matched"] = 0
        table.set_row_filter(parse_filter("wl-1|x"))  # a regex may widen: every row again
        assert table.stats["matched"] == ROWS
        added = table.stats["added"]
        table.set_row_filter(parse_filter(""))
        assert table.row_count == ROWS and table.stats["added"] == added  # rows were stored, not re-added
        assert table.match_count == (ROWS, ROWS)


@async_test
async def test_plain_filters_fold_the_rows_texts_once_per_set_of_rows():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows, match = await filled(app, pilot)
        for text in ("WL-1", "wl-12", "", "wl-0", "wl.0"):  # typed, extended, cleared, again, a regex
            table.set_row_filter(parse_filter(text))
        assert table.stats["folded"] == ROWS  # one pass over the rows' texts for every plain filter
        assert table.row_count == 10_000  # "wl.0": "." is any character, as the regex says
        rows, match = rows_and_match(ages=1)
        table.apply_rows(rows, matchable=match)  # new rows: folded again at the next plain filter
        table.set_row_filter(parse_filter("wl-0"))
        assert table.stats["folded"] == 2 * ROWS and table.row_count == 10_000


@async_test
async def test_a_plan_made_off_the_ui_thread_is_carried_out_as_made_and_only_changed_cells_render_again():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table, rows, match = await filled(app, pilot)
        # every age ticks over (20,000 one-cell changes), planned against the table's state
        aged, _ = rows_and_match(ages=1)
        plan = plan_rows(table.state, aged, None, match)
        assert plan.cells_written == ROWS and not plan.added and not plan.stale
        table.row_strips.built = table.row_strips.reused = 0
        table.apply_plan(plan)
        assert table.stats["replanned"] == 0 and table.stats["updated"] == ROWS
        await pilot.pause()
        visible = table.size.height - table.header_height
        # every row changed: the visible rows are drawn again, none of the 20,000 others
        assert 0 < table.row_strips.built <= visible + 2
        # a refresh with nothing changed draws no row again
        built = table.row_strips.built
        table.refresh()
        await pilot.pause()
        assert table.row_strips.built == built and table.row_strips.reused >= visible - 2
        # a plan made against a state the table no longer has (a sort came in between) is made again
        stale = plan_rows(table.state, rows, None, match)
        table.sort_by("name")
        table.apply_plan(stale)
        assert table.stats["replanned"] == 1 and table.keys[0] == "ns/wl-00000"


@async_test
async def test_the_runs_pane_opens_with_the_statuses_the_recorder_worked_out_and_a_refresh_computes_none(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        backend = app.backend
        assert backend is not None
        runs = len(backend.jobs()) + len(backend.ray_jobs())
        # the evidence recorder looks at every run when it starts: their statuses are kept
        await settle_until(pilot, lambda: app.run_statuses.computed >= runs)
        assert app.run_statuses.computed == runs
        app.action_switch_pane("runs")
        await settle_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.data.rows)
        screen = app.screen
        assert isinstance(screen, RunsScreen) and len(screen.data.owners) == runs
        # each status worked out once: by the recorder, or by the pane's read ahead when it came first
        assert app.run_statuses.computed == runs
        computed = screen.statuses_computed
        screen.collect(read_request(screen))  # nothing changed since: every run's objects are the same objects
        assert screen.statuses_computed == computed and app.run_statuses.computed == runs


def read_request(screen) -> ReadRequest:
    """What a refresh of ``screen`` started now would read from (its tables as they are)."""
    return ReadRequest(table_states={table.id: table.state for table in screen.query(KeyedTable) if table.id})


def read_ahead(app) -> bool:
    """Every pane the app reads ahead holds its read."""
    return all(s.reader.prepared is not None for s in app.pane_preparation.unopened_panes.values())


@async_test
async def test_runs_and_nodes_are_read_once_ahead_and_open_with_those_rows_before_their_own_read(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: read_ahead(app))
        ahead = dict(app.pane_preparation.unopened_panes)
        assert set(ahead) == {"runs", "nodes"} and read_ahead(app)
        # not open: app ticks do not read them again
        for _ in range(3):
            app.refresh_tick()
            await settle(pilot)
        assert all(s.reader.collects_started == 0 and s.refreshes_applied == 0 for s in ahead.values())
        for mode, table_id in (("runs", "#runs-table"), ("nodes", "#nodes-table")):
            screen = ahead[mode]
            rows_when_own_read_started: list[int] = []
            tick = screen.tick

            def counting_tick(force: bool = False, screen=screen, tick=tick, table_id=table_id,
                              seen=rows_when_own_read_started) -> None:
                if force and not seen:
                    seen.append(screen.query_one(table_id, KeyedTable).row_count)
                tick(force)

            screen.tick = counting_tick  # type: ignore[method-assign]
            app.action_switch_pane(mode)
            await settle_until(pilot, lambda screen=screen: screen.refreshes_applied >= 1)
            assert app.screen is screen and screen.reader.prepared_shown == 1
            table = screen.query_one(table_id, KeyedTable)
            # the rows read ahead were on screen before the pane's own first read began
            assert rows_when_own_read_started and rows_when_own_read_started[0] == table.row_count > 0
            assert table.stats["replanned"] == 0  # both plans carried out as made in their workers
        assert app.pane_preparation.unopened_panes == {}


def nodes_laid_out_ahead(app) -> bool:
    nodes = app.pane_preparation.unopened_panes.get("nodes")
    return nodes is not None and nodes.laid_out_ahead


async def only_the_reads_asked_for(pilot, screen) -> None:
    """From now on ``screen`` reads only when the test asks (no re-read for the rows' ages), and no read
    runs; the caller's next lines run before any timer (no await after the check)."""
    screen.MAX_UNCHANGED_S = float("inf")
    await wait_until(pilot, lambda: not screen.refresh_running, what="the read in progress ended")


def note_at_frames(screen, value) -> list:
    """``value()`` noted each time ``screen`` draws a frame (its compositor refresh), in order."""
    noted: list = []
    probes.before_each_frame(screen, lambda: noted.append(value()))
    return noted


@async_test
async def test_runs_and_nodes_are_mounted_and_laid_out_ahead_and_their_first_open_mounts_nothing(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until_done(pilot, lambda: set(app.pane_preparation.unopened_panes) == {"runs", "nodes"} and all(
            screen.laid_out_ahead for screen in app.pane_preparation.unopened_panes.values()), "Runs and Nodes laid out ahead")
        runs = app.pane_preparation.unopened_panes["runs"]
        widgets = set(runs.query("*"))
        assert runs.mounted_ahead and runs.is_attached and widgets  # composed, and not shown
        table = runs.query_one("#runs-table", KeyedTable)
        assert table.size.width > 0  # laid out at the app's size
        mounted = probes.record_mounts(app)
        app.action_switch_pane("runs")
        await settle_until(pilot, lambda: runs.refreshes_applied >= 1)
        assert app.screen is runs and set(runs.query("*")) >= widgets
        assert not any(w in widgets or w is runs for w in mounted)  # its first open mounted none of them again
        assert table.row_count > 0


@async_test
async def test_a_pane_already_made_is_shown_once_it_resumed_and_a_pane_made_by_its_switch_keeps_textuals_hold(tmp_path):
    """Textual holds every repaint of a mode switch for 50 ms; a pane opened before, or laid out
    ahead, ends that hold right after its resume, and the hold's own timer then changes nothing."""
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until_done(pilot, lambda: nodes_laid_out_ahead(app), "the Nodes pane laid out ahead")
        nodes = app.pane_preparation.unopened_panes["nodes"]
        held_at_first_frame = note_at_frames(nodes, lambda: repaint_holds(app))
        resumed_when_shown: list[bool] = []
        show = app.pane_switch_mask.show_resumed

        def noting_show(end_hold) -> None:
            resumed_when_shown.append(nodes.resumed_before)
            show(end_hold)

        app.pane_switch_mask.show_resumed = noting_show  # type: ignore[method-assign]
        app.action_switch_pane("nodes")
        await settle_until_done(pilot, lambda: app.pane_switch_mask.switches_shown_on_resume >= 1, "switch 1 shown on its resume")
        assert app.screen is nodes and app.pane_switch_mask.switches_shown_on_resume == 1
        assert resumed_when_shown == [True]  # the hold ended after the pane's resume, not before
        assert 0 in held_at_first_frame  # a frame of the pane drawn without the hold
        app.action_switch_pane("queue")  # opened before
        await settle_until_done(pilot, lambda: app.pane_switch_mask.switches_shown_on_resume >= 2, "switch 2 shown on its resume")
        assert app.pane_switch_mask.switches_shown_on_resume == 2
        app.action_switch_pane("profiles")  # made by this switch: Textual's hold
        await settle_until(pilot, lambda: app.screen.is_mounted)
        await pilot.pause(0.1)  # the hold's timer has run
        assert app.pane_switch_mask.switches_shown_on_resume == 2 and repaint_holds(app) == 0
        app.action_switch_pane("queue")
        await settle(pilot)
        await pilot.pause(0.1)
        assert app.pane_switch_mask.switches_shown_on_resume == 3 and repaint_holds(app) == 0


@async_test
async def test_a_pane_mounted_ahead_and_opened_after_the_terminal_narrowed_fits_the_narrow_width(tmp_path):
    from tau_tui.widgets.pane_footer import PaneFooter

    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until_done(pilot, lambda: nodes_laid_out_ahead(app), "the Nodes pane laid out ahead")
        nodes = app.pane_preparation.unopened_panes["nodes"]
        assert not nodes.has_class("-narrow")
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        app.action_switch_pane("nodes")
        await settle_until(pilot, lambda: nodes.refreshes_applied >= 1)
        assert app.screen is nodes and nodes.has_class("-narrow") and nodes.query_one(PaneFooter).compact


@async_test
async def test_a_pane_opened_draws_its_first_frame_before_its_read_starts(tmp_path):
    """The read of a pane just opened would share the interpreter with drawing the frame the person
    waits for: it starts once that frame is drawn."""
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 1)
        await settle_until_done(pilot, lambda: nodes_laid_out_ahead(app), "the Nodes pane laid out ahead")
        nodes = app.pane_preparation.unopened_panes["nodes"]
        reads_at_frames = note_at_frames(nodes, lambda: nodes.reader.collects_started)
        app.action_switch_pane("nodes")
        await settle_until(pilot, lambda: nodes.refreshes_applied >= 1)
        assert reads_at_frames and reads_at_frames[0] == 0 and nodes.reader.collects_started >= 1


@async_test
async def test_a_change_read_waits_for_a_keys_hold_and_a_forced_read_does_not(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await settle_until(pilot, lambda: screen.refreshes_applied >= 1)
        await only_the_reads_asked_for(pilot, screen)
        started, held = screen.reader.collects_started, screen.reader.ticks_held_for_keys
        app.key_hold_until = time.monotonic() + 3600  # a person pressing keys, however slow the machine
        screen.reader.read_cpu_seconds = 0.0  # no back-off after a slow read (a busy machine's)
        screen.reader.drawn_signature = ("moved",)  # as after a change of the cluster
        # the hold's bound (test_refresh_not_starved_by_keys.py) out of the way, however slow the machine
        with patch.object(pane_reader, "MAX_HELD_FOR_KEYS_S", float("inf")):
            screen.tick_if_moved()
            assert screen.reader.collects_started == started and screen.reader.ticks_held_for_keys == held + 1
            screen.tick(force=True)  # a filter or a pane switch: read now
            assert screen.reader.collects_started == started + 1
            await wait_until(pilot, lambda: not screen.refresh_running, what="the forced read ended")
        app.key_hold_until = 0.0  # the keys paused: the change poll reads
        screen.reader.read_cpu_seconds = 0.0
        screen.reader.drawn_signature = ("moved",)
        screen.tick_if_moved()
        assert screen.reader.collects_started == started + 2


@async_test
async def test_keys_that_keep_coming_hold_the_mount_ahead(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    app.key_activity.last_key_at = time.monotonic() + 1e6  # a key "just came", at every look
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 1)
        for _ in range(3):
            app.pane_preparation.mount_unopened_panes()
            await settle(pilot)
        assert not any(screen.is_attached for screen in app.pane_preparation.unopened_panes.values())


@async_test
async def test_the_runs_pane_opened_with_no_rows_shows_its_first_runs_then_all_while_they_are_still_waited_for(
        tmp_path, monkeypatch):
    from tau_tui.screens import run_rows

    monkeypatch.setattr(run_rows, "RUNS_IN_A_FIRST_PART", 3)
    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    shown: list[tuple[str, int, bool]] = []
    set_status = RunsScreen.set_status

    def noting_status(screen: RunsScreen, text) -> None:  # from the first read on, whenever it comes
        set_status(screen, text)
        shown.append((str(text), screen.query_one("#runs-table", KeyedTable).row_count, screen.tau.first_rows_awaited))

    monkeypatch.setattr(RunsScreen, "set_status", noting_status)
    from contextlib import contextmanager

    from tau_tui.screens import pane_reader

    held: list[bool] = []  # per hold of the collector: whether it is for the rest of a read in parts

    @contextmanager
    def noting_hold():  # the collector's hold of a read a person waits for (a worker thread)
        shown = app.screen
        held.append(isinstance(shown, RunsScreen) and shown._run_rows._full_read_under_way is not None)
        yield

    monkeypatch.setattr(pane_reader, "collections_held", noting_hold)
    app = make_app(tmp_path, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        runs = len(app.backend.jobs()) + len(app.backend.ray_jobs())
        await settle_until(pilot, lambda: any(text.startswith(f"{runs} runs ·") for text, *_ in shown))
        first, *_, last = [seen for seen in shown if seen[0].startswith(("reading runs:", f"{runs} runs ·"))]
        assert first[0].startswith(f"reading runs: 3 of {runs} so far") and first[1] == 3
        assert first[2]  # the rest is still waited for: the recorder and read aheads still give way
        assert last[0].startswith(f"{runs} runs ·") and last[1] == runs and not last[2]
        assert screen._run_rows.full_reads == 1 and screen.statuses_computed <= runs
        assert True in held  # the rest's read is waited for as the first part's is


@async_test
async def test_a_pane_opened_before_its_first_rows_says_it_is_reading_until_they_come(tmp_path, monkeypatch):
    """An empty table is not "no runs": until the first read is shown its status line says so."""
    shown: list[tuple[str, int]] = []
    set_status = RunsScreen.set_status

    def noting_status(screen: RunsScreen, text) -> None:
        set_status(screen, text)
        shown.append((str(text), screen.query_one("#runs-table", KeyedTable).row_count))

    monkeypatch.setattr(RunsScreen, "set_status", noting_status)
    app = make_app(tmp_path, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        runs = len(app.backend.jobs()) + len(app.backend.ray_jobs())
        await settle_until(pilot, lambda: any(text.startswith(f"{runs} runs ·") for text, _ in shown))
        assert shown[0] == ("◌ reading runs…", 0)
        assert "reading" not in shown[-1][0] and shown[-1][1] == runs


@async_test
async def test_keys_that_never_stop_delay_the_read_ahead_only_up_to_its_bound(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    app.pane_preparation.longest_wait_for_quiet_s = 1e9  # no bound yet: keys that keep coming hold the read ahead
    app.key_activity.last_key_at = time.monotonic() + 1e6  # a key "just came", at every look
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.pane_preparation.waits_since is not None)
        for _ in range(3):
            app.pane_preparation.prepare_panes(app.backend)
            await settle(pilot)
        assert not app.pane_preparation.unopened_panes  # nothing made or read while keys come
        app.pane_preparation.longest_wait_for_quiet_s = 0.0  # the bound passed: read, in the gaps between keys
        app.pane_preparation.prepare_panes(app.backend)
        await settle_until(pilot, lambda: set(app.pane_preparation.unopened_panes) == {"runs", "nodes"} and read_ahead(app))
        assert all(s.reader.prepared is not None for s in app.pane_preparation.unopened_panes.values())


@async_test
async def test_a_pane_opened_while_it_is_read_ahead_waits_for_that_read_instead_of_reading_twice(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: read_ahead(app))
        nodes = app.pane_preparation.unopened_panes["nodes"]
        backend, where, read, _ = nodes.reader.prepared
        nodes.reader.prepared = None
        nodes.start_read_ahead()  # as if its read ahead were still going when the user opens it
        app.action_switch_pane("nodes")
        await settle(pilot)
        assert app.screen is nodes and nodes.reader.collects_started == 0 and nodes.refreshes_applied == 0
        assert not nodes.reader.reading_ahead  # the read no longer rests: somebody waits for it
        nodes.keep_prepared(backend, where, read)  # the read ends
        assert nodes.reader.prepared_shown == 1 and nodes.reader.collects_started == 0  # shown; its own refresh once drawn
        await settle_until(pilot, lambda: nodes.reader.collects_started == 1)
        assert nodes.query_one("#nodes-table", KeyedTable).row_count > 0
        await settle_until(pilot, lambda: nodes.refreshes_applied >= 1)
        assert nodes.refreshes_applied >= 1 and not nodes.read_ahead_running


@async_test
async def test_a_read_ahead_from_another_namespace_is_not_shown(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: read_ahead(app))
        runs = app.pane_preparation.unopened_panes["runs"]
        app.backend.use_namespace("team-nlp")  # :ns keeps the backend object
        await settle(pilot)
        app.action_switch_pane("runs")
        await settle_until(pilot, lambda: runs.refreshes_applied >= 1)
        assert runs.reader.prepared_shown == 0 and runs.reader.prepared is None
        assert all(key.startswith("team-nlp/") for key in runs.query_one("#runs-table", KeyedTable).keys)


@async_test
async def test_a_pane_that_leaves_the_screen_stops_its_read_and_reads_again_when_back(tmp_path):
    app = make_app(tmp_path, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.refreshes_applied >= 1)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        assert isinstance(runs.reader.read(99, RowFilter(""), {}), PaneRead)  # on screen: reads
        app.action_switch_pane("queue")
        await settle(pilot)
        applied = runs.refreshes_applied
        # a read still running when the pane left: it stops at its next step, nothing planned
        read = runs.reader.read(runs.reader.generation, RowFilter(""), {})
        assert isinstance(read, ReadAbandoned)
        abandoned = runs.reader.reads_abandoned  # its own refresh may have been stopped by the switch already
        runs.reader.refresh_running = True
        runs.post_message(read_message(read))
        await settle(pilot)
        assert runs.reader.reads_abandoned == abandoned + 1 and not runs.refresh_running
        assert runs.refreshes_applied == applied
        app.action_switch_pane("runs")
        await settle_until(pilot, lambda: runs.refreshes_applied > applied)
        assert runs.refreshes_applied > applied and runs.reader.reads_abandoned == abandoned + 1


@async_test
async def test_a_slow_read_backs_the_next_refresh_off_unless_forced(tmp_path):
    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        screen = app.screen
        await only_the_reads_asked_for(pilot, screen)
        screen.reader.read_cpu_seconds = 3600.0  # the last read took an hour of the processor
        screen.reader.finished_at = time.monotonic()
        screen.reader.drawn_signature = None  # as if the cluster changed
        started, backed_off = screen.reader.collects_started, screen.reader.ticks_backed_off
        screen.tick()
        assert screen.reader.ticks_backed_off == backed_off + 1 and screen.reader.collects_started == started
        screen.tick(force=True)  # a filter or a pane switch is never held back
        assert screen.reader.collects_started == started + 1
        await settle(pilot)


def test_the_tau_tui_process_tunes_and_freezes_its_collector_and_a_test_process_does_not():
    code = ("import gc; from tau_tui.startup.heap import settle_heap, tune_collector; "
            "before = settle_heap(); tune_collector(); after = settle_heap(); "
            "print(before, after > 0, *gc.get_threshold())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # small young collections; full ones only when the app settles the heap (never on an allocation)
    assert out == ["0", "True", "10000", "5", "1000000000"]


def test_a_first_read_holds_collections_off_and_freezes_what_it_built():
    """A pane's first read builds 20,000 statuses and rows that stay: no collection walks them while
    they are made (nested holds and holds from two threads included), none after (frozen).  A test
    process, whose collector is not tuned, is left as it is."""
    code = ("import gc, json, threading; from tau_tui.startup.heap import collections_held, tune_collector\n"
            "seen = []\n"
            "with collections_held(): seen.append(gc.isenabled())\n"
            "tune_collector(); frozen = gc.get_freeze_count()\n"
            "inner_done = threading.Event(); outer_may_end = threading.Event()\n"
            "def other():\n"
            "    with collections_held(): inner_done.set(); outer_may_end.wait(10)\n"
            "    seen.append(gc.isenabled())\n"
            "with collections_held():\n"
            "    kept = [[i] for i in range(1000)]\n"
            "    with collections_held(): seen.append(gc.isenabled())\n"
            "    seen.append(gc.isenabled())\n"
            "    t = threading.Thread(target=other); t.start(); inner_done.wait(10)\n"
            "seen.append(gc.isenabled()); outer_may_end.set(); t.join(10)\n"
            "print(json.dumps([seen, gc.isenabled(), gc.get_freeze_count() - frozen >= 1000]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    seen, enabled_after, froze = json.loads(out.strip().splitlines()[-1])
    # untuned: untouched; nested: still off; the other thread's hold outlives the first: still off
    assert seen == [True, False, False, False, True] and enabled_after and froze


@async_test
async def test_the_heap_is_settled_only_while_keys_are_quiet(tmp_path):
    from tau_tui.app_components.heap_upkeep import KEYS_QUIET_S

    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        pressed = time.monotonic()
        await pilot.press("j")
        assert app.key_activity.last_key_at >= pressed
        settles = app.heap_upkeep.settles  # its own timer may have settled it before the key (no await after this)
        app.key_activity.last_key_at = time.monotonic()  # a key just now, however long the press took
        app.heap_upkeep.settle_if_quiet()  # not yet
        assert app.heap_upkeep.settles == settles
        app.key_activity.last_key_at = time.monotonic() - KEYS_QUIET_S - 0.1
        app.heap_upkeep.settle_if_quiet()
        assert app.heap_upkeep.settles == settles + 1
        await settle(pilot)


async def reads_before_and_after_the_clock_moves(tmp_path, pane: str, screen_type, rows_of) -> tuple[dict, dict]:
    """Two reads of a pane seven minutes apart with nothing but the clock moved: key -> cells, each."""
    from datetime import timedelta

    app = make_app(tmp_path, start_pane=pane)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: isinstance(app.screen, screen_type) and rows_of(app.screen.data))
        screen = app.screen
        before = dict(rows_of(screen.collect(read_request(screen))))
        later = app.now() + timedelta(minutes=7)
        app.now = lambda: later  # type: ignore[method-assign]  # only the clock moves
        after = dict(rows_of(screen.collect(read_request(screen))))
    return before, after


@async_test
async def test_a_queue_read_in_which_only_times_waited_moved_keeps_every_other_cell_object(tmp_path):
    from tau_tui.screens.queue import QueueScreen
    from tau_tui.screens.queue_workloads import DELTA_CELL, POS_CELL, WAITING_CELL

    before, after = await reads_before_and_after_the_clock_moves(tmp_path, "queue", QueueScreen,
                                                                 lambda data: data.workload_rows)
    waiting = [key for key, cells in after.items() if cells[WAITING_CELL] != before[key][WAITING_CELL]]
    assert waiting, "no pending workload's time waited moved in 7 minutes"
    for key in waiting:
        # the moved cell is new; the others (state, name, queue, priority, why pending) are the
        # objects the table holds, so it neither compares nor redraws them
        assert all(now is was for index, (now, was) in enumerate(zip(after[key], before[key], strict=True))
                   if index not in (WAITING_CELL, POS_CELL, DELTA_CELL))
    unchanged = [key for key in after if key not in waiting]
    assert all(after[key] is before[key] for key in unchanged)


@async_test
async def test_a_runs_read_in_which_only_ages_moved_makes_only_the_age_cells_again(tmp_path):
    before, after = await reads_before_and_after_the_clock_moves(tmp_path, "runs", RunsScreen, lambda data: data.rows)
    aged = [key for key in before if after[key][-1] != before[key][-1]]
    assert aged, "no run's age moved in 7 minutes"
    for key in aged:
        assert all(now is was for now, was in zip(after[key][:-1], before[key][:-1], strict=True))


@async_test
async def test_opening_the_filter_line_and_switching_panes_draw_no_row_of_the_queue_again_but_the_cursors(tmp_path):
    """`/` moves the focus off the table and esc brings it back: only the cursor row's look changes,
    so only it is drawn again.  A pane shown again keeps its styles (Textual would restyle every
    widget and the table would drop every row it had drawn)."""
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.query_one("#workloads-table", KeyedTable).row_count > 3)
        await settle(pilot)
        table = app.screen.query_one("#workloads-table", KeyedTable)
        table.focus()
        await settle(pilot)
        strips = table.row_strips
        strips.built = 0
        await pilot.press("slash")
        await settle(pilot)
        assert app.screen.query_one("#command-line").is_open
        await pilot.press("escape")
        await settle(pilot)
        assert strips.built <= 2  # the cursor row, blurred and focused again
        styled = []
        resumed = app.screen
        original = resumed.update_node_styles
        resumed.update_node_styles = lambda *a, **k: (styled.append(1), original(*a, **k))[1]  # type: ignore[method-assign]
        strips.built = 0
        await pilot.press("4")
        await settle_until(pilot, lambda: app.current_mode == "runs")
        await pilot.press("3")
        await settle_until(pilot, lambda: app.current_mode == "queue")
        await settle(pilot)
        assert styled == [] and strips.built <= 1
        # the app's theme changed while the pane was away: restyled, in the new theme's colours
        dark = table.rich_style
        await pilot.press("4")
        await settle_until(pilot, lambda: app.current_mode == "runs")
        app.theme = next(name for name in app.available_themes if name != app.theme and "light" in name)
        await settle(pilot)
        await pilot.press("3")
        await settle_until(pilot, lambda: app.current_mode == "queue")
        await settle(pilot)
        assert styled
        shown = table.rich_style
        assert shown != dark
        original()  # a restyle of every widget finds nothing to change
        await settle(pilot)
        assert table.rich_style == shown


@async_test
async def test_esc_in_the_filter_line_is_one_frame_with_the_line_closed_the_status_back_and_every_row(tmp_path):
    """What esc changes is asked for at once, so the first frame after it shows all of it: left to
    Textual's messages, the layout would be a frame of its own, and a frame starts the 60 Hz update
    timer, so the rows would wait for its next tick.  The focus goes back to the table that had it
    when `/` was pressed."""
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until_done(pilot, lambda: app.screen.query_one("#workloads-table", KeyedTable).row_count > 3,
                                "the queue's rows")
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        line = screen.query_one("#command-line", CommandLine)
        status = screen.query_one("#pane-status")
        every_row = table.row_count
        table.focus()
        await settle(pilot)

        async def filter_nothing_matches() -> None:
            await pilot.press("slash", *"no-such-workload")
            await settle_until_done(pilot, lambda: table.row_count < every_row, "the typed filter applied")

        await filter_nothing_matches()
        line.action_close()  # what esc does, and what it leaves asked for before any message is read
        assert (probes.layout_pending(screen), screen.row_filter.text, table.row_count, app.focused) == (True, "", every_row, table)
        await settle(pilot)

        await filter_nothing_matches()
        noted = note_at_frames(screen, lambda: (line in probes.visible_widgets(screen), status in probes.visible_widgets(screen),
                                                table.row_count, screen.row_filter.text, app.focused is table))
        close = line.action_close

        def esc_noted_then_closing() -> None:
            noted.append("esc")  # the filter's own frame may still be drawn between the press and esc's handling
            close()

        with patch.object(line, "action_close", esc_noted_then_closing):
            await pilot.press("escape")
            await settle(pilot)
        assert "esc" in noted, "esc did not reach the filter line"
        frames = noted[noted.index("esc") + 1:]
        assert frames, "no frame after esc"
        assert frames[0] == (False, True, every_row, "", True)
