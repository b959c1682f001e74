"""A key holds back the simulated cluster's next tick: its controllers share the app's interpreter,
a real cluster's do not. The hold is bounded, so keys pressed without a pause never stop the world."""

from __future__ import annotations

import threading
import time

from tau_tui.app_components.key_activity import KEY_HOLDS_BACKGROUND_S
from tau_tui.core.sim.world import MAX_TICK_HOLD_S, RealtimeTicker
from tests.app.helpers import async_test, demo_app, make_app, settle_until


@async_test
async def test_a_key_tells_the_backend_a_person_is_pressing_keys(tmp_path):
    async with demo_app(tmp_path) as (_, _, app, pilot):
        world = app.backend.world
        # the first rows hold the cluster a moment too (hold_background): wait that out
        await settle_until(pilot, lambda: world.foreground_busy_until < time.monotonic())
        before = time.monotonic()
        assert world.foreground_busy_until < before
        await pilot.press("j")
        assert world.foreground_busy_until >= before + KEY_HOLDS_BACKGROUND_S


class _Clock:
    """A monotonic clock of the test's: it moves only by the waits and naps it is told of, so the
    machine's speed counts for nothing."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class _Stop(threading.Event):
    """Records how long the ticker asks to wait, and moves the clock by it without waiting."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock = clock
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout or 0.0)
        self.clock.now += timeout or 0.0
        return self.is_set()


class _World:
    foreground_busy_until = 0.0


def _ticker(clock: _Clock, hold_for: float) -> RealtimeTicker:
    world = _World()
    world.foreground_busy_until = clock() + hold_for
    ticker = RealtimeTicker(world)  # type: ignore[arg-type]  (only foreground_busy_until is read)
    ticker._stopping = _Stop(clock)
    ticker.monotonic = clock
    return ticker


def test_the_ticker_waits_while_keys_come_and_never_longer_than_the_bound():
    clock = _Clock()
    idle = _ticker(clock, -1)
    assert idle._hold_for_foreground() is False and idle._stopping.waits == []
    typing = _ticker(clock, 0.5)
    assert typing._hold_for_foreground() is False
    assert typing._stopping.waits == [0.5]  # until the key's hold ran out
    held_down = _ticker(clock, 3600)  # a key held down: auto-repeat keeps the hold fresh
    assert held_down._hold_for_foreground() is False
    assert abs(sum(held_down._stopping.waits) - MAX_TICK_HOLD_S) < 1e-9


def test_a_ticker_stopped_while_holding_ends_without_ticking():
    ticker = _ticker(_Clock(), 3600)
    ticker._stopping.set()
    assert ticker._hold_for_foreground() is True


def test_a_tick_gives_way_between_its_controllers_while_keys_come_and_only_up_to_its_bound():
    """The tick in progress when a key comes sleeps between controllers (the interpreter's lock
    released for the UI thread), for at most MAX_STEP_HOLD_S; with no key it never sleeps."""
    from tau_tui.core.sim.scenario import build_world
    from tau_tui.core.sim.world import MAX_STEP_HOLD_S

    world = build_world("demo")
    clock = _Clock()
    world.monotonic = clock
    slept: list[float] = []

    def pause(seconds: float) -> None:  # records a sleep; the clock moves by it
        slept.append(seconds)
        clock.now += seconds

    world.pause = pause
    world.tick()
    assert slept == []  # nobody typing: the tick runs straight through

    world.foreground_busy_until = clock() + 0.2
    world.tick()
    assert slept and all(0 < s <= 0.2 for s in slept)
    assert abs(sum(slept) - 0.2) < 1e-9  # until the key's hold ran out

    slept.clear()
    world.foreground_busy_until = clock() + 3600  # keys without a pause: bounded per tick
    world.pause = slept.append
    world.tick()
    assert abs(sum(slept) - MAX_STEP_HOLD_S) < 1e-9


