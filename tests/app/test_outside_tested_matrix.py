"""The app says Kueue's release in ``:version`` and the ``?`` help, and warns once a session, without
blocking anything, when the cluster's Kubernetes and Kueue are outside the tested version matrix
(the simulated cluster reports the Kubernetes version and the Workload CRD's release label it is given)."""

from __future__ import annotations

from textual.widgets import Static

from tau_tui.core.cluster.tested_cells import TESTED_CELLS
from tau_tui.core.operations.multikueue_steps.simulated_fleet import seed_crds
from tau_tui.screens.base import PaneScreen
from tau_tui.widgets.help_dialog import HelpDialog
from tests.app.helpers import async_test, demo_backend, make_app, record_notifications, settle, wait_until, wait_workers

OUTSIDE = ("Kubernetes v1.29.3 with Kueue v0.17.0 (CRD label) is outside the tested version matrix: "
           "see docs/compatibility.md")


def app_on(tmp_path, kubernetes: str | None, kueue: str | None):
    world, backend = demo_backend()
    if kubernetes is not None:
        world.settings.kubernetes_version = kubernetes
    if kueue is not None:
        seed_crds(world, kueue=kueue)
    app = make_app(tmp_path, backend)
    return app, backend, record_notifications(app)


@async_test
async def test_a_cell_outside_the_table_is_warned_once_a_session(tmp_path):
    app, backend, said = app_on(tmp_path, "v1.29.3", "v0.17.0")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.found_versions.line_for(backend) is not None, what="the versions read")
        await settle(pilot)
        assert said.count(OUTSIDE) == 1
        assert isinstance(app.screen, PaneScreen)  # a notice: nothing blocks
        # the backend starts again (as after :ctx): read again, not warned again
        app.found_versions.read(backend)
        await wait_workers(app)
        await settle(pilot)
        await app.command_mode.run_command_text("version")
        await settle(pilot)
        assert said.count(OUTSIDE) == 1
        assert said[-1].splitlines()[2:3] == ["Kueue v0.17.0 (CRD label)"]
        assert said[-1].splitlines()[-1] == OUTSIDE  # :version says it when asked
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpDialog)
        assert "Kubernetes v1.29.3 (simulated) · Kueue v0.17.0 (CRD label) · " in \
            str(app.screen.query_one("#help-versions", Static).render())


@async_test
async def test_a_tested_cell_is_not_warned_and_is_said_in_the_help(tmp_path):
    kubernetes, kueue = TESTED_CELLS[0]
    app, backend, said = app_on(tmp_path, f"v{kubernetes}.1", f"{kueue}.0")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.found_versions.line_for(backend) is not None, what="the versions read")
        await settle(pilot)
        assert app.found_versions.warned == []
        assert not any("outside the tested version matrix" in s for s in said)
        await pilot.press("question_mark")
        await settle(pilot)
        shown = str(app.screen.query_one("#help-versions", Static).render())
        assert f"Kubernetes v{kubernetes}.1 (simulated) · Kueue {kueue}.0 (CRD label) · " in shown


@async_test
async def test_an_unknown_kueue_release_says_nothing_extra(tmp_path):
    app, backend, said = app_on(tmp_path, "v1.29.3", None)  # no Workload CRD to read
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.found_versions.line_for(backend) is not None, what="the versions read")
        await settle(pilot)
        assert app.found_versions.warned == []
        assert "Kueue unknown" in app.found_versions.line_for(backend)
        assert not any("outside the tested version matrix" in s for s in said)
