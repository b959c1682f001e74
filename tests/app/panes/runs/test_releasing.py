"""The Runs pane after a cancel: "releasing compute" while the pods still hold GPUs, then gone, or
"cancelled" when this pane cancelled it."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.engine import Outcome
from tau_tui.settings.settings_file import AppSettings
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_app, demo_backend, make_app, settle_until
from tests.multikueue_lab import lab_job, make_lab

KEY = "taugrid-default/llama-70b-sft"


async def cancel_from_pane(pilot, key: str) -> None:
    """Select the run, ctrl+d, confirm with y; returns once its row reads releasing."""
    app = pilot.app
    table = app.screen.query_one("#runs-table", KeyedTable)
    table.focus()
    table.move_cursor(row=table.keys.index(key))
    await pilot.press("ctrl+d")
    await settle_until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
    await pilot.press("y")
    await settle_until(pilot, lambda: table.cells_of(key) is not None and "releasing" in table.cells_of(key)[0].plain)


@async_test
async def test_a_cancelled_run_reads_releasing_compute_until_its_pods_are_gone(tmp_path):
    async with demo_app(tmp_path, start_pane="runs", settled=False) as (world, backend, app, pilot):
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None)
        assert "running" in table.cells_of(KEY)[0].plain
        assert backend.cancel(ResourceKind.JOB, "taugrid-default", "llama-70b-sft").ok
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "releasing" in table.cells_of(KEY)[0].plain)
        assert table.cells_of(KEY)[0].plain.endswith("releasing compute")
        world.advance(35)  # the pods' grace period ends
        await settle_until(pilot, lambda: table.cells_of(KEY) is None)
        assert table.cells_of(KEY) is None


@async_test
async def test_a_run_cancelled_from_the_pane_reads_releasing_then_cancelled(tmp_path):
    async with demo_app(tmp_path, start_pane="runs", settled=False) as (world, backend, app, pilot):
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None)
        await cancel_from_pane(pilot, KEY)
        assert table.cells_of(KEY)[0].plain == "◑ releasing compute"
        world.advance(35)  # the pods' grace period ends
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "cancelled" in table.cells_of(KEY)[0].plain)
        assert table.cells_of(KEY)[0].plain == "■ cancelled"
        release = app.screen.data.statuses[KEY].phase("Compute release")
        assert release is not None and release.status == "done" and "every pod is gone" in release.detail


@async_test
async def test_a_multikueue_run_cancelled_from_the_pane_is_released_when_the_workers_pods_are_gone(tmp_path):
    lab = make_lab(tmp_path)
    assert lab.exercise("setup").run(lambda preview: True, timeout=30) is Outcome.VERIFIED
    assert all(r.ok for r in lab.backend.submit([lab_job()]))
    lab.world.advance(15)
    key = "team-nlp/mk-train"
    workers = sorted(lab.fleet.workers)
    app = make_app(tmp_path, lab.backend, start_pane="runs",
                   settings=AppSettings(refresh_tick=0.5, worker_contexts={w: w for w in workers}))
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: key in app.screen.data.statuses and app.screen.data.statuses[key].cluster)
        worker = app.screen.data.statuses[key].cluster
        remote = lab.fleet.workers[worker]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "mk-train-0-abcde", "namespace": "team-nlp", "labels": {"job-name": "mk-train"}},
               "spec": {"nodeName": f"{worker}-gpu-0", "containers": [{"name": "trainer", "image": "t:1"}]},
               "status": {"phase": "Running"}}
        remote.store.put(ResourceKind.POD.type, pod)
        await cancel_from_pane(pilot, key)
        assert table.cells_of(key)[0].plain == "◑ releasing compute"
        release = app.screen.data.statuses[key].phase("Compute release")
        assert release is not None and f"on worker {worker}" in release.detail
        remote.store.remove(ResourceKind.POD.type, "mk-train-0-abcde", "team-nlp")
        await settle_until(pilot, lambda: table.cells_of(key) is not None and "cancelled" in table.cells_of(key)[0].plain)
        assert table.cells_of(key)[0].plain == "■ cancelled"
        assert app.screen.cancelled_runs[key].worker is None  # released: the worker is not read again


@async_test
async def test_a_rayjob_cancelled_from_the_pane_reads_releasing_until_its_ray_pods_are_gone(tmp_path):
    world, backend = demo_backend()
    key = "team-nlp/ray-rlhf-ppo"
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(key) is not None and "running" in table.cells_of(key)[0].plain)
        await cancel_from_pane(pilot, key)
        release = app.screen.data.statuses[key].phase("Compute release")
        assert release is not None and "2 pod(s) still hold GPUs" in release.detail
        world.advance(35)  # the Ray pods' grace period ends
        await settle_until(pilot, lambda: table.cells_of(key) is not None and "cancelled" in table.cells_of(key)[0].plain)
        assert table.cells_of(key)[0].plain == "■ cancelled"
