"""Searching the logs view: a new term, the previous match, and the help."""

from __future__ import annotations

from textual.widgets import Input

from tests.app.helpers import async_test, demo_app, settle, wait_until


def _text_of(widget) -> str:
    """What a widget shows on screen, its lines joined by spaces."""
    return " ".join("".join(seg.text for seg in widget.render_line(y)).strip() for y in range(widget.size.height))


@async_test
async def test_logs_search_previous_and_help(tmp_path):
    from tau_tui.screens.logs import LogsScreen
    from tau_tui.widgets.help_dialog import HelpDialog
    from tau_tui.widgets.log_view import LogView

    async with demo_app(tmp_path, start_pane="runs", size=(260, 40)) as (world, backend, app, pilot):
        await app.open_logs_for_run("taugrid-default/nccl-allreduce-check")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None, what="stream")
        screen = app.screen
        view = screen.query_one(LogView)
        await wait_until(pilot, lambda: view.lines_seen > 10, what="lines")

        # / opens empty: a new term replaces the last one instead of appending to it
        screen.run_search("level")
        await wait_until(pilot, lambda: bool(view.hits), what="hits")
        await pilot.press("slash")
        await settle(pilot)
        line = app.screen.query_one("CommandLine")
        assert line.query_one(Input).value == ""
        await pilot.press("escape")

        # another run: the old term and its highlight go together (no "no match" over highlighted lines)
        await app.open_logs_for_run("taugrid-default/tokenizer-sweep")
        await wait_until(pilot, lambda: screen.stream is not None and "tokenizer-sweep" in screen.run_title, what="2nd run")
        await settle(pilot)
        assert screen.search_text == "" and view.search_pattern is None
        assert "no match" not in str(screen.query_one("#logs-info").render())

        # p with no previous instance: the reason is in the body, whole, not cut off
        await pilot.press("p")
        await wait_until(pilot, lambda: screen.stream is not None and screen.request.previous and screen.stream.errors,
                         what="previous with an error", timeout=120)
        await settle(pilot)
        errors = "; ".join(screen.stream.errors)
        body = _text_of(view)
        assert view.lines_seen == 0 and errors in " ".join(body.split()), (errors, body)
        info = _text_of(screen.query_one("#logs-info"))
        assert errors in " ".join(info.split()), info

        # help on Logs says / searches
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpDialog), what="help")
        keys = _text_of(app.screen.query_one("#help-keys"))
        assert "search the whole log" in keys and "filter rows" not in keys, keys
