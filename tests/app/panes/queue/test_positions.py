"""Queue positions read as people count: #1 is next in line (Kueue's API is 0-based)."""

from __future__ import annotations

from tau_tui.screens.queue_workloads import display_position
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, demo_backend, make_app, settle


def backend_counting_position_reads():
    """The demo backend, and the (namespace, LocalQueue) of every position read it is asked for."""
    _, backend = demo_backend()
    asked: list[tuple[str, str]] = []
    ask = backend.pending_positions_local_queue
    backend.pending_positions_local_queue = lambda ns, lq: asked.append((ns, lq)) or ask(ns, lq)  # type: ignore[method-assign]
    return backend, asked


def pending_keys(screen) -> list[str]:
    """The queue pane's rows of pending Workloads."""
    return [key for key, wl in screen.data.workloads.items() if wl.status_word == "pending"]


def test_display_position_is_one_based_and_marks_estimates():
    assert display_position(0, False) == "#1"
    assert display_position(2, True) == "~3"


@async_test
async def test_queue_pane_positions_are_one_based(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (world, backend, app, pilot):
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "In line" in labels
        shown = {}
        for key, wl in screen.data.workloads.items():
            if wl.status_word != "pending":
                continue
            report = backend.pending_positions_local_queue(wl.namespace, wl.queue_name)
            entry = report.position_of(wl.namespace, wl.name)
            cell = table.cells_of(key)[1].plain
            assert cell == ("~" if report.estimated else "#") + str(entry.position_in_local_queue + 1)
            shown[key] = cell
        assert "#1" in shown.values(), shown  # the head of a queue reads #1, not 0


@async_test
async def test_a_large_first_read_shows_rows_before_positions_and_reads_them_right_after(tmp_path):
    import tau_tui.screens.queue as queue_screen

    backend, asked = backend_counting_position_reads()
    shown_first: dict[str, str] = {}
    original = queue_screen.ROWS_BEFORE_POSITIONS_OVER
    queue_screen.ROWS_BEFORE_POSITIONS_OVER = 0  # the demo's few pending Workloads count as many
    apply = queue_screen.QueueScreen.apply

    def first_apply(screen, data) -> None:
        apply(screen, data)
        if not shown_first:
            table = screen.query_one("#workloads-table", KeyedTable)
            shown_first.update({key: table.cells_of(key)[1].plain for key, wl in data.workloads.items()
                                if wl.status_word == "pending"})
            shown_first["asked"] = str(len(asked))
            shown_first["status"] = data.status if isinstance(data.status, str) else data.status.plain

    queue_screen.QueueScreen.apply = first_apply  # type: ignore[method-assign]
    try:
        app = make_app(tmp_path, backend, start_pane="queue")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            await settle(pilot)
            table = screen.query_one("#workloads-table", KeyedTable)
            pending = pending_keys(screen)
            assert pending and screen.refreshes_applied >= 2
            # first: every pending row, no position asked for, each marked as being read
            assert shown_first.pop("asked") == "0" and "reading positions" in shown_first.pop("status")
            assert shown_first and set(shown_first.values()) == {queue_screen.POSITION_READING}
            # then, with no key or tick in between: the positions, read once per LocalQueue with pending work
            assert all(table.cells_of(key)[1].plain.startswith(("#", "~")) for key in pending)
            # nobody moved the cursor: it stays on the first row, which now is the head of a queue
            assert table.cursor_row == 0 and table.selected_key == table.keys[0]
            assert table.cells_of(table.keys[0])[1].plain in ("#1", "~1")
            assert len(asked) >= len({(w.namespace, w.queue_name) for w in screen.data.workloads.values()
                                      if w.status_word == "pending"})
    finally:
        queue_screen.ROWS_BEFORE_POSITIONS_OVER = original
        queue_screen.QueueScreen.apply = apply  # type: ignore[method-assign]


@async_test
async def test_rows_of_a_first_list_still_coming_in_are_shown_and_their_positions_read_once_it_is_whole(tmp_path):
    """A real cluster's first list of Workloads comes page by page (the view syncing meanwhile): the
    rows listed so far are shown at once, marked as not counted yet, and no position is asked for
    until the list is whole; then they are, with no key pressed."""
    from tau_tui.core.cluster.changes import ViewStatus
    from tau_tui.core.cluster.kinds import ResourceKind
    from tau_tui.screens.queue_workloads import POSITION_READING
    from tests.app.helpers import settle_until

    backend, asked = backend_counting_position_reads()
    backend.cache.set_state(ResourceKind.WORKLOAD, ViewStatus.SYNCING, "12 listed so far")
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await settle(pilot)
        table = screen.query_one("#workloads-table", KeyedTable)
        pending = pending_keys(screen)
        assert pending and all(table.cells_of(key)[1].plain == POSITION_READING for key in pending)
        status = screen._status.plain
        assert "still listing (12 listed so far)" in status and " pending" not in status  # no partial counts
        assert not asked
        backend.cache.set_state(ResourceKind.WORKLOAD, ViewStatus.READY)
        await settle_until(pilot, lambda: all(table.cells_of(key)[1].plain.startswith(("#", "~")) for key in pending))
        assert all(table.cells_of(key)[1].plain.startswith(("#", "~")) for key in pending)
        assert "still listing" not in screen._status.plain and " pending" in screen._status.plain
        assert asked
