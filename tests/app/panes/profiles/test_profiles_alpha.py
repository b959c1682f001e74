"""Issue 45 in the Profiles pane: a MultiKueue profile is marked Alpha in the list (the name and the
target) and its detail says why (data on a PVC stays on one cluster); single-cluster profiles are not
marked.  At 80 columns, where the name is cut in the middle and the target column is hidden, the
mark still shows."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, plain_cells, settle_until

MULTIKUEUE = "azure.research.multicluster.h100"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def detail(app) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(app.screen.query_one("#profile-why").content)
    return console.export_text()


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_a_multikueue_profile_is_marked_alpha_in_the_list_and_detail(tmp_path, size):
    async with demo_app(tmp_path, size=size, start_pane="profiles") as (_, _, app, pilot):
        await settle_until(pilot, lambda: bool(app.screen.query("#profiles-table"))
                           and app.screen.query_one("#profiles-table", KeyedTable).row_count > 0)
        table = app.screen.query_one("#profiles-table", KeyedTable)
        names = {key: plain_cells(table.row_cells(key) or [])[1] for key in table.keys}
        assert names[MULTIKUEUE] == f"{MULTIKUEUE} (Alpha)"
        assert all("Alpha" not in name for key, name in names.items() if key != MULTIKUEUE), names
        assert plain_cells(table.row_cells(MULTIKUEUE) or [])[-1] == "multiKueue (Alpha)"
        # what the screen shows: the mark survives the cut of a narrow column
        line = table.render_line(table.keys.index(MULTIKUEUE) + table.header_lines).text
        assert "h100 (Alpha)" in line, line  # the name's end and the mark
        table.move_cursor(row=table.keys.index(MULTIKUEUE))
        await settle_until(pilot, lambda: "Alpha" in detail(app))
        assert "MultiKueue · Alpha" in detail(app) and "stays on one cluster" in detail(app)