@async_test
async def test_a_panes_read_naps_between_its_steps_while_keys_come_and_only_up_to_its_bound(tmp_path):
    """A read in a worker thread shares the interpreter with the UI thread: while keys come it
    sleeps between steps (at most MAX_KEY_NAPS_S a read); with no key it never sleeps."""
    from tau_tui.screens.pane_reader import MAX_KEY_NAPS_S, PaneReader

    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        screen = app.screen
        naps: list[float] = []
        clock = _Clock()

        def nap(seconds: float) -> None:  # records a sleep; the reader's clock moves by it
            naps.append(seconds)
            clock.now += seconds

        # the pane's schedule without its worker: a read the pane starts meanwhile would nap on this clock too
        reader = PaneReader(screen)
        reader.wanted = True
        reader.nap = nap
        reader.monotonic = clock
        app.key_hold_until = 0.0
        reader.napped_s = 0.0
        reader.keep_reading()
        assert naps == []

        pressed = time.monotonic()
        await pilot.press("j")
        assert app.key_hold_until >= pressed + KEY_HOLDS_BACKGROUND_S  # held from the key on, however busy the machine
        clock.now = app.key_hold_until - KEY_HOLDS_BACKGROUND_S  # the reader's clock at the key, however long since
        reader.keep_reading()
        assert abs(sum(naps) - KEY_HOLDS_BACKGROUND_S) < 1e-9  # the whole hold, and no more

        naps.clear()
        app.key_hold_until = clock() + 3600  # keys without a pause: bounded per read
        reader.nap = naps.append
        reader.napped_s = 0.0
        for _ in range(100):
            reader.keep_reading()
        assert abs(sum(naps) - MAX_KEY_NAPS_S) < 1e-9
        app.key_hold_until = 0.0


@async_test
async def test_the_evidence_recorder_waits_for_a_keys_hold_and_not_for_a_panes_later_reads(tmp_path):
    """What the recorder naps for: a key's hold.  Not the refresh of a pane that shows its rows: the
    recorder's first pass works out the run statuses that pane's reads would otherwise."""
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.evidence_recorder is not None)
        recorder = app.evidence_recorder
        app.key_hold_until = 0.0
        assert recorder.foreground_busy_until() < time.monotonic()
        seen: list[bool] = []
        screen = app.screen
        collect = screen.collect

        def observed_collect(request):
            seen.append(recorder.foreground_busy_until() > time.monotonic())
            return collect(request)

        screen.collect = observed_collect
        screen.reader.read(0, screen.row_filter, {})
        assert seen == [False]
        pressed = time.monotonic()
        await pilot.press("j")
        assert recorder.foreground_busy_until() >= pressed + KEY_HOLDS_BACKGROUND_S  # however busy the machine


@async_test
async def test_a_read_aheads_rest_is_bounded_ends_when_its_pane_opens_and_never_counts_a_nap_as_work(tmp_path):
    """A read ahead rests READ_AHEAD_REST times as long as it worked, measured in wall time.  That
    time also holds waits for the interpreter and naps for keys: a rest of three times it (2.9 s once)
    held back the Runs pane opened meanwhile.  A rest is at most READ_AHEAD_LONGEST_REST_S, in naps that
    end once the pane is opened, and a nap for keys starts the next slice after it."""
    from tau_tui.screens.pane_reader import READ_AHEAD_LONGEST_REST_S, READ_AHEAD_REST_NAP_S

    async with demo_app(tmp_path, start_pane="queue", size=(120, 30)) as (_, _, app, pilot):
        screen = app.screen
        naps: list[float] = []
        clock = _Clock()
        screen.reader.nap = naps.append
        screen.reader.monotonic = clock
        app.key_hold_until = 0.0
        screen.reader.wanted = screen.reader.reading_ahead = True
        screen.reader.paused_at = clock() - 5.0  # "worked" 5 s: mostly waiting for the interpreter
        screen.reader.keep_reading()
        assert naps and max(naps) <= READ_AHEAD_REST_NAP_S + 1e-9
        assert abs(sum(naps) - READ_AHEAD_LONGEST_REST_S) < 1e-9  # not 15 s

        naps.clear()  # opened during a rest: the rest ends at its next nap

        def nap_then_open(seconds: float) -> None:
            naps.append(seconds)
            screen.reader.reading_ahead = False

        screen.reader.nap = nap_then_open
        screen.reader.paused_at = clock() - 5.0
        screen.reader.keep_reading()
        assert len(naps) == 1

        naps.clear()  # a nap for keys is not work: the slice after it starts when it ends

        def nap_for_keys(seconds: float) -> None:
            naps.append(seconds)
            clock.now += seconds

        screen.reader.nap = nap_for_keys
        screen.reader.napped_s = 0.0
        screen.reader.paused_at = 0.0
        app.key_hold_until = clock() + 0.2
        screen.reader.keep_reading()
        assert naps and screen.reader.paused_at > 0.0
        app.key_hold_until = 0.0


