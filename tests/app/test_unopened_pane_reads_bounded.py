"""A pane nobody opened does no work in proportion to its rows: the Runs pane's read ahead of its
first open reads its first part only (``RUNS_IN_A_FIRST_PART`` runs), reads nothing more while it
stays unopened, and goes on with the other runs once it is opened.  Counted in runs read, never
timed."""

from __future__ import annotations

import pytest

from tau_tui.screens import run_rows
from tau_tui.screens.runs import RunsScreen
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, make_app, settle, settle_until

FIRST_PART = 3


def runs_read_ahead(app) -> RunsScreen | None:
    screen = app.pane_preparation.unopened_panes.get("runs")
    return screen if isinstance(screen, RunsScreen) and screen.reader.prepared is not None else None


@async_test
async def test_the_runs_pane_read_ahead_reads_one_part_and_nothing_more_until_it_is_opened(tmp_path, monkeypatch):
    monkeypatch.setattr(run_rows, "RUNS_IN_A_FIRST_PART", FIRST_PART)
    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        assert await settle_until(pilot, lambda: runs_read_ahead(app) is not None)
        screen = runs_read_ahead(app)
        assert screen is not None
        runs = len(app.backend.jobs()) + len(app.backend.ray_jobs())
        assert runs > FIRST_PART  # the demo has more runs than one part
        rows = screen._run_rows
        read_ahead = rows.rows_built
        assert read_ahead <= FIRST_PART, f"the read ahead built {read_ahead} rows of {runs} runs for a pane not open"
        assert rows.statuses_computed <= FIRST_PART
        # not open: the app's ticks read it no further
        for _ in range(5):
            app.refresh_tick()
            await settle(pilot)
        assert rows.rows_built == read_ahead and rows.full_reads == 1 and rows.quick_reads == 0
        assert screen.reader.collects_started == 0
        # opened: the part read ahead is shown, then the other runs come
        app.action_switch_pane("runs")
        table = screen.query_one("#runs-table", KeyedTable)
        assert await settle_until(pilot, lambda: table.row_count == runs and screen.data.reading is None)
        assert app.screen is screen and screen.reader.prepared_shown == 1
        assert rows.full_reads == 1  # the read ahead went on; nothing was read twice
        assert rows.rows_built <= runs


def test_a_runs_read_stopped_as_its_pane_left_goes_on_from_where_it_stopped(monkeypatch):
    """Leaving the Runs pane stops its read; the next read reads the runs not read yet, not every run again."""
    from tau_tui.core.operations.node_health_memo import NodeHealthMemo
    from tau_tui.core.operations.run_status_memo import RunStatusMemo
    from tau_tui.screens.pane_reader import ReadNoLongerWanted, read_place
    from tau_tui.screens.run_rows import RunRows
    from tests.app.helpers import demo_backend

    monkeypatch.setattr(run_rows, "RUNS_BETWEEN_LOOKS", 1)
    world, backend = demo_backend()
    try:
        runs = len(backend.jobs()) + len(backend.ray_jobs())
        rows = RunRows()
        read_runs: list[str] = []
        point_back = RunRows._point_back

        def noting(kept, key, owner, parts):
            read_runs.append(key)
            point_back(kept, key, owner, parts)

        monkeypatch.setattr(RunRows, "_point_back", staticmethod(noting))
        looks = [0]

        def leaves_after_five() -> None:
            looks[0] += 1
            if looks[0] > 5:
                raise ReadNoLongerWanted

        now = backend._now()
        faults = NodeHealthMemo().faults(backend.nodes(), now)

        def read(keep_reading):
            return rows.read(backend, read_place(backend), now, faults, RunStatusMemo(), {}, lambda *_: None, True,
                             None, keep_reading)

        with pytest.raises(ReadNoLongerWanted):  # the pane left the screen
            read(leaves_after_five)
        assert len(read_runs) == 5
        whole = read(lambda: None)  # the pane is back
        assert whole.reading is None and len(whole.rows) == runs
        assert rows.full_reads == 1, "the stopped read was thrown away and every run read again"
        assert len(read_runs) == runs, f"{len(read_runs)} runs read for {runs}"
    finally:
        backend.close()
