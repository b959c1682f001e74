"""docs/performance.md is the page a reader uses (#36): short, and every figure on it is what
scripts/performance_page.py makes from the raw JSON under benchmarks/results/."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "performance.md"
SCRIPT = REPO / "scripts" / "performance_page.py"


@pytest.fixture
def generator():
    spec = importlib.util.spec_from_file_location("performance_page", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_under_400_lines() -> None:
    assert len(PAGE.read_text().splitlines()) < 400


def test_the_page_is_what_the_raw_files_give() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_check_fails_when_a_figure_on_the_page_was_edited_by_hand(generator, tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    page.write_text(PAGE.read_text().replace("<!-- /figures:agent -->", "| made up | 1 ms |\n<!-- /figures:agent -->"))
    result = subprocess.run([sys.executable, str(SCRIPT), "--check", "--page", str(page)], capture_output=True, text=True)
    assert result.returncode == 1


def test_every_table_of_the_page_is_generated(generator) -> None:
    marked = [m.group("name") for m in generator.MARKER.finditer(PAGE.read_text())]
    assert sorted(marked) == sorted(generator.SECTIONS)


def test_without_raw_files_every_table_says_not_measured_and_names_no_raw_file(generator, tmp_path: Path,
                                                                              monkeypatch) -> None:
    monkeypatch.setattr(generator, "RESULTS", tmp_path)
    page = generator.render(PAGE.read_text())
    for match in generator.MARKER.finditer(page):
        body = match.group("body")
        assert "not measured" in body, match.group("name")
        assert not re.search(r"benchmarks/results/[\w./-]+\.json", body), match.group("name")
    # hand-written text outside the markers is kept as it was
    assert generator.MARKER.sub("", page) == generator.MARKER.sub("", PAGE.read_text())


def test_a_raw_file_without_the_fields_a_table_needs_says_not_measured(generator, tmp_path: Path, monkeypatch) -> None:
    names = ("agent_poll.json", "cluster_large.json", "recording_large.json", "logs_throughput.json", "remote_link.json",
             "staleness_watch.json", "app_keys_tmux.json", "app_keys_tmux_xl.json", "side_by_side.json",
             "event_to_screen.json", "first_frame.json", "app_keys.json", "demo_restart.json", "soak.json")
    for name in names:
        (tmp_path / name).write_text('{"machine": {"date": "2026-12-05 02:00 UTC"}, "args": {}}')
    monkeypatch.setattr(generator, "RESULTS", tmp_path)
    page = generator.render(PAGE.read_text())
    measured = re.compile(r"\d (ms|MB|MiB)\b|\d\.\d+ s\b|\d %")
    for match in generator.MARKER.finditer(page):
        body = match.group("body")
        assert "not measured" in body, match.group("name")
        if match.group("name") == "goals":  # the limits are figures; what was measured and the verdicts are not
            rows = [line.split(" | ") for line in body.splitlines()[2:]]
            assert {cell.strip(" |") for row in rows for cell in row[2:]} == {"not measured"}
        else:
            assert not measured.search(body), (match.group("name"), measured.search(body))
