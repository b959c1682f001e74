"""Issue #43 defect 6: the status line said "14 nodes" while a filter showed 5.  Every pane's
count now says how many rows the filter shows of how many ("5 of 14 nodes"), follows each
change of the filter, and reads as before once the filter is cleared."""

from __future__ import annotations

import re

from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, settle, settle_until

#: pane key, filter, the table it filters, what the status line says while it is on
CASES = [
    ("6", "a100", "nodes-table", re.compile(r"^(\d+) of 14 nodes · GPU health: ")),
    ("4", "llama", "runs-table", re.compile(r"^(\d+) of (\d+) runs · ")),
    ("3", "llama", "workloads-table", re.compile(r"· workloads: (\d+) of (\d+) shown · \d+ pending")),
    # a pane whose read filters (not its table): the same words
    ("2", "training", "profiles-table", re.compile(r"^(\d+) of (\d+) profiles · ")),
]


def status_line(app) -> str:
    return app.screen.query_one("#pane-status").render().plain


async def type_filter(pilot, text: str) -> None:
    await pilot.press("slash", *text, "enter")
    await settle(pilot)


@async_test
async def test_every_filtered_table_says_how_many_rows_it_shows_of_how_many(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        for pane, text, table_id, wanted in CASES:
            await pilot.press(pane)
            await settle_until(pilot, lambda table_id=table_id: bool(app.screen.query(f"#{table_id}")) and app.screen.refreshes_applied > 0)
            before = status_line(app)
            table = app.screen.query_one(f"#{table_id}", KeyedTable)
            total = table.row_count
            await type_filter(pilot, text)
            await settle_until(pilot, lambda wanted=wanted: wanted.search(status_line(app)) is not None)
            found = wanted.search(status_line(app))
            assert found is not None, (pane, status_line(app))
            shown = table.row_count
            assert 0 < shown < total, (pane, shown, total)
            assert int(found.group(1)) == shown, (pane, status_line(app), shown)
            if found.lastindex == 2:
                assert int(found.group(2)) == total, (pane, status_line(app), total)
            # a narrower filter: the count follows at once, no read needed
            await type_filter(pilot, "zzz-no-such-row")
            assert re.search(r"\b0 of \d+ ", status_line(app)), (pane, status_line(app))
            # cleared: the plain total again
            await pilot.press("escape")
            await settle_until(pilot, lambda before=before: status_line(app) == before)
            assert status_line(app) == before and " of " not in before, (pane, status_line(app), before)


@async_test
async def test_the_nodes_pane_says_5_of_14_nodes_for_the_a100_filter(tmp_path):
    async with demo_app(tmp_path, start_pane="nodes") as (_, _, app, pilot):
        await settle_until(pilot, lambda: status_line(app).startswith("14 nodes"))
        await type_filter(pilot, "a100")
        await settle_until(pilot, lambda: status_line(app).startswith("5 of 14 nodes"))
        assert status_line(app).startswith("5 of 14 nodes · GPU health: "), status_line(app)
        assert app.screen.query_one("#nodes-table", KeyedTable).row_count == 5
