"""Hostile files: huge, binary, empty, alias bombs. Each gets a clear error after bounded work (nodes, characters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_tui.core.runconfig import yamlsource
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


def _count_work(monkeypatch) -> dict[str, int]:
    """Record the most nodes and characters the loader built: the work bound, independent of machine load."""
    seen = {"nodes": 0, "chars": 0}
    original = yamlsource._Builder._count

    def counting(self, node):
        try:
            original(self, node)
        finally:
            seen["nodes"] = max(seen["nodes"], self.constructed)
            seen["chars"] = max(seen["chars"], self.expanded_chars)

    monkeypatch.setattr(yamlsource._Builder, "_count", counting)
    return seen


def test_billion_laughs_is_bounded_in_work(tmp_path, monkeypatch):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 12):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    path = tmp_path / "tau.yaml"
    path.write_text("\n".join(lines) + "\n")
    work = _count_work(monkeypatch)
    message = _single_message(path)
    assert "aliases expand to more than" in message
    # 10^12 values expand from this file; the loader stops one node past its budget.
    assert work["nodes"] == yamlsource.MAX_CONSTRUCTED_NODES + 1


def test_aliases_of_a_long_string_are_bounded_in_characters(tmp_path, monkeypatch):
    # Few nodes, many bytes: 20,000 aliases of a 1 KB string would build 20 MB (and print it).
    path = tmp_path / "tau.yaml"
    path.write_text("s: &s " + "x" * 1024 + "\nl: [" + ",".join(["*s"] * 20_000) + "]\n")
    work = _count_work(monkeypatch)
    message = _single_message(path)
    assert "characters" in message and len(message) < 500
    assert work["nodes"] < 3_000
    assert work["chars"] <= yamlsource.MAX_EXPANDED_CHARS + 1024


def test_deep_nesting_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "tau.yaml"
    path.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(DiagnosticError):
        load_config(path)
