"""A pane's read schedule without Textual: the reader decides when a refresh is due and runs the
pane's ``collect(request)``, on a plain object standing in for the pane and its app."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from tau_tui.screens.freshness import Freshness
from tau_tui.screens.pane_reader import (
    PaneRead,
    PaneReader,
    ReadAbandoned,
    ReadFailed,
    ReadRequest,
)
from tau_tui.widgets.row_filter import RowFilter, parse_filter


class Host:
    backend = None
    key_hold_until = 0.0
    first_rows_awaited_by: object | None = None

    @property
    def first_rows_awaited(self) -> bool:
        return self.first_rows_awaited_by is not None

    def hold_background(self, seconds: float = 0.0) -> None:
        pass


class Pane:
    VIEW_KINDS = ()
    MAX_UNCHANGED_S = 5.0
    REFRESH_BACKOFF = 2.0
    LISTING_BACKOFF = 5.0
    SHOWS_GPU_FAULTS = False

    def __init__(self) -> None:
        self.tau = Host()
        self.freshness = Freshness()
        self.signature: tuple | None = ("g", 1)
        self.requests: list[ReadRequest] = []
        self.collect_does: Any = None

    def collect(self, request: ReadRequest) -> Any:
        self.requests.append(request)
        request.keep_reading()
        if self.collect_does is not None:
            return self.collect_does(request)
        return [row for row in ("a", "b", "c") if request.row_filter.matches(row, {})]

    def data_signature(self) -> tuple | None:
        return self.signature

    def needs_backend(self) -> bool:
        return False


def test_the_reader_module_loads_no_textual() -> None:
    code = "import sys, tau_tui.screens.pane_reader; print(any(m.split('.')[0] == 'textual' for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_refresh_is_due_once_until_the_data_moves_and_a_tick_meanwhile_is_remembered() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due() and reader.generation == 1 and reader.refresh_running
    assert not reader.due(force=True) and reader.ticks_skipped == 1 and reader.take_rerun()
    assert reader.collected(PaneRead(None, 1)) and reader.refreshes_applied == 1
    assert not reader.due() and reader.ticks_unchanged == 1  # nothing moved
    assert not reader.moved()
    pane.signature = ("g", 2)
    assert reader.moved() and reader.due()
    assert not reader.collected(PaneRead(None, 1))  # an older refresh's read is not shown


def test_a_slow_read_backs_off_and_a_key_hold_waits_unless_forced() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert reader.due()
    reader.collected(PaneRead(None, 1, cpu_seconds=3600.0))
    pane.signature = ("g", 2)
    assert not reader.due() and reader.ticks_backed_off == 1
    reader.read_cpu_seconds = 0.0
    pane.tau.key_hold_until = time.monotonic() + 3600
    assert not reader.due() and reader.ticks_held_for_keys == 1
    assert reader.due(force=True)


def test_a_read_gets_its_request_and_counts_the_filter() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    reader.wanted = True
    read = reader.read(7, parse_filter("b").fresh(), {"t": None})  # type: ignore[dict-item]
    assert isinstance(read, PaneRead) and read.data == ["b"] and read.generation == 7
    request = pane.requests[-1]
    assert request.table_states == {"t": None} and request.first_rows_waited_for()


def test_a_read_whose_pane_left_is_abandoned_and_a_failing_one_says_why() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    assert isinstance(reader.read(1, RowFilter(""), {}), ReadAbandoned)  # never shown: not wanted
    reader.wanted = True
    pane.collect_does = lambda request: 1 / 0
    failed = reader.read(1, RowFilter(""), {})
    assert isinstance(failed, ReadFailed) and failed.error.startswith("ZeroDivisionError")


def test_a_read_ahead_is_kept_until_the_pane_opens_where_it_was_read() -> None:
    pane = Pane()
    reader = PaneReader(pane)
    reader.start_ahead(shown_before=False)
    assert reader.reading_ahead and reader.read_ahead_running
    read = reader.prepare(RowFilter(""))
    assert isinstance(read, PaneRead)
    reader.ahead_ended(False, None, (None, None), read)
    assert not reader.read_ahead_running and reader.prepared is not None
    taken = reader.take_prepared(None)
    assert taken is not None and taken[0] is read and reader.prepared_shown == 1
    assert reader.take_prepared(None) is None  # shown once
