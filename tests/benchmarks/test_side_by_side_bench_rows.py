"""The side-by-side latency run reads a bench row's Queue value in both tools' screens."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from side_by_side import BENCH_ROW_QUEUE  # noqa: E402


def test_a_tau_tui_row() -> None:
    m = BENCH_ROW_QUEUE.search("  aaa-bench   bench-03   Pending   q-1234   0/1   12s")
    assert m is not None and m.groups() == ("bench-03", "1234")


def test_a_k9s_row_whose_queue_cell_changed() -> None:
    # k9s appends "Δ" to a cell that changed since its last refresh.
    m = BENCH_ROW_QUEUE.search("│ aaa-bench      bench-07         q-82Δ                               5m  │")
    assert m is not None and m.groups() == ("bench-07", "82")


def test_a_longer_number_is_not_cut() -> None:
    m = BENCH_ROW_QUEUE.search("bench-01 q-12345Δ")
    assert m is not None and m.group(2) == "12345"
