"""Issue #43 defect 6 (Logs): a toggle never moves a paused view.  ``t`` (timestamps) opens the log
again and used to start following; ``j`` (JSON) and ``w`` (wrap) lay the log out again and used to
jump to line 1, because the line at the top was looked up under the new layout.  Now the view stays
paused on the line it showed, and the moves go on from there."""

from __future__ import annotations

from tau_tui.screens.logs import LogsScreen
from tau_tui.widgets.log_view import LogView
from tests.app.helpers import async_test, demo_app, settle, settle_until_done

RUN = "taugrid-default/nccl-allreduce-check"


def top_line(view: LogView) -> int:
    """The log line shown at the top of the view."""
    return view.line_at_row(int(view.scroll_offset.y))[0]


def info_line(screen: LogsScreen) -> str:
    return str(screen.query_one("#logs-info").render())


async def paused_mid_log(app, pilot) -> tuple[LogsScreen, LogView, int]:
    """The log open, its history read, paused (``f``) three pages up: (screen, view, lines)."""
    await app.open_logs_for_run(RUN)
    await settle_until_done(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None,
                            "the log stream open")
    screen = app.screen
    assert isinstance(screen, LogsScreen)
    view = screen.query_one(LogView)
    await settle_until_done(pilot, lambda: view.lines_seen > 200 and view.settled, "the log's history read")
    await pilot.press("f", "pageup", "pageup", "pageup")
    await settle(pilot)
    assert not view.following and 0 < top_line(view) < view.lines_seen - 50, (top_line(view), view.lines_seen)
    return screen, view, view.lines_seen


@async_test
async def test_timestamps_open_the_log_again_paused_on_the_same_line(tmp_path):
    async with demo_app(tmp_path, size=(120, 30), start_pane="runs") as (_, _, app, pilot):
        screen, view, history = await paused_mid_log(app, pilot)
        top = top_line(view)
        stream = screen.stream
        await pilot.press("t")
        await settle_until_done(pilot, lambda: screen.stream is not stream and screen.stream is not None
                                and view.lines_seen >= history and view.settled, "the log opened again")
        assert screen.request is not None and screen.request.timestamps
        # still paused, on the same line; the lines read again are not counted as new
        assert not view.following and "paused" in info_line(screen), info_line(screen)
        assert top_line(view) == top and view.pending_new == 0, (top_line(view), top, view.pending_new)
        await pilot.press("down")
        await settle(pilot)
        assert top_line(view) == top + 1 and not view.following


@async_test
async def test_json_and_wrap_keep_the_line_at_the_top_and_moves_go_on_from_there(tmp_path):
    async with demo_app(tmp_path, size=(120, 30), start_pane="runs") as (_, _, app, pilot):
        _, view, _ = await paused_mid_log(app, pilot)
        top = top_line(view)
        for key in ("j", "w", "j", "w"):
            await pilot.press(key)
            await settle_until_done(pilot, lambda: view.settled, f"the layout after {key}")
            assert not view.following, key
            assert top_line(view) == top, (key, view.json_pretty, view.wrap, top_line(view), top)
        await pilot.press("j")  # pretty-printed: a line takes several rows; down moves a row
        await settle_until_done(pilot, lambda: view.settled, "the JSON layout")
        row = int(view.scroll_offset.y)
        await pilot.press("down", "down")
        await settle(pilot)
        assert int(view.scroll_offset.y) == row + 2 and top_line(view) >= top and not view.following
