"""The logs pane keeps file I/O off the UI thread: JSON pretty-print and wrap
re-lay out the whole spool in a worker, and rows come from a bounded cache a
worker fills (the UI thread never reads the spool file)."""

from __future__ import annotations

import json
import threading

from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.screens.logs import LogsScreen
from tau_tui.widgets.log_view import CACHE_LINES, LogView
from tests.app.helpers import async_test, demo_backend, make_app, of_type, settle, wait_until


def rendered_rows(view: LogView) -> list[str]:
    return ["".join(seg.text for seg in view.render_line(y)).rstrip() for y in range(view.size.height)]


def every_row_drawn(view: LogView) -> bool:
    """No visible row is a line the worker has not read into the cache yet ("…")."""
    return not any(r.strip() == "…" for r in rendered_rows(view))


@async_test
async def test_json_pretty_print_relayout_runs_in_a_worker(tmp_path, monkeypatch):
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="runs")
    messages: list = []
    ui_thread_reads: list[str] = []
    real_lines = LogSpool.lines

    def watched_lines(self, start=0, stop=None):
        if threading.current_thread() is threading.main_thread():
            committed = self.committed_count
            if start < committed and (stop is None or stop > start):
                ui_thread_reads.append(f"lines({start}, {stop})")
        return real_lines(self, start, stop)

    monkeypatch.setattr(LogSpool, "lines", watched_lines)
    async with app.run_test(size=(120, 30), message_hook=messages.append) as pilot:
        await settle(pilot)
        await app.open_logs_for_run("taugrid-default/nccl-allreduce-check")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None, what="stream")
        screen = app.screen
        view = screen.query_one(LogView)
        await wait_until(pilot, lambda: view.lines_seen > 100, what="history")
        await wait_until(pilot, lambda: every_row_drawn(view), what="rows drawn")
        plain = rendered_rows(view)
        json_rows = [r for r in plain if r.startswith('{"level":')]
        assert json_rows, plain  # one JSON object per line before pretty-printing
        lines_before = view.lines_seen

        await pilot.press("j")
        assert view.json_pretty
        await wait_until(pilot, lambda: of_type(messages, LogView.LayoutDone), what="re-layout")
        done = of_type(messages, LogView.LayoutDone)[-1]
        assert done.lines >= lines_before and done.rows > done.lines * 5  # every record spans several rows
        await wait_until(pilot, lambda: every_row_drawn(view), what="pretty rows drawn")
        pretty = rendered_rows(view)
        text = "\n".join(pretty)
        assert '"level": "info",' in text and '"sizes": {' in text and '"bytes":' in text, text
        first = next(i for i, row in enumerate(pretty) if row == "{")
        assert pretty[first + 1].startswith('    "level": ')
        assert "json" in str(screen.query_one("#logs-info").render())

        # the spool's record round-trips: the pretty rows are the JSON of one line
        line_index, sub = view.line_at_row(int(view.scroll_offset.y) + first)
        assert sub == 0
        record = json.loads(real_lines(view.spool, line_index, line_index + 1)[0])  # the test may read it
        assert record["logger"] == "nccl_check"

        # wrap too, then back: the row index is rebuilt each time, off the UI thread
        count = len(of_type(messages, LogView.LayoutDone))
        await pilot.press("w")
        await wait_until(pilot, lambda: len(of_type(messages, LogView.LayoutDone)) > count, what="wrap re-layout")
        await pilot.press("j")
        await pilot.press("w")
        await pilot.pause(0.3)
        assert not view.expanded

        # scrolling to the top needs lines that are not cached: a worker reads them
        view.set_following(False)
        view.scroll_home(animate=False, immediate=True)
        await pilot.pause(0.3)
        await wait_until(pilot, lambda: every_row_drawn(view), what="window fill")
        assert view._lines.maxsize == CACHE_LINES
    assert ui_thread_reads == [], ui_thread_reads[:5]
