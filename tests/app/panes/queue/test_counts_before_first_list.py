"""Before the first lists end, nothing is counted as zero and the header does not say "stale since ?":
it says "connecting" (then "cannot connect: <reason>" if the first connection failed), and the
queue, Nodes and Runs panes read "…" where a total is not known yet."""

from __future__ import annotations

from datetime import UTC, datetime

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.app.helpers import async_test, make_app, settle, settle_until


def before_first_lists() -> SimulatedBackend:
    """A backend as a real one is before any list ended: every view syncing and empty, "connecting"."""
    backend = SimulatedBackend(build_world("demo"), realtime=False)
    backend.start()
    for kind in ResourceKind:
        backend.cache.clear(kind)
    backend.cache.set_connection(ConnectionState(ConnectionStatus.RECONNECTING, backend.current_context, None, "connecting"))
    return backend


def header_text(app) -> str:
    return str(app.screen.query_one("#header").render())


def status_text(app) -> str:
    return app.screen._status.plain


@async_test
async def test_nothing_is_counted_before_the_first_lists_end(tmp_path):
    backend = before_first_lists()
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: "CQ" in status_text(app))
        header, status = header_text(app), status_text(app)
        assert "◌ connecting" in header and "stale since" not in header, header
        assert status.startswith("… CQ · … LQ · workloads: … (first list not finished)"), status
        assert "0 CQ" not in status and "0 pending" not in status
        assert "stale since" not in str(app.screen.query_one("#pane-banner").render())

        await pilot.press("6")
        await settle_until(pilot, lambda: "nodes" in status_text(app))
        assert status_text(app).startswith("… nodes · GPU health: …"), status_text(app)
        await pilot.press("4")
        await settle_until(pilot, lambda: "runs" in status_text(app))
        assert status_text(app).startswith("… runs"), status_text(app)

        backend.close()  # the lists end: counts are known and shown
        backend.start()
        await pilot.press("3")
        await settle_until(pilot, lambda: "CQ" in status_text(app) and "…" not in status_text(app).split("workloads")[0])
        status = status_text(app)
        assert status.split(" CQ")[0].isdigit() and " pending" in status, status
        await settle(pilot)
        assert "● connected" in header_text(app)


@async_test
async def test_a_first_connection_that_failed_says_cannot_connect(tmp_path):
    backend = before_first_lists()
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        backend.cache.set_connection(ConnectionState(
            ConnectionStatus.RECONNECTING, None, datetime.now(UTC), "dial tcp 10.0.0.1:6443: connect: connection refused"))
        await settle_until(pilot, lambda: "cannot connect" in header_text(app))
        header = header_text(app)
        assert "✗ cannot connect: dial tcp 10.0.0.1:6443" in header and "stale since" not in header, header
        banner = str(app.screen.query_one("#pane-banner").render())
        assert "cannot connect: dial tcp 10.0.0.1:6443" in banner and "stale since" not in banner, banner
        assert "0 CQ" not in status_text(app)