@async_test
async def test_a_panes_first_read_is_waited_for_the_recorder_and_read_aheads_give_way(tmp_path, monkeypatch):
    """A pane opened with no rows yet: the person waits for that read.  The evidence recorder naps
    (a moment more each time it asks), a read ahead of another pane rests, and the read itself naps
    only for keys that come after the one that opened the pane.  Once the rows are shown, all is as
    before."""
    from tau_tui.screens.multikueue import MultiKueueScreen
    from tau_tui.screens.pane_reader import READ_AHEAD_REST_NAP_S, READ_AHEAD_YIELDS_AT_MOST_S

    read_may_end = threading.Event()
    collect = MultiKueueScreen.collect

    def held_collect(self, request):
        read_may_end.wait(30)
        return collect(self, request)

    monkeypatch.setattr(MultiKueueScreen, "collect", held_collect)
    app = make_app(tmp_path, start_pane="queue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.evidence_recorder is not None)
        recorder = app.evidence_recorder
        app.key_hold_until = 0.0
        await pilot.press("7")  # MultiKueue, never opened: its first read is held above
        pane = app.screen
        assert app.current_mode == "multikueue" and app.first_rows_awaited_by is pane
        opened_with = app.key_hold_until
        assert pane.reader.opened_with_hold == opened_with > 0.0
        asked = time.monotonic()
        assert recorder.foreground_busy_until() > asked  # a moment more each time it asks, however slow the machine

        naps: list[float] = []
        pane.reader.nap = naps.append
        pane.reader.napped_s = 0.0
        app.key_hold_until = pane.reader.opened_with_hold = time.monotonic() + 3600  # that key's hold, however slow the machine
        pane.reader._nap_while_keys_come()
        assert naps == []  # the key that opened it asked for this read
        app.key_hold_until += 0.2  # a key after it
        pane.reader._nap_while_keys_come()
        assert naps
        app.key_hold_until = 0.0

        ahead = MultiKueueScreen()  # another pane's read ahead, while that one is waited for
        ahead._host = app
        ahead.reader.wanted = ahead.reader.reading_ahead = True
        ahead.reader.paused_at = time.monotonic() + 3600  # its own slice's rest is not what is counted here
        rests: list[float] = []

        def rest_then_rows_shown(seconds: float) -> None:
            rests.append(seconds)
            if len(rests) == 5:
                app.first_rows_awaited_by = None

        ahead.reader.nap = rest_then_rows_shown
        ahead.reader.keep_reading()
        assert len(rests) == 5 and max(rests) <= READ_AHEAD_REST_NAP_S + 1e-9  # ends as the rows come
        rests.clear()
        app.first_rows_awaited_by = pane
        ahead.reader.paused_at = time.monotonic() + 3600
        ahead.reader.nap = rests.append
        ahead.reader.keep_reading()
        assert abs(sum(rests) - READ_AHEAD_YIELDS_AT_MOST_S) < 1e-6  # bounded each time
        ahead.reader.no_longer_awaited()  # another pane's rows: its wait stays
        assert app.first_rows_awaited_by is pane

        from tau_tui.core.cluster.changes import ViewState, ViewStatus
        from tau_tui.screens.freshness import Freshness
        from tau_tui.screens.pane_reader import PaneRead

        kind = pane.VIEW_KINDS[0]  # a real cluster's first list not finished: "loading" is not the rows
        loading = Freshness(views={kind: ViewState(kind, ViewStatus.SYNCING)})
        pane.apply = lambda data: None  # what it shows does not matter here: that it was "loading" does
        pane._show_read(PaneRead(None, 0, loading))
        del pane.apply
        assert app.first_rows_awaited_by is pane and not pane.reader.rows_shown

        read_may_end.set()
        await settle_until(pilot, lambda: pane.refreshes_applied > 0)
        assert app.first_rows_awaited_by is None and pane.reader.opened_with_hold == 0.0 and pane.reader.rows_shown
        # only a key's hold now (the first rows hold for a moment as a key does: hold_background)
        assert recorder.foreground_busy_until() == app.key_hold_until
        await pilot.press("3")
        assert not app.first_rows_awaited  # left: nobody waits
        await pilot.press("7")  # opened again: its rows are there, nothing is waited for
        assert not app.first_rows_awaited
