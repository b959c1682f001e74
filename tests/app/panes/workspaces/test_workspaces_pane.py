"""The Workspaces pane (issue 45): `:workspaces` lists the demo's TauWorkspaces from the cache's
watch with phase and conditions, the primary one marked; a workspace that degrades while the pane is
open reads not Ready with the reason, without a restart; `d` and `y` open the object; the app scoped
to a namespace still sees the system namespace's workspaces.  Snapshots at 80x24 and 160x48."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.screens.workspaces import WorkspacesScreen
from tau_tui.widgets.object_dialog import ObjectDialog
from tests.app.helpers import async_test, demo_backend, make_app, settle, settle_until
from tests.degraded_workspace import add_degraded_workspace

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


async def open_workspaces(pilot) -> WorkspacesScreen:
    app = pilot.app
    await settle(pilot)
    await app.command_mode.run_command_text(":workspaces")
    await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 0) >= 1)
    assert isinstance(app.screen, WorkspacesScreen)
    return app.screen


def detail(pane: WorkspacesScreen) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(pane.query_one("#workspace-why").content)
    return console.export_text()


@async_test
async def test_colon_workspaces_lists_phase_and_conditions_and_follows_changes(tmp_path):
    world, backend = demo_backend()
    add_degraded_workspace(world)
    app = make_app(tmp_path, backend)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_workspaces(pilot)
        table = pane.query_one("#workspaces-table")
        assert list(table.keys) == ["tau-system/taugrid-default", "tau-system/team-nlp"]
        status = pane.query_one("#pane-status").render().plain
        assert status.startswith("2 workspaces · 1 Ready · primary: taugrid-default")
        assert "taugrid-default" in detail(pane) and "primary" in detail(pane)
        table.focus()
        await pilot.press("down")
        await settle(pilot)
        text = detail(pane)
        assert "not Ready" in text and "DriftDetected=True" in text and "RoleBindingEdited" in text
        # The primary workspace loses its queue: the watch brings it, the pane says why.
        world.store.update(ResourceKind.TAU_WORKSPACE.type, "taugrid-default", "tau-system", lambda o: o["status"].update(
            phase="Pending", conditions=[c if c["type"] != "QueueReady" else {**c, "status": "False", "reason": "LocalQueueMissing",
                                                                               "message": "LocalQueue jobqueue not found"}
                                         for c in o["status"]["conditions"]]))
        await pilot.press("up")
        await settle_until(pilot, lambda: "LocalQueueMissing" in detail(pane))
        assert pane.query_one("#pane-status").render().plain.startswith("2 workspaces · 0 Ready")
        assert "QueueReady=False" in detail(pane)
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ObjectDialog)


@async_test
async def test_a_namespace_scoped_app_still_sees_the_system_namespaces_workspaces(tmp_path):
    world, backend = demo_backend()
    add_degraded_workspace(world)
    app = make_app(tmp_path, backend)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_workspaces(pilot)
        await app.command_mode.run_command_text(":ns team-nlp")
        await settle(pilot)
        await app.command_mode.run_command_text(":workspaces")
        await settle_until(pilot, lambda: len(pane.query_one("#workspaces-table").keys) == 2)


async def _opened(pilot) -> None:
    pane = await open_workspaces(pilot)
    pane.query_one("#workspaces-table").focus()
    await pilot.press("down")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_workspaces_pane_snapshot(snap_compare, tmp_path, size):
    world, backend = demo_backend()
    add_degraded_workspace(world)
    assert snap_compare(make_app(tmp_path, backend), terminal_size=size, run_before=_opened)
