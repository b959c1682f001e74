"""Hostile files: huge, binary, empty, alias bombs. Each gets a clear error, quickly, in bounded memory."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config


def _single_message(path: Path) -> str:
    with pytest.raises(DiagnosticError) as info:
        load_config(path)
    assert len(info.value.diagnostics) == 1
    return str(info.value.diagnostics[0])


def test_ten_megabyte_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "tau.yaml"
    path.write_text("name: big\n" + "# padding\n" * (1024 * 1024))
    assert path.stat().st_size > 10 * 1024 * 1024
    message = _single_message(path)
    assert "10.0 MiB; the limit is 1 MiB" in message
    assert "fix:" in message


def test_binary_file(tmp_path):
    path = tmp_path / "tau.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    assert "binary file" in _single_message(path)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "tau.yaml"
    path.write_bytes(b"name: ok\nimage: caf\xe9\n")
    message = _single_message(path)
    assert f"{path}:2:1" in message and "UTF-8" in message


@pytest.mark.parametrize("text", ["", "\n\n   \n", "# only a comment\n", "---\n"])
def test_empty_files(tmp_path, text):
    path = tmp_path / "tau.yaml"
    path.write_text(text)
    message = _single_message(path)
    assert "empty" in message or "no YAML document" in message


def test_missing_file_and_directory(tmp_path):
    assert "file not found" in _single_message(tmp_path / "nope.yaml")
    assert "is a directory" in _single_message(tmp_path)


def test_billion_laughs_is_bounded_in_time_and_memory(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 12):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    path = tmp_path / "tau.yaml"
    path.write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    started = time.monotonic()
    message = _single_message(path)
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "aliases expand to more than" in message
    assert elapsed < 2.0
    assert peak < 200 * 1024 * 1024


def test_deep_nesting_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "tau.yaml"
    path.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(DiagnosticError):
        load_config(path)
