"""The typed filter's timer is never 0 s: Textual's Timer divides by its interval when it fires
late, so on a busy machine a 0 s timer ended the app with ZeroDivisionError (seen in a full run
with another CPU-heavy job alongside). Here a key comes while a filter is being typed and the
longest wait has long passed, which used to ask for exactly 0 s."""

from __future__ import annotations

import time

from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.messages import CommandLineChanged
from tests.app.helpers import async_test, demo_app, settle


@async_test
async def test_a_key_after_the_longest_wait_still_gets_a_timer_above_zero(tmp_path):
    async with demo_app(tmp_path, start_pane="nodes") as (_, _, app, pilot):
        delays: list[float] = []
        typing = app.screen.filter_typing
        set_timer = typing._set_timer

        def recording_set_timer(delay, *args, **kwargs):
            delays.append(delay)
            return set_timer(delay, *args, **kwargs)

        typing._set_timer = recording_set_timer
        typing.text = "xid"  # typing, its filter not applied yet
        typing.since = time.monotonic() - 60  # the longest wait is long over
        app.screen.query_one(CommandLine).post_message(CommandLineChanged(mode="filter", text="xid7"))
        await settle(pilot)
        assert delays and min(delays) > 0, delays
        assert set(app.screen.query_one("#nodes-table", KeyedTable).keys) == {"h100-node-5"}
