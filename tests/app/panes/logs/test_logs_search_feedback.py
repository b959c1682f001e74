"""Feedback while working (issue #43): a search of the whole log can take long on a big spool.  While
it runs, the line under the info line says what it searches for; ``esc`` stops it: the screen says so
at once, its matches are never shown, and the last search stays.  The slow search is made slow by an
event the test holds, never by time."""

from __future__ import annotations

import threading

from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.screens.logs import LogsScreen
from tau_tui.widgets.log_view import LogView
from tests.app.helpers import async_test, demo_app, pause_until, settle, settle_until_done, visible_text

#: A bound for a hang only (a gate the test forgot to open), never a speed.
GATE_HANG_S = 120





@async_test
async def test_a_long_search_says_what_it_searches_and_esc_stops_it(tmp_path, monkeypatch):
    opened, entered = threading.Event(), threading.Event()
    search = LogSpool.search

    def held_search(self, text, *args, **kwargs):
        if text == "allreduce":
            entered.set()
            opened.wait(GATE_HANG_S)
        return search(self, text, *args, **kwargs)

    monkeypatch.setattr(LogSpool, "search", held_search)
    async with demo_app(tmp_path, size=(160, 40), start_pane="runs") as (_, _, app, pilot):
        await app.open_logs_for_run("taugrid-default/nccl-allreduce-check")
        await settle_until_done(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None,
                                "the log stream open")
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        view = screen.query_one(LogView)
        await settle_until_done(pilot, lambda: view.lines_seen > 100, "the log's lines")
        screen.run_search("level")  # a search that ends: its matches stay after the stopped one
        await settle_until_done(pilot, lambda: bool(view.hits), "the first search's matches")
        hits = list(view.hits)
        try:
            await pilot.press("slash", *"allreduce", "enter")
            await pause_until(pilot, lambda: "searching the whole log for /allreduce" in visible_text(app),
                              "the line saying what it searches")
            assert entered.is_set() and "esc cancels" in visible_text(app)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen  # esc stopped the search; it did not leave the pane
            assert "✗ cancelled: search for /allreduce stopped" in visible_text(app), visible_text(app)
        finally:
            opened.set()
        await settle(pilot)
        assert view.hits == hits and screen.search_text == "level"  # the stopped search shows nothing
        assert "/level" in str(screen.query_one("#logs-info").render())
