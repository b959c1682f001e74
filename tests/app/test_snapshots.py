"""Snapshot tests: every pane at 80x24 and 160x48 on the demo scenario (frozen clock),
plus the help, palette and confirm dialogs.  Update with ``--snapshot-update`` and look
at every changed baseline as a PNG before accepting it (see docs/testing.md)."""

from __future__ import annotations

import asyncio
import time

import pytest
from textual.widgets import Input

from tests.app.helpers import make_app, settle, settle_until, wait_workers
from tests.recovery_world import fail_by_oom, fail_by_xid79, recovery_world

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
PANES = ["compose", "profiles", "queue", "runs", "logs", "nodes", "multikueue"]


def freeze_cursors(app) -> None:
    """Blinking cursors make screenshots flaky: hold them visible."""
    for screen in app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False


async def wait_for_log(pilot, ref: str) -> None:
    app = pilot.app
    await app.open_logs_for_run(ref)
    screen = app.screen
    last, stable_since = -1, time.monotonic()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        await pilot.pause()
        view = screen.query_one("LogView")
        count = view.lines_seen
        if count != last or count == 0:
            last, stable_since = count, time.monotonic()
        elif time.monotonic() - stable_since > 0.6 and view.settled:
            break
    await pilot.pause(0.3)


def prepare(pane: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        # at least two applied refreshes: the second one sees what the first one's workers produced
        await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 2) >= 2)
        if pane == "logs":
            await wait_for_log(pilot, "taugrid-default/nccl-allreduce-check")
        if pane == "compose":
            await pilot.pause(0.5)
            await wait_workers(app)
        await settle(pilot)
        freeze_cursors(app)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pane", PANES)
def test_pane(snap_compare, tmp_path, workspace, pane, size):
    app = make_app(tmp_path, start_pane=pane, compose_file="tau.yaml" if pane == "compose" else None)
    assert snap_compare(app, terminal_size=size, run_before=prepare(pane))


@pytest.mark.parametrize("size", SIZES)
def test_node_drill_down(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="nodes")

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("down", "down", "enter")  # a100-node-3: degraded, with pods on it
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help_dialog(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="queue")

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_palette(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="nodes")

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.5)
        await pilot.press("c", "o", "r")
        await pilot.pause(0.5)
        freeze_cursors(pilot.app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_confirm_dialog(snap_compare, tmp_path, size):
    app = make_app(tmp_path, start_pane="queue")

    async def run_before(pilot):
        await settle(pilot)
        pilot.app.query_one("#workloads-table").focus()
        await pilot.press("ctrl+d")  # cancel the first pending workload: server dry-run, then confirm
        await settle(pilot)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_readonly_header_and_footer(snap_compare, tmp_path):
    app = make_app(tmp_path, start_pane="queue", readonly=True)
    assert snap_compare(app, terminal_size=(120, 30), run_before=lambda pilot: settle(pilot))


def test_high_contrast_theme(snap_compare, tmp_path):
    app = make_app(tmp_path, start_pane="nodes", theme="tau-high-contrast")
    assert snap_compare(app, terminal_size=(120, 30), run_before=lambda pilot: settle(pilot))


def test_stale_connection_banner(snap_compare, tmp_path):
    """An API outage: the pane keeps its last data under a "stale since" banner and
    GPU verdicts from that data never read healthy."""
    from tests.app.helpers import demo_backend

    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="nodes")

    async def run_before(pilot):
        await settle(pilot)
        world.api_outage("dial tcp 10.0.0.1:6443: i/o timeout")
        await settle_until(pilot, lambda: pilot.app.screen.query_one("#pane-banner").has_class("-shown"))

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_forbidden_view_notice(snap_compare, tmp_path):
    """A view the user may not read shows the core's message, not an empty table."""
    from tau_tui.core.cluster.kinds import ResourceKind
    from tau_tui.core.sim.backend import SimulatedBackend
    from tau_tui.core.sim.scenario import build_world
    from tau_tui.core.sim.store import qualified

    world = build_world("demo")
    identity = "system:serviceaccount:team-nlp:viewer"
    world.store.grant(identity, ("get", "list", "watch"),
                      [qualified(k.type) for k in ResourceKind if k is not ResourceKind.WORKLOAD])
    backend = SimulatedBackend(world, identity=identity, namespace="team-nlp", realtime=False)
    backend.start()
    app = make_app(tmp_path, backend, start_pane="queue")

    async def run_before(pilot):
        screen = pilot.app.screen
        await settle_until(pilot, lambda: screen.query_one("#workloads-table").keys == ["__notice__"]
                           and len(screen.query_one("#queues-table").keys) > 3
                           and screen.query_one("#pane-banner").has_class("-shown"))

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_drain_preview_dialog(snap_compare, tmp_path):
    """Drain preview: budget, pods to evict, pods that stay, server dry-run."""
    app = make_app(tmp_path, start_pane="nodes")

    async def run_before(pilot):
        await settle(pilot)
        table = pilot.app.screen.query_one("#nodes-table")
        table.focus()
        table.move_cursor(row=table.get_row_index("h100-node-0"))
        await pilot.press("D")
        await settle(pilot)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def _run_hit_by_xid79(tmp_path):
    """The recovery world with its run failed by XID 79 on its node (issue #14 items 3 and 4)."""
    world, backend = recovery_world(tmp_path, realtime=False)
    fail_by_xid79(world, backend)
    backend.start()
    assert backend.wait_synced(10)
    return backend


@pytest.mark.parametrize("size", SIZES)
def test_runs_gpu_fault_mark_and_retry_decision(snap_compare, tmp_path, size):
    app = make_app(tmp_path, _run_hit_by_xid79(tmp_path), start_pane="runs")
    assert snap_compare(app, terminal_size=size, run_before=prepare("runs"))


@pytest.mark.parametrize("size", SIZES)
def test_resume_preview_dialog(snap_compare, tmp_path, size):
    app = make_app(tmp_path, _run_hit_by_xid79(tmp_path), start_pane="runs")

    async def run_before(pilot):
        await prepare("runs")(pilot)
        await pilot.press("R")  # resume: server dry-run, the node it avoids, where it can land
        await settle(pilot)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_force_resume_after_oomkilled_dialog(snap_compare, tmp_path, size):
    """R on an OOMKilled run: the confirmation is a force-resume that says why it is risky (#14 item 4)."""
    world, backend = recovery_world(tmp_path, realtime=False)
    fail_by_oom(world, backend)
    backend.start()
    assert backend.wait_synced(10)
    app = make_app(tmp_path, backend, start_pane="runs")

    async def run_before(pilot):
        await prepare("runs")(pilot)
        await pilot.press("R")
        await settle(pilot)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_nodes_list_the_runs_a_gpu_fault_hit(snap_compare, tmp_path, size):
    app = make_app(tmp_path, _run_hit_by_xid79(tmp_path), start_pane="nodes")
    assert snap_compare(app, terminal_size=size, run_before=prepare("nodes"))
