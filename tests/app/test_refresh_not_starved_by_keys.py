"""Keys that never pause (j held down to scroll, `/` and esc pressed over and over) hold a pane's
refresh back, but not for ever: once the hold has lasted MAX_HELD_FOR_KEYS_S since the last refresh
started, a pane whose data moved reads again.  Before, `app_keys_tmux.py` pressing `/` and esc while
`--demo large` listed left the Queue pane on its first page (1,000 of 20,000 Workloads, "loading
clusterqueues") for as long as the keys came."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tau_tui.screens import pane_reader
from tau_tui.screens.pane_reader import MAX_HELD_FOR_KEYS_S, PaneRead, PaneReader
from tests.app.test_pane_reader import Pane


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The reader's clock stands still unless a test moves it (a loaded machine cannot move it)."""
    fake = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(pane_reader, "time", SimpleNamespace(monotonic=lambda: fake.now, sleep=lambda s: None,
                                                             thread_time=lambda: 0.0))
    return fake


def test_a_refresh_held_for_keys_runs_once_the_hold_has_lasted_long_enough(clock: SimpleNamespace) -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due()
    reader.collected(PaneRead(None, 1))
    pane.tau.key_hold_until = clock.now + 3600  # keys keep coming
    pane.signature = ("g", 2)  # the data moved
    for _ in range(50):  # ticks right after the last refresh started: held
        assert not reader.due()
    assert reader.ticks_held_for_keys == 50 and reader.collects_started == 1
    clock.now += MAX_HELD_FOR_KEYS_S  # the last refresh started that long ago
    assert reader.due() and reader.collects_started == 2
    reader.collected(PaneRead(None, 2))
    pane.signature = ("g", 3)
    assert not reader.due() and reader.ticks_held_for_keys == 51  # and the next one is held again


def test_nothing_moved_means_no_refresh_however_long_keys_come(clock: SimpleNamespace) -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due()
    reader.collected(PaneRead(None, 1))
    pane.tau.key_hold_until = clock.now + 3600
    clock.now += MAX_HELD_FOR_KEYS_S
    assert not reader.due() and reader.ticks_unchanged == 1 and reader.collects_started == 1
