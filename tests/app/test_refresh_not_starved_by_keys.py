"""Keys that never pause (j held down to scroll, `/` and esc pressed over and over) hold a pane's
refresh back, but not for ever: once the hold has lasted MAX_HELD_FOR_KEYS_S since the last refresh
started, a pane whose data moved reads again.  Before, `app_keys_tmux.py` pressing `/` and esc while
`--demo large` listed left the Queue pane on its first page (1,000 of 20,000 Workloads, "loading
clusterqueues") for as long as the keys came."""

from __future__ import annotations

import time

from tau_tui.screens.pane_reader import MAX_HELD_FOR_KEYS_S, PaneRead, PaneReader
from tests.app.test_pane_reader import Pane


def test_a_refresh_held_for_keys_runs_once_the_hold_has_lasted_long_enough() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due()
    reader.collected(PaneRead(None, 1))
    pane.tau.key_hold_until = time.monotonic() + 3600  # keys keep coming
    pane.signature = ("g", 2)  # the data moved
    for _ in range(50):  # ticks right after the last refresh started: held
        assert not reader.due()
    assert reader.ticks_held_for_keys == 50 and reader.collects_started == 1
    reader.collected_at -= MAX_HELD_FOR_KEYS_S  # the last refresh started that long ago
    assert reader.due() and reader.collects_started == 2
    reader.collected(PaneRead(None, 2))
    pane.signature = ("g", 3)
    assert not reader.due() and reader.ticks_held_for_keys == 51  # and the next one is held again


def test_nothing_moved_means_no_refresh_however_long_keys_come() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due()
    reader.collected(PaneRead(None, 1))
    pane.tau.key_hold_until = time.monotonic() + 3600
    reader.collected_at -= MAX_HELD_FOR_KEYS_S
    assert not reader.due() and reader.ticks_unchanged == 1 and reader.collects_started == 1
