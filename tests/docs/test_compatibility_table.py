"""The cells the app takes as tested (core/cluster/tested_cells.py) are the cells the table of
docs/compatibility.md says passed: the app's "outside the tested matrix" warning follows the
published table; each row names the KubeRay version its cell ran, the one harness/matrix.tsv gives
that cell (the ray-operator its Kueue's go.mod requires).  Reads files only."""

from __future__ import annotations

from pathlib import Path

from tau_tui.core.cluster.tested_cells import TESTED_CELLS, release_minor

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "compatibility.md"
MATRIX = ROOT / "harness" / "matrix.tsv"
HEADER = ["Cell", "Kubernetes", "Kueue", "Kueue ran as", "KubeRay", "Date", "Result", "What differs"]


def cells_of(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table_rows(text: str) -> list[dict[str, str]]:
    """The rows of the table whose header is :data:`HEADER`, by column name."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("|") and cells_of(line) == HEADER]
    assert len(starts) == 1, f"one table headed | {' | '.join(HEADER)} |"
    rows = []
    for line in lines[starts[0] + 2:]:  # past the header and its |---| line
        if not line.lstrip().startswith("|"):
            break
        cells = cells_of(line)
        assert len(cells) == len(HEADER), line
        rows.append(dict(zip(HEADER, cells, strict=True)))
    return rows


def minor_text(version: str, prefix: str) -> str:
    found = release_minor(version)
    assert found is not None, version
    return f"{prefix}{found[0]}.{found[1]}"


def test_the_tested_cells_are_the_passed_rows_of_the_table():
    rows = table_rows(DOC.read_text("utf-8"))
    assert rows, "the table has rows"
    for row in rows:  # "passed (41)", "failed (2 of 41)", "build failed", "not run"
        assert row["Result"], row
    passed = {(minor_text(row["Kubernetes"], ""), minor_text(row["Kueue"], "v"))
              for row in rows if row["Result"].startswith("passed")}
    assert len(set(TESTED_CELLS)) == len(TESTED_CELLS)
    assert set(TESTED_CELLS) == passed


def test_each_row_names_the_kuberay_version_of_its_cell():
    cells = {}
    for line in MATRIX.read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            cell, kubernetes, kueue, _source, kuberay = line.split("\t")
            cells[cell] = (kubernetes, kueue, kuberay)
    rows = table_rows(DOC.read_text("utf-8"))
    assert {row["Cell"] for row in rows} == set(cells)
    for row in rows:  # "v1.6.0 (operator)" or "v1.6.0 (CRDs only)"
        kubernetes, kueue, kuberay = cells[row["Cell"]]
        assert (row["Kubernetes"], row["Kueue"]) == (kubernetes, kueue), row
        version, _, how = row["KubeRay"].partition(" ")
        assert version == kuberay and how in ("(operator)", "(CRDs only)"), row
