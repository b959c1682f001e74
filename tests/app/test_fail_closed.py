"""Fail closed: a dead connection keeps the last data under a "stale since T"
banner in every pane (never "healthy" for GPU data that may be out of date),
and a view the user may not read shows the core's message in its table."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.store import qualified
from tau_tui.screens.base import PaneScreen
from tau_tui.widgets.keyed_table import NOTICE_KEY, KeyedTable
from tests.app.helpers import async_test, demo_app, make_app, settle, settle_until

PANES = ("compose", "profiles", "queue", "runs", "logs", "nodes", "multikueue")


def banner_text(screen: PaneScreen) -> str:
    """The freshness part of the pane banner (the GPU-fault line beside it is the cluster's state)."""
    banner = screen.query_one("#pane-banner")
    text = str(banner.render()) if banner.display and banner.has_class("-shown") else ""
    return "\n".join(line for line in text.splitlines() if not line.startswith("⚠ GPU faults"))


@async_test
async def test_outage_every_pane_says_stale_and_keeps_last_data(tmp_path, workspace):
    async with demo_app(tmp_path, start_pane="queue") as (world, backend, app, pilot):
        screen = app.screen
        rows_before = screen.query_one("#workloads-table", KeyedTable).keys
        assert rows_before and banner_text(screen) == ""

        world.advance(2)
        world.api_outage("dial tcp 10.0.0.1:6443: connect: connection refused")
        world.advance(30)  # the cluster moves on; this client cannot see it
        await settle_until(pilot, lambda: banner_text(app.screen) != "")
        stamp = backend.connection_state().stale_since.strftime("%H:%M:%S")
        for pane in PANES:
            await pilot.press({"compose": "1", "profiles": "2", "queue": "3", "runs": "4", "logs": "5",
                               "nodes": "6", "multikueue": "7"}[pane])
            await settle_until(pilot, lambda: banner_text(app.screen) != "")
            text = banner_text(app.screen)
            assert f"stale since {stamp} — showing last known data" in text, (pane, text)
            assert "connection refused" in text
            for table in app.screen.query(KeyedTable):
                assert table.has_class("-stale")

        await pilot.press("3")
        await settle(pilot)
        table = app.screen.query_one("#workloads-table", KeyedTable)
        assert table.keys == rows_before  # last known data kept, not emptied

        # GPU health from data that may be out of date never reads "healthy"
        await pilot.press("6")
        await settle_until(pilot, lambda: "stale" in app.screen.query_one("#nodes-table", KeyedTable)
                           .cells_of("h100-node-0")[1].plain)
        nodes = app.screen.query_one("#nodes-table", KeyedTable)
        verdicts = [nodes.cells_of(k)[1].plain for k in nodes.keys]
        assert verdicts and not any(v.endswith(" healthy") for v in verdicts), verdicts
        assert any("stale (last: healthy)" in v for v in verdicts)
        assert any(v == "✗ unhealthy (stale)" for v in verdicts)

        # mutations fail with a plain message while the API is unreachable
        result = backend.cordon("h100-node-1")
        assert not result.ok and "cannot reach the API server" in result.message

        # back online: the banner goes, verdicts are fresh again
        world.api_restore()
        await settle_until(pilot, lambda: banner_text(app.screen) == "" and not nodes.has_class("-stale"))
        assert banner_text(app.screen) == ""
        verdicts = [nodes.cells_of(k)[1].plain for k in nodes.keys]
        assert any(v == "✓ healthy" for v in verdicts)
        assert not nodes.has_class("-stale")


@async_test
async def test_stale_connection_state_reads_connection_lost(tmp_path):
    async with demo_app(tmp_path, start_pane="runs", size=(120, 30)) as (world, backend, app, pilot):
        world.api_outage("i/o timeout", stale=True)
        await settle_until(pilot, lambda: banner_text(app.screen) != "")
        text = banner_text(app.screen)
        assert "showing last known data (connection lost: i/o timeout)" in text
        assert "stale since" in str(app.screen.query_one("#header").render())
        assert app.screen.query_one("#runs-table", KeyedTable).keys  # rows kept


@async_test
async def test_forbidden_view_shows_the_core_message_not_an_empty_table(tmp_path):
    world = build_world("demo")
    identity = "system:serviceaccount:team-nlp:viewer"
    readable = [qualified(k.type) for k in ResourceKind if k is not ResourceKind.WORKLOAD]
    world.store.grant(identity, ("get", "list", "watch"), readable + ["pods/log"])
    backend = SimulatedBackend(world, identity=identity, namespace="team-nlp", realtime=False)
    backend.start()
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.query_one("#workloads-table", KeyedTable).keys == [NOTICE_KEY])
        screen = app.screen
        table = screen.query_one("#workloads-table", KeyedTable)
        assert table.keys == [NOTICE_KEY]
        notice = table.cells_of(NOTICE_KEY)[0].plain
        assert notice == "✗ no access: list workloads.kueue.x-k8s.io in ns team-nlp"
        assert table.selected_key is None  # the notice is not a workload to act on
        assert "no access: list workloads.kueue.x-k8s.io in ns team-nlp" in banner_text(screen)
        # the readable views still show their data
        assert any(k.startswith("lq/") for k in screen.query_one("#queues-table", KeyedTable).keys)
        # the MultiKueue pane's workloads table says the same, instead of "no MultiKueue workloads"
        await pilot.press("7")
        await settle_until(pilot, lambda: app.screen.query_one("#mk-workloads", KeyedTable).keys == [NOTICE_KEY])
        mk = app.screen.query_one("#mk-workloads", KeyedTable)
        assert mk.keys == [NOTICE_KEY]
        assert "no access: list workloads.kueue.x-k8s.io" in mk.cells_of(NOTICE_KEY)[0].plain
