"""Every tests/data/configs case renders (or fails) exactly as its golden file says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.cases import CASES_DIR, case_argv, run_cli

CASES = sorted(p for p in CASES_DIR.iterdir() if p.is_dir())


def test_there_are_at_least_forty_cases_of_both_kinds():
    valid = [c for c in CASES if (c / "expected.yaml").exists()]
    invalid = [c for c in CASES if (c / "expected.txt").exists()]
    assert len(CASES) >= 40
    assert len(valid) >= 15 and len(invalid) >= 25
    assert len(valid) + len(invalid) == len(CASES), "every case needs exactly one golden file"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_golden(case: Path):
    code, out, err = run_cli(case_argv(case))
    if (case / "expected.yaml").exists():
        assert err == "", err
        assert code == 0
        assert out == (case / "expected.yaml").read_text()
    else:
        assert code == 2
        assert out == ""
        assert err == (case / "expected.txt").read_text()
        assert "Traceback" not in err


@pytest.mark.parametrize("case", [c for c in CASES if (c / "expected.yaml").exists()], ids=lambda c: c.name)
def test_rendering_is_byte_identical_across_runs(case: Path):
    first = run_cli(case_argv(case))
    second = run_cli(case_argv(case))
    assert first == second


def test_every_invalid_message_names_file_line_and_key():
    for case in CASES:
        expected = case / "expected.txt"
        if not expected.exists():
            continue
        for line in expected.read_text().splitlines():
            if line.startswith("  fix: "):
                continue
            assert line.startswith("<data>/configs/" + case.name + "/tau.yaml") or line.startswith("<data>/profiles/"), line


def test_every_problem_gets_its_own_message():
    text = (CASES_DIR / "invalid-reserved-env" / "expected.txt").read_text()
    problems = [line for line in text.splitlines() if not line.startswith("  fix:")]
    assert len(problems) == 6  # MASTER_ADDR, MASTER_PORT, NCCL_DEBUG, TAU_TEAM, TAU_Resume_From, TAU_TOKEN; not TAU_RETRY_MAX
    assert all("  fix: " in block for block in text.split("\n<data>"))
