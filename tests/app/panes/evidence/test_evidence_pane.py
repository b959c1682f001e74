"""The Evidence pane: reached by ``:evidence`` and the palette, lists the records,
``enter``/``d`` opens one, ``esc`` goes back, ``x`` exports a bundle that verifies; --readonly
refuses the export.  Snapshots at 80x24 and 160x48 of the list and of an opened record."""

from __future__ import annotations

import pytest

from tau_tui.core.operations.evidence.capture import capture_live
from tau_tui.core.operations.evidence.cluster_identity import cluster_identity
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.evidence.verify import verify_bundle
from tau_tui.screens.evidence import EvidenceScreen
from tau_tui.screens.evidence_record import EvidenceRecordScreen
from tau_tui.widgets.input_dialog import InputDialog
from tests.app.helpers import async_test, demo_backend, make_app, settle, settle_until

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
#: Finished in the demo scenario: a failed Job, a succeeded Job and a succeeded RayJob.
RUNS = [("team-nlp", "eval-mmlu-0301"), ("taugrid-default", "tokenizer-sweep"), ("team-nlp", "ray-hparam-search")]


def app_with_records(tmp_path, readonly: bool = False):
    world, backend = demo_backend()
    store = EvidenceStore.demo()  # the demo's own, under $XDG_DATA_HOME: fresh per test (tests/conftest.py)
    for namespace, name in RUNS:
        assert capture_live(backend, store, namespace, name, world.now(), source="cli",
                            cluster=cluster_identity(backend)).created
    return make_app(tmp_path, backend, readonly=readonly, start_pane="queue")


async def open_evidence(pilot) -> EvidenceScreen:
    app = pilot.app
    await settle(pilot)
    await app.command_mode.run_command_text(":evidence")
    await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 0) >= 1)
    assert isinstance(app.screen, EvidenceScreen)
    return app.screen


@async_test
async def test_colon_evidence_lists_records_and_enter_opens_one_and_esc_goes_back(tmp_path):
    app = app_with_records(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_evidence(pilot)
        table = pane.query_one("#evidence-table")
        runs = {pane.data.records[k].run for k in table.keys}
        assert runs == {f"{namespace}/{name}" for namespace, name in RUNS}
        assert pane.query_one("#pane-status").render().plain.startswith("3 records · 1 failed, 2 succeeded")
        table.focus()
        await pilot.press("enter")
        await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 0) >= 1)
        record_screen = app.screen
        assert isinstance(record_screen, EvidenceRecordScreen)
        assert "record.json" in record_screen.data.files
        summary = record_screen.query_one("#record-summary").render().plain
        assert record_screen.record.run in summary and "⚠ tau.yaml: not submitted from this machine" in summary
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is pane
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, EvidenceRecordScreen)


@async_test
async def test_the_palette_goes_to_the_evidence_pane(tmp_path):
    app = app_with_records(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"go to evidence")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, EvidenceScreen)


@async_test
async def test_export_writes_a_bundle_that_verifies(tmp_path):
    app = app_with_records(tmp_path)
    target = tmp_path / "out.tar.gz"
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_evidence(pilot)
        pane.query_one("#evidence-table").focus()
        await pilot.press("x")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, InputDialog)
        dialog.query_one("Input").value = str(target)
        await pilot.press("enter")
        await settle_until(pilot, target.exists)
    result = verify_bundle(target, demo=True)  # the demo's records are signed by its own key
    assert result.ok and result.files_checked == 6


@async_test
async def test_readonly_refuses_the_export_with_a_message(tmp_path):
    app = app_with_records(tmp_path, readonly=True)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        pane = await open_evidence(pilot)
        pane.query_one("#evidence-table").focus()
        assert pane.check_action("export", ()) is False  # hidden from the footer
        await pilot.press("x")
        await settle(pilot)
        assert not isinstance(app.screen, InputDialog)
        pane.action_export()  # a keymap or palette reaching it anyway
        await settle(pilot)
        assert not isinstance(app.screen, InputDialog)
    blocked = [m for m in messages if type(m).__name__ == "MutationBlocked"]
    assert blocked and blocked[0].verb == "export" and "evidence team-nlp/" in blocked[0].target
    assert list(tmp_path.glob("*.tar.gz")) == []


@async_test
async def test_an_empty_store_says_how_records_appear(tmp_path):
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        pane = await open_evidence(pilot)
        table = pane.query_one("#evidence-table")
        assert table.keys == ["__notice__"] and "no evidence records yet" in str(table.cells_of("__notice__"))
        assert pane.query_one("#pane-status").render().plain.startswith("0 records · none yet")


async def _settled_list(pilot) -> None:
    await open_evidence(pilot)
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_evidence_pane_snapshot(snap_compare, tmp_path, size):
    assert snap_compare(app_with_records(tmp_path), terminal_size=size, run_before=_settled_list)


@pytest.mark.parametrize("size", SIZES)
def test_evidence_record_snapshot(snap_compare, tmp_path, size):
    async def run_before(pilot):
        pane = await open_evidence(pilot)
        pane.query_one("#evidence-table").focus()
        await pilot.press("enter")
        await settle_until(pilot, lambda: getattr(pilot.app.screen, "refreshes_applied", 0) >= 1)
        await pilot.press("down")  # events.json
        await settle(pilot)

    assert snap_compare(app_with_records(tmp_path), terminal_size=size, run_before=run_before)


@async_test
async def test_the_app_captures_a_run_it_sees_finish(tmp_path):
    """The recorder starts with the backend; a run that finishes while the app watches gets a record."""
    from tests.scenarios import tiny_backend

    world, backend = tiny_backend(tmp_path)
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.evidence_recorder is not None)
        world.advance(40)  # "blocker" succeeds
        await settle_until(pilot, lambda: app.evidence.find("team-a", "blocker") is not None, rounds=100)
        pane = await open_evidence(pilot)
        assert [r.run for r in pane.data.records.values()] == ["team-a/blocker"]
        assert next(iter(pane.data.records.values())).outcome == "succeeded"
