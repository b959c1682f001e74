"""The Pods and Events views on the demo: a run's, a namespace's and every pod and event, opened by
``:pods``/``:events`` and by ``p``/``e`` on a run; ``l``, ``d`` and ``y`` from there; and the Logs
pane reading a RayJob's driver output first."""

from __future__ import annotations

from tau_tui.screens.events import EventsScreen
from tau_tui.screens.logs import LogsScreen
from tau_tui.screens.pods import PodsScreen
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.log_view import LogView
from tau_tui.widgets.object_dialog import ObjectDialog
from tests.app.helpers import async_test, demo_app, plain_cells, settle_until_done

RAY = "team-nlp/ray-rlhf-ppo"


async def command(pilot, text: str) -> None:
    await pilot.press(":", *text, "enter")


def table_of(app, table_id: str) -> KeyedTable:
    return app.screen.query_one(f"#{table_id}", KeyedTable)


def pods_shown(app) -> dict[str, list[str]]:
    table = table_of(app, "pods-table")
    return {key: plain_cells(table.cells_of(key)) for key in table.keys}


@async_test
async def test_pods_of_every_namespace_of_one_namespace_and_of_one_run(tmp_path):
    async with demo_app(tmp_path, start_pane="queue") as (world, backend, app, pilot):
        await command(pilot, "pods")
        await settle_until_done(pilot, lambda: isinstance(app.screen, PodsScreen) and pods_shown(app), "the Pods view's rows")
        every = {f"{p.namespace}/{p.name}" for p in backend.pods()}
        assert set(pods_shown(app)) == every
        await command(pilot, "pods team-vision")
        await settle_until_done(pilot, lambda: set(pods_shown(app)) == {k for k in every if k.startswith("team-vision/")},
                                "team-vision's pods only")
        await command(pilot, f"pods {RAY}")
        rayjob = [r for r in backend.ray_jobs() if r.name == "ray-rlhf-ppo"][0]
        ray_pods = {f"{p.namespace}/{p.name}" for p in backend.pods("team-nlp")
                    if p.labels.get("ray.io/cluster") == rayjob.ray_cluster_name}
        await settle_until_done(pilot, lambda: set(pods_shown(app)) == ray_pods, "the RayJob's head and worker")
        assert len(ray_pods) == 2
        rows = pods_shown(app)
        assert all(cells[2] == "ray-rlhf-ppo" and cells[4].endswith("Running") for cells in rows.values())
        assert "Pods › team-nlp/ray-rlhf-ppo" in app.screen.crumbs()
        assert app.screen.query_one("#pane-status").render().plain.startswith("2 pods · run team-nlp/ray-rlhf-ppo")


@async_test
async def test_p_and_e_on_a_run_open_its_pods_and_events_with_l_d_y_from_there(tmp_path):
    async with demo_app(tmp_path, start_pane="runs") as (world, backend, app, pilot):
        runs = table_of(app, "runs-table")
        await settle_until_done(pilot, lambda: "taugrid-default/llama-70b-sft" in runs.keys, "the run's row")
        runs.focus()
        runs.move_cursor(row=runs.keys.index("taugrid-default/llama-70b-sft"))
        await pilot.press("p")
        await settle_until_done(pilot, lambda: isinstance(app.screen, PodsScreen) and len(pods_shown(app)) == 2,
                                "the run's two pods")
        pods = table_of(app, "pods-table")
        pods.focus()
        first = pods.keys[0]
        await pilot.press("d")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ObjectDialog), "describe")
        assert first.split("/")[1] in app.screen.title_text
        await pilot.press("escape")
        await pilot.press("y")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ObjectDialog), "YAML")
        assert "(YAML)" in app.screen.title_text
        await pilot.press("escape")
        await settle_until_done(pilot, lambda: isinstance(app.screen, PodsScreen), "back on Pods")
        await pilot.press("l")
        await settle_until_done(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None,
                                "the pod's log")
        assert app.screen.run_ref == first
        await pilot.press("escape")
        await settle_until_done(pilot, lambda: isinstance(app.screen, PodsScreen), "back on Pods")
        await pilot.press("escape")
        await settle_until_done(pilot, lambda: app.current_mode == "runs", "back on Runs")
        runs.focus()
        await pilot.press("e")
        await settle_until_done(pilot, lambda: isinstance(app.screen, EventsScreen)
                                and table_of(app, "events-table").keys, "the run's events")
        events = table_of(app, "events-table")
        about = {plain_cells(events.cells_of(key))[3] for key in events.keys}
        assert "Job/llama-70b-sft" in about and any(a.startswith("Pod/llama-70b-sft-") for a in about)
        assert any(a.startswith("Workload/") for a in about)
        assert all(a.split("/", 1)[1].startswith(("llama-70b-sft", "job-llama-70b-sft")) for a in about)
        events.focus()
        events.move_cursor(row=next(i for i, key in enumerate(events.keys)
                                    if plain_cells(events.cells_of(key))[3].startswith("Pod/")))
        await pilot.press("l")
        await settle_until_done(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None,
                                "the pod's log from its event")


@async_test
async def test_the_logs_pane_reads_a_rayjobs_driver_output_first(tmp_path):
    async with demo_app(tmp_path, start_pane="runs") as (world, backend, app, pilot):
        await command(pilot, f"logs {RAY}")
        await settle_until_done(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None
                                and app.screen.query_one(LogView).lines_seen > 10, "the RayJob's log")
        spool = app.screen.stream.spool
        first = spool.line(0)
        assert first.startswith("[driver] Connecting to existing Ray cluster at address: ")
        driver = [line for line in spool.lines(0, 200) if line.startswith("[driver] ")]
        assert spool.lines(0, len(driver)) == driver  # the driver's history before any container
        info = app.screen.query_one("#logs-info").render()
        assert "driver first (ray job logs ray-rlhf-ppo-" in str(info)


@async_test
async def test_a_filter_on_pods_or_events_says_how_many_rows_it_shows_of_how_many(tmp_path):
    """As every pane since #43 (filtered counts): "2 of 14 pods", and the plain total once cleared."""
    async with demo_app(tmp_path, start_pane="queue") as (world, backend, app, pilot):
        for view, table_id, noun in (("pods", "pods-table", "pods"), ("events", "events-table", "events")):
            await command(pilot, view)
            await settle_until_done(pilot, lambda table_id=table_id: bool(app.screen.query(f"#{table_id}"))
                                    and table_of(app, table_id).row_count > 0, f"the {view} view's rows")
            total = table_of(app, table_id).row_count
            before = app.screen.query_one("#pane-status").render().plain
            assert before.startswith(f"{total} {noun} · ") or before.startswith(f"{total} {noun} ("), before
            await pilot.press("slash", *"team-vision", "enter")
            shown_line = f" of {total} {noun}"
            await settle_until_done(pilot, lambda shown_line=shown_line: shown_line in app.screen.query_one(
                "#pane-status").render().plain, f"the {view} view's filtered count")
            shown = table_of(app, table_id).row_count
            assert 0 < shown < total
            assert app.screen.query_one("#pane-status").render().plain.startswith(f"{shown} of {total} {noun}")
            await pilot.press("escape")
            await settle_until_done(pilot, lambda before=before: app.screen.query_one("#pane-status").render().plain
                                    == before, f"the {view} view's plain total again")
            await pilot.press("escape")
