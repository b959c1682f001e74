"""Rights in one namespace only and no -n: every pane's empty state names the fix (-n NS or :ns NS),
and one notice (never one per tick) says so with the namespaces the person can read."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.store import qualified
from tau_tui.widgets.keyed_table import NOTICE_KEY, KeyedTable
from tests.app.helpers import async_test, make_app, settle, settle_until

IDENTITY = "system:serviceaccount:team-nlp:researcher"
NAMESPACED = [qualified(k.type) for k in ResourceKind if k.type.namespaced]


def namespace_only_backend(can_list_namespaces: bool) -> SimulatedBackend:
    world = build_world("demo")
    world.store.grant(IDENTITY, ("get", "list", "watch"), NAMESPACED + ["pods/log"], namespace="team-nlp")
    if can_list_namespaces:
        world.store.grant(IDENTITY, ("get", "list", "watch"), ["namespaces"])
    backend = SimulatedBackend(world, identity=IDENTITY, namespace=None, realtime=False)
    backend.start()
    return backend


def notices(app) -> list[str]:
    return list(getattr(getattr(app, "scope_notice", None), "given", ()))


async def settled_notice(pilot, app) -> str:
    await settle_until(pilot, lambda: bool(notices(app)))
    for _ in range(4):  # more ticks: still one notice
        app.refresh_tick()
        await settle(pilot)
    said = notices(app)
    assert len(said) == 1, said
    return said[0]


@async_test
async def test_every_pane_names_the_fix_and_one_notice_lists_the_readable_namespaces(tmp_path):
    app = make_app(tmp_path, namespace_only_backend(can_list_namespaces=True), start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await settle_until(pilot, lambda: table.keys == [NOTICE_KEY])
        empty = table.cells_of(NOTICE_KEY)[0].plain
        assert "(all namespaces)" in empty and "-n NS" in empty and ":ns NS" in empty, empty
        said = await settled_notice(pilot, app)
        assert "Listing workloads.kueue.x-k8s.io in all namespaces is forbidden" in said, said
        assert "-n NS" in said and ":ns NS" in said
        assert said.endswith("Namespaces you can read: team-nlp."), said
        await pilot.press("4")
        await settle_until(pilot, lambda: app.screen.query_one("#runs-table", KeyedTable).keys == [NOTICE_KEY])
        runs_empty = app.screen.query_one("#runs-table", KeyedTable).cells_of(NOTICE_KEY)[0].plain
        assert "-n NS" in runs_empty, runs_empty
        assert len(notices(app)) == 1


@async_test
async def test_without_the_namespace_list_the_notice_says_so_and_offers_the_service_accounts_namespace(tmp_path):
    app = make_app(tmp_path, namespace_only_backend(can_list_namespaces=False), start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        said = await settled_notice(pilot, app)
        assert "-n NS" in said and "Namespaces you can read: team-nlp." in said, said


@async_test
async def test_no_namespace_to_offer_says_it_cannot_list_them(tmp_path):
    world = build_world("demo")
    user = "alice"  # not a ServiceAccount: no namespace of its own to offer
    world.store.grant(user, ("get", "list", "watch"), NAMESPACED, namespace="team-nlp")
    backend = SimulatedBackend(world, identity=user, namespace=None, realtime=False)
    backend.start()
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        said = await settled_notice(pilot, app)
        assert "-n NS" in said and "Listing namespaces is not allowed either" in said, said
