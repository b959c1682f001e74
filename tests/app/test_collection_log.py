"""The collection log the benchmarks read (TAU_TUI_COLLECTION_LOG): every settle of the heap (full
or not) and every middle collection leaves one line; without the variable nothing is written.  Run in
a child process, whose collector the test may tune."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import gc
from tau_tui.startup import heap
heap.tune_collector()
heap._last_full_at = float("-inf")  # a full settle is due
heap.settle_heap()                   # full: unfreezes first
heap.settle_heap()                   # since the last
gc.collect(1)                        # a middle collection
"""


def run_child(tmp_path: Path, log: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TAU_TUI_COLLECTION_LOG"}
    if log is not None:
        env["TAU_TUI_COLLECTION_LOG"] = log
    subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path, check=True, timeout=120)


def test_each_settle_and_middle_collection_leaves_a_line(tmp_path: Path) -> None:
    log = tmp_path / "collections.jsonl"
    run_child(tmp_path, str(log))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    settles = [line for line in lines if "settle" in line]
    assert [line["settle"] for line in settles] == ["full", "since the last"]
    assert all(line["collect_s"] >= 0 and line["trim_s"] >= 0 and line["frozen"] > 0 for line in settles)
    assert [line["collection"] for line in lines if "collection" in line].count(1) == 1
    assert sum(line.get("collection") == 2 for line in lines) >= 2  # the settles' own (and one at exit)


def test_nothing_is_written_without_the_variable(tmp_path: Path) -> None:
    run_child(tmp_path, None)
    assert list(tmp_path.iterdir()) == []
