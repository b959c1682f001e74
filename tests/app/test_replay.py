"""``tau-tui --replay FILE`` in the app: a recorded demo session replays into the
same queue and nodes screens at three chosen times; the replay bar and its keys; a replay is
read-only through the --readonly refusal path; snapshots at 80x24 and 160x48."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.recording.replay_backend import ReplayBackend
from tau_tui.core.operations.recording.writer import SessionRecorder
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.mutations.node_changes import node_mutation
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.replay_bar import ReplayBar
from tau_tui.widgets.table_plan import cell_plain
from tests.app.helpers import async_test, demo_app, demo_backend, make_app, settle, settle_until

#: Seconds after the demo's start at which the live and the replayed screens are compared.
CHOSEN = (40, 130, 300)
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def pane_text(app) -> dict[str, list[list[str]]]:
    """Every table row of the pane on screen as plain text, in display order, and its status line."""
    screen = app.screen
    text = {table.id or "": [[cell_plain(c) for c in table.cells_of(key) or ()] for key in table.keys]
            for table in screen.query(KeyedTable)}
    text["status"] = [[str(screen.query_one("#pane-status").render())]]
    for table in screen.query(KeyedTable):  # the lines as drawn: widths, order, truncation
        text[f"drawn {table.id}"] = [[table.render_line(y).text] for y in range(table.size.height)]
    return text


async def show(pilot, pane: str) -> dict[str, list[list[str]]]:
    app = pilot.app
    app.action_switch_pane(pane)
    await settle(pilot)
    start = app.screen.refreshes_applied
    app.screen.tick(force=True)
    await settle_until(pilot, lambda: app.screen.refreshes_applied > start)
    return pane_text(app)


def record_demo_without_ui(path: Path, seconds: int = 240) -> None:
    """A demo session recorded as the queue pane would (positions asked), on the manual clock."""
    world = build_world("demo")
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    recorder = SessionRecorder(backend, path, source="SimulatedBackend").start()
    for step in range(seconds // 30 + 1):
        if step:
            world.advance(30)
        for lq in backend.local_queues():
            backend.pending_positions_local_queue(lq.namespace or "", lq.name)
    recorder.close()
    backend.close()


@async_test
async def test_a_recorded_demo_session_replays_into_identical_screens_at_three_times(tmp_path):
    world, backend = demo_backend()
    path = tmp_path / "demo.rec"
    recorder = SessionRecorder(backend, path, source="SimulatedBackend").start()
    live: dict[float, dict] = {}
    app = make_app(tmp_path, backend)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 2)
        elapsed = 0
        for at in CHOSEN:
            world.advance(at - elapsed)
            elapsed = at
            t = world.now().timestamp()
            live[t] = {"queue": await show(pilot, "queue"), "nodes": await show(pilot, "nodes")}
        await app.action_quit()
    recorder.close()
    assert recorder.error is None

    replay = ReplayBackend.open(path)
    replay.start()
    app = make_app(tmp_path / "replayed", replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 2)
        for t, screens in live.items():
            replay.seek_seconds(t)
            replayed = {"queue": await show(pilot, "queue"), "nodes": await show(pilot, "nodes")}
            for pane, parts in screens.items():
                for part, lines in parts.items():
                    again = replayed[pane][part]
                    if part.startswith("drawn "):  # the replay bar takes the table's last line
                        assert 0 <= len(lines) - len(again) <= 1, (pane, part)
                        lines = lines[:len(again)]
                    assert again == lines, (pane, part)
    # the three times show different things: the comparison is not of one static screen
    assert len({repr(s) for s in live.values()}) == 3


@async_test
async def test_replay_keys_bar_and_seek_command(tmp_path):
    record_demo_without_ui(tmp_path / "keys.rec")
    replay = ReplayBackend.open(tmp_path / "keys.rec")
    replay.start()
    app = make_app(tmp_path, replay)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 1)
        bar = app.screen.query_one(ReplayBar)
        assert bar.display and bar.status is not None and bar.status.paused
        start = replay.clock.position
        await pilot.press("full_stop")
        assert replay.clock.position > start and replay.clock.paused
        await pilot.press("comma")
        assert replay.clock.position == start
        await pilot.press("plus", "plus")
        assert replay.clock.speed == 4.0
        await pilot.press("minus")
        assert replay.clock.speed == 2.0
        await pilot.press("space")
        assert not replay.clock.paused
        await pilot.press("space")
        assert replay.clock.paused
        await app.command_mode.run_command_text("seek 09:02:30")
        assert replay.clock.now().strftime("%H:%M:%S") == "09:02:30"
        await app.command_mode.run_command_text("seek 23:00")
        await settle(pilot)
        assert replay.clock.now().strftime("%H:%M:%S") == "09:02:30"  # outside: said, not moved
        app.action_help()
        await pilot.pause()
        keys = dict(app.screen.keys)
        assert keys[":seek HH:MM[:SS]"].startswith("jump to a time") and keys["."] == "step to the next recorded change"


@async_test
async def test_live_app_hides_the_replay_bar_and_keys(tmp_path):
    async with demo_app(tmp_path, size=(120, 30)) as (_, _, app, pilot):
        assert not app.screen.query_one(ReplayBar).display
        assert app.check_action("replay_toggle", ()) is False
        await app.command_mode.run_command_text("seek 09:00")


@async_test
async def test_a_replay_refuses_every_change_through_the_readonly_path(tmp_path):
    record_demo_without_ui(tmp_path / "ro.rec", seconds=60)
    replay = ReplayBackend.open(tmp_path / "ro.rec")
    replay.start()
    app = make_app(tmp_path, replay)
    assert app.readonly
    notes: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        original = app.notify
        app.notify = lambda message, *a, **k: (notes.append(str(message)), original(message, *a, **k))[1]  # type: ignore[method-assign]
        await settle_until(pilot, lambda: app.screen.refreshes_applied >= 1)
        await pilot.press("h")  # hold the selected queue
        app.request_mutation(node_mutation(app, "cordon", "h100-node-0"))
        await settle(pilot)
    refusals = [n for n in notes if "read-only mode" in n]
    assert len(refusals) == 2 and all("a replay of ro.rec is read-only" in n for n in refusals)
    entries = list(AuditLog(tmp_path / "audit.jsonl").entries())
    assert [e["phase"] for e in entries] == ["refused"] and entries[0]["readonly_blocked"]
    assert "a replay of ro.rec is read-only" in entries[0]["message"]
    assert replay.get(ResourceKind.NODE, "h100-node-0").raw.get("spec", {}).get("unschedulable") is None


def prepare_replay(seek: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 2) >= 2)
        app.backend.seek(seek)  # as :seek does, without its toast over the bar
        await settle(pilot)
        app.screen.tick(force=True)
        await settle(pilot)
        await pilot.pause(0.2)

    return run_before


@pytest.fixture
def themed_status_cells():
    """The status colours are module state the app sets on mount, which the queue pane's first
    refresh can beat (and a table keeps a cell whose text did not change): set them as an earlier
    app in this process would have, so the snapshot does not depend on test order."""
    from tau_tui.settings.theme_files import load_theme_files
    from tau_tui.widgets import status_text

    theme = next(dict(f.fields) for f in load_theme_files()[0] if dict(f.fields).get("name") == "tau-dark")
    status_text.set_palette(theme["success"], theme["warning"], theme["error"], theme["accent"], "dim")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pane", ["queue", "nodes"])
def test_replay_snapshot(snap_compare, tmp_path, pane, size, themed_status_cells):
    record_demo_without_ui(tmp_path / "demo.rec")
    replay = ReplayBackend.open(tmp_path / "demo.rec")
    replay.start()
    app = make_app(tmp_path, replay, start_pane=pane)
    assert snap_compare(app, terminal_size=size, run_before=prepare_replay("09:02:30"))


@async_test
async def test_the_app_records_with_record_file_and_the_file_replays(tmp_path):
    from tau_tui.app import TauApp
    from tau_tui.settings.settings_file import AppSettings, LoadedSettings

    world, backend = demo_backend()
    path = tmp_path / "session.rec"
    app = TauApp(backend, record=str(path), settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.session_recorder is not None)
        world.advance(60)
        await settle(pilot)
        await app.action_quit()
    assert app.session_recorder is None and path.exists()
    replay = ReplayBackend.open(path)
    replay.start()
    assert replay.reader.header["source"] == "SimulatedBackend" and not replay.reader.truncated
    assert replay.clock.end - replay.clock.start >= 60
