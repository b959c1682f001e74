"""The Runs pane after an OOMKilled: resume (R) is offered only as a force-resume whose
confirmation says why it is risky, as `tau-tui runs resume --force` is; and in
--readonly cancel, retry and resume are hidden and refused."""

from __future__ import annotations

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, make_app, settle, settle_until
from tests.recovery_world import NS, RUN, fail_by_oom, recovery_world

KEY = f"{NS}/{RUN}"


def oom_backend(tmp_path):
    world, backend = recovery_world(tmp_path, realtime=False)
    fail_by_oom(world, backend)
    backend.start()
    assert backend.wait_synced(10)
    return world, backend


def of_type(messages, kind):
    return [m for m in messages if isinstance(m, kind)]


@async_test
async def test_resume_after_oomkilled_is_a_confirmed_force_resume_with_a_warning(tmp_path):
    world, backend = oom_backend(tmp_path)
    app = make_app(tmp_path, backend, start_pane="runs")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "failed" in table.cells_of(KEY)[0].plain)
        assert any(d.code == "OOM_KILLED" for d in app.screen.data.statuses[KEY].diagnostics)
        table.focus()
        table.move_cursor(row=table.keys.index(KEY))
        await pilot.press("R")
        await settle_until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        dialog = app.screen
        assert dialog.can_confirm
        assert "OOMKilled" in dialog.title_text and "--force" in dialog.title_text
        assert "⚠ resuming after an OOMKilled (--force)" in dialog.preview.plain
        assert dialog.verb == "Force-resume"
        await pilot.press("y")
        await settle_until(pilot, lambda: bool(of_type(messages, TauApp.MutationApplied)))
        assert of_type(messages, TauApp.MutationApplied)[-1].ok, of_type(messages, TauApp.MutationApplied)[-1].text
        assert backend.get(ResourceKind.JOB, f"{RUN}-resume-1", NS) is not None
        await settle(pilot)


@async_test
async def test_readonly_hides_and_refuses_cancel_retry_and_resume_in_the_runs_pane(tmp_path):
    world, backend = oom_backend(tmp_path)
    app = make_app(tmp_path, backend, start_pane="runs", readonly=True)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        screen = app.screen
        table = screen.query_one("#runs-table", KeyedTable)
        await settle_until(pilot, lambda: table.cells_of(KEY) is not None and "failed" in table.cells_of(KEY)[0].plain)
        table.focus()
        table.move_cursor(row=table.keys.index(KEY))
        shown = {b.action for b in screen.active_bindings_list()}
        assert not {"cancel", "retry", "resume"} & shown, shown
        for key in ("ctrl+d", "r", "R"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmDialog), key
        for action in (screen.action_cancel, screen.action_retry, screen.action_resume):
            action()  # called directly, as a keymap or palette bug would
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmDialog)
        assert [m.verb for m in of_type(messages, TauApp.MutationBlocked)] == ["cancel", "retry", "force-resume"]
        assert not of_type(messages, TauApp.MutationPreviewed)
        assert backend.get(ResourceKind.JOB, f"{RUN}-resume-1", NS) is None
