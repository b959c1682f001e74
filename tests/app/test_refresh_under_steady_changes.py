"""A row that keeps changing is drawn at most one change behind, every tick: the read back-off follows
the processor time a read used, never the time it waited (a visibility call, a nap for keys).

The reader runs on a fake monotonic clock, one change and one tick every 0.25 s; a read "waits"
by moving that clock on, as a read blocked on the network does without holding the interpreter."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

import tau_tui.core.pacing as pacing
import tau_tui.screens.pane_reader as pane_reader
from tau_tui.screens.freshness import Freshness
from tau_tui.screens.pane_reader import PaneRead, PaneReader, ReadRequest
from tau_tui.widgets.row_filter import RowFilter

TICK_S = 0.25
TICKS = 40
#: The first read waits this long on the network: thirty LocalQueues' position reports, one
#: visibility call each, on a source without the visibility API.
FIRST_READ_WAITS_S = 2.6


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Host:
    backend = None
    first_rows_awaited_by: object | None = None

    def __init__(self) -> None:
        self.key_hold_until = 0.0

    @property
    def first_rows_awaited(self) -> bool:
        return self.first_rows_awaited_by is not None

    def hold_background(self, seconds: float = 0.0) -> None:
        pass


class ChangingRowPane:
    """A pane over one row whose value changes once a tick (the cluster's generation moves with it)."""

    VIEW_KINDS = ()
    MAX_UNCHANGED_S = 5.0
    REFRESH_BACKOFF = 2.0
    LISTING_BACKOFF = 5.0
    SHOWS_GPU_FAULTS = False

    def __init__(self, clock: FakeClock) -> None:
        self.tau = Host()
        self.freshness = Freshness()
        self.clock = clock
        self.value = 0
        self.reads = 0
        #: Fake seconds each read waits without the interpreter (the first one longest).
        self.waits = [FIRST_READ_WAITS_S]

    def collect(self, request: ReadRequest) -> Any:
        request.keep_reading()
        self.clock.sleep(self.waits[self.reads] if self.reads < len(self.waits) else 0.01)
        self.reads += 1
        return self.value

    def data_signature(self) -> tuple | None:
        return ("workloads", self.value)

    def needs_backend(self) -> bool:
        return False


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    # the reader's wall clock is the fake one; its processor clock stays the thread's own
    faked = SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep, thread_time=time.thread_time)
    monkeypatch.setattr(pane_reader, "time", faked)
    monkeypatch.setattr(pacing, "time", faked)  # the naps for keys
    return fake


def reader_of(pane: ChangingRowPane) -> PaneReader:
    reader = PaneReader(pane)  # type: ignore[arg-type]  # the pane and its host stand in for the app's
    reader.wanted = True
    return reader


def refresh(reader: PaneReader) -> Any:
    """One tick of the app: a refresh when due, its read run at once (the worker) and shown."""
    if not reader.due():
        return None
    read = reader.read(reader.generation, RowFilter(""), {})
    assert isinstance(read, PaneRead)
    assert reader.collected(read)
    return read.data


def steady_changes(clock: FakeClock, pane: ChangingRowPane, reader: PaneReader, ticks: int) -> list[int]:
    """A change every tick for ``ticks`` ticks; how many changes behind the drawn value is after each."""
    drawn = refresh(reader)
    assert drawn == 0 and reader.refreshes_applied == 1
    behind = []
    for _ in range(ticks):
        clock.sleep(TICK_S)
        pane.value += 1
        shown = refresh(reader)
        drawn = shown if shown is not None else drawn
        behind.append(pane.value - drawn)
    return behind


def test_a_row_changing_every_tick_is_drawn_every_tick_after_a_first_read_that_waited_on_the_network(
        clock: FakeClock) -> None:
    pane = ChangingRowPane(clock)
    reader = reader_of(pane)
    behind = steady_changes(clock, pane, reader, TICKS)
    assert max(behind) == 0, f"changes behind per tick: {behind}"
    assert reader.refreshes_applied == TICKS + 1 and reader.ticks_backed_off == 0


def test_a_read_that_napped_for_keys_is_not_backed_off_for_the_naps(clock: FakeClock) -> None:
    pane = ChangingRowPane(clock)
    pane.waits = [0.0]
    reader = reader_of(pane)
    reader.nap = clock.sleep
    assert refresh(reader) == 0
    pane.value += 1
    clock.sleep(TICK_S)
    pane.tau.key_hold_until = clock.now + 0.6  # keys come: a tick starts no read
    assert refresh(reader) is None and reader.ticks_held_for_keys == 1
    assert reader.due(force=True)  # a forced read (a filter) goes on, napping while the keys come
    read = reader.read(reader.generation, RowFilter(""), {})
    assert isinstance(read, PaneRead) and reader.collected(read) and reader.napped_s > 0.5
    # the keys paused: the next change is read at the next tick, not after twice the naps
    pane.value += 1
    clock.sleep(TICK_S)
    assert refresh(reader) == pane.value and reader.ticks_backed_off == 0


def test_a_read_that_used_the_processor_still_backs_off(clock: FakeClock) -> None:
    """The back-off keeps reads to about a third of the interpreter: it is measured, not dropped."""
    pane = ChangingRowPane(clock)
    pane.waits = [0.0]
    reader = reader_of(pane)

    def busy(request: ReadRequest) -> int:
        start = time.thread_time()
        while time.thread_time() - start < 0.02:
            pass
        return pane.value

    pane.collect = busy  # type: ignore[method-assign]
    assert refresh(reader) == 0 and reader.read_cpu_seconds >= 0.02
    pane.value += 1
    clock.sleep(0.01)  # less than twice the processor time it used
    assert refresh(reader) is None and reader.ticks_backed_off == 1
    clock.sleep(2 * reader.read_cpu_seconds)
    assert refresh(reader) == pane.value
