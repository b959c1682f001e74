"""The bad-input corpus (tests/data/bad_inputs) through the real CLI entry, one case at a time.

Every case must end with its expected exit code and message, never a traceback or "unexpected
error", within a per-case timeout (a hang fails the case instead of the run), with bounded output,
no raw control characters, and file:line:col wherever the input has a position.
Regenerate the corpus with tests/data/regen_bad_inputs.py.
"""

from __future__ import annotations

import re
import threading

import pytest

from tests.data.cases import DATA, run_cli

CORPUS = DATA / "bad_inputs"
CASES_DIR = CORPUS / "cases"
EMPTY_PROFILES = DATA / "profiles" / "empty.yaml"
# Generous: a case takes well under a second; the bound only turns a hang into a failure.
CASE_TIMEOUT_S = 120
# Everything a case may print: 50 messages with their fixes fit; 99 MB of expanded aliases do not.
OUTPUT_CAP_BYTES = 32 * 1024
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
POSITION = re.compile(r"^<data>/\S+:\d+:\d+[ :]")


def _manifest() -> list[tuple[str, str, int, str, bool]]:
    rows = []
    for line in (CORPUS / "manifest.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, command, code, fragment, pos = line.split("\t")
        rows.append((name, command, int(code), fragment, pos == "pos"))
    return rows


MANIFEST = _manifest()


def _argv(name: str, command: str) -> list[str]:
    file = str(CASES_DIR / name)
    if command == "validate":
        return ["validate", file]
    if command == "render":
        return ["render", file, "--profiles", str(EMPTY_PROFILES)]
    if command == "render-config-snapshot":  # the config names its own snapshot
        return ["render", file]
    if command == "snapshot":
        return ["render", str(CORPUS / "base.yaml"), "--profiles", file]
    if command == "profiles":
        return ["profiles", "--profiles", file]
    raise AssertionError(f"unknown command {command!r} in the manifest")


def _run_bounded(argv: list[str]) -> tuple[int, str, str]:
    """run_cli in a daemon thread: a case that hangs fails after CASE_TIMEOUT_S instead of hanging the suite."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(run_cli(argv)), daemon=True)
    thread.start()
    thread.join(CASE_TIMEOUT_S)
    if thread.is_alive() or not result:
        pytest.fail(f"{argv} did not finish within {CASE_TIMEOUT_S} s (or raised)")
    return result[0]


def test_the_corpus_covers_every_class():
    names = [row[0] for row in MANIFEST]
    files = sorted(p.name for p in CASES_DIR.iterdir() if p.is_file() and p.name != "train.py")
    assert len(MANIFEST) >= 150
    assert sorted(names) == files, "every case file has exactly one manifest line"
    for prefix in ("tag-", "number-", "nesting-", "path-", "amplify-", "control-", "name-", "image-", "syntax-", "file-", "snapshot-"):
        assert sum(n.startswith(prefix) for n in names) >= 5, prefix


@pytest.mark.parametrize("name,command,code,fragment,pos", MANIFEST, ids=[row[0] for row in MANIFEST])
def test_bad_input(name: str, command: str, code: int, fragment: str, pos: bool):
    exit_code, out, err = _run_bounded(_argv(name, command))
    both = out + err
    assert "Traceback" not in both
    assert "unexpected error" not in both
    assert exit_code == code, both[:2000]
    assert len(both.encode("utf-8", "surrogateescape")) <= OUTPUT_CAP_BYTES
    assert not RAW_CONTROL.search(both), "control characters from the input reached the terminal raw"
    assert fragment in (err if code else out), err[:2000]
    if code == 0:
        return
    assert out == ""
    messages = [line for line in err.splitlines() if not line.startswith("  fix: ")]
    assert messages
    for line in messages:
        assert line.startswith("<data>/") or re.fullmatch(r"… and [0-9,]+ more", line), line[:300]
    if pos:
        assert all(POSITION.match(line) for line in messages if line.startswith("<data>/")), messages[:3]
