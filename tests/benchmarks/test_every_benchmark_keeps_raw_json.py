"""Every figure in docs/performance.md has its raw samples under benchmarks/results/ (#36, defect 4):
each benchmark that measures writes them, and each raw file the page names is there."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
# Scripts with a __main__ that measure nothing: a server other benchmarks read from.
NOT_MEASURING = {"watch_source.py"}


def test_every_benchmark_script_writes_its_raw_samples() -> None:
    missing = []
    for script in sorted(BENCHMARKS.glob("*.py")):
        text = script.read_text()
        if "__main__" not in text or script.name in NOT_MEASURING:
            continue
        if "save_raw(" not in text and not re.search(r'RESULTS / "[^"]+\.json"\)\.write_text', text):
            missing.append(script.name)
    assert missing == []


def test_every_raw_file_the_performance_page_names_exists() -> None:
    page = (REPO / "docs" / "performance.md").read_text()
    named = set(re.findall(r"benchmarks/results/([\w./-]+\.json)", page))
    assert named, "the page names no raw file"
    absent = sorted(name for name in named if not (BENCHMARKS / "results" / name).is_file())
    assert absent == []
