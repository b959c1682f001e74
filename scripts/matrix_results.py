"""The version matrix's results (scripts/matrix.sh): one JSON file per cell, and the table of
docs/compatibility.md printed from them.

  record RESULTS CELL --junit FILE --pytest-status N   a cell's test run, from pytest's JUnit XML
  record RESULTS CELL --build-failed LOG               a cell whose binaries could not be built
  table RESULTS [--write DOC]                          the Markdown table, every cell of harness/matrix.tsv
                                                       (--write: into DOC, between its table markers)

"What differs" comes from RESULTS/differs.tsv (cell, tab, text), written by hand from what a run shows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.binaries import matrix_cells  # noqa: E402

TABLE_HEADER = "| Cell | Kubernetes | Kueue | Kueue ran as | KubeRay | Date | Result | What differs |"
#: The test module that runs the KubeRay operator (tier 2): a cell whose run has it ran the operator.
OPERATOR_MODULE = "tests.integration.test_rayjob_kuberay_t2"
TABLE_BEGIN = "<!-- matrix table: written by `scripts/matrix.sh --table --write docs/compatibility.md` -->"
TABLE_END = "<!-- end of matrix table -->"


def _junit_counts(path: Path) -> dict:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    not_passed: list[str] = []
    per_module: dict[str, int] = {}
    for suite in suites:
        for key in counts:
            counts[key] += int(suite.get(key, 0))
        for case in suite.iter("testcase"):
            module = ".".join(str(case.get("classname")).split(".")[:3])
            per_module[module] = per_module.get(module, 0) + 1
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), None)
            if outcome:
                not_passed.append(f"{outcome}: {case.get('classname')}::{case.get('name')}")
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {"counts": counts, "tests_per_module": per_module, "not_passed": not_passed}


def record(results: Path, cell: str, junit: Path | None, pytest_status: int | None, build_log: Path | None) -> Path:
    versions = matrix_cells()[cell]
    entry: dict = {
        "cell": cell,
        "date": dt.date.today().isoformat(),
        "kubernetes": versions["K8S_VERSION"],
        "kueue": versions["KUEUE_VERSION"],
        "kueue_source": versions["KUEUE_SOURCE"],
        "kuberay_crds": versions["KUBERAY_VERSION"],
        "kueue_ran_as": f"controller ({versions['KUEUE_SOURCE']})",
        "machine": f"{platform.machine()}, {platform.python_version()}, {platform.platform()}",
    }
    if build_log is not None:
        entry["result"] = "build failed"
        entry["kueue_ran_as"] = "-"  # nothing ran
        entry["build_log_tail"] = build_log.read_text(errors="replace").splitlines()[-30:]
    else:
        assert junit is not None
        entry.update(_junit_counts(junit))
        entry["pytest_status"] = pytest_status
        if entry["tests_per_module"].get(OPERATOR_MODULE):
            entry["kuberay_operator"] = versions["KUBERAY_VERSION"]
        counts = entry["counts"]
        if counts["passed"] == 0:
            entry["result"] = "failed (no test passed)"
        elif pytest_status == 0 and counts["failures"] == counts["errors"] == 0:
            skipped = f", {counts['skipped']} skipped" if counts["skipped"] else ""
            entry["result"] = f"passed ({counts['passed']}{skipped})"
        else:
            entry["result"] = f"failed ({counts['failures'] + counts['errors']} of {counts['tests']})"
    path = results / f"{cell}.json"
    path.write_text(json.dumps(entry, indent=2) + "\n")
    return path


def kuberay_cell(versions: dict[str, str], entry: dict) -> str:
    """The KubeRay a cell's run used: its operator (tier 2's RayJob test ran) or its CRDs only."""
    if not entry:
        return versions["KUBERAY_VERSION"]
    if entry.get("kuberay_operator"):
        return f"{entry['kuberay_operator']} (operator)"
    return f"{entry.get('kuberay_crds', versions['KUBERAY_VERSION'])} (CRDs only)"


def table(results: Path) -> str:
    differs: dict[str, str] = {}
    notes = results / "differs.tsv"
    if notes.is_file():
        for line in notes.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                cell, _, text = line.partition("\t")
                differs[cell] = text.strip()
    lines = [TABLE_HEADER, "|---|---|---|---|---|---|---|---|"]
    for cell, versions in matrix_cells().items():
        path = results / f"{cell}.json"
        entry = json.loads(path.read_text()) if path.is_file() else {}
        lines.append("| " + " | ".join([
            cell, versions["K8S_VERSION"], versions["KUEUE_VERSION"],
            entry.get("kueue_ran_as", "-"), kuberay_cell(versions, entry), entry.get("date", "-"), entry.get("result", "not run"),
            differs.get(cell, ""),
        ]) + " |")
    return "\n".join(lines)


def write_table(doc: Path, text: str) -> None:
    """Replace what lies between the table markers of ``doc``; a doc without both markers is an error."""
    page = doc.read_text()
    begin, end = page.find(TABLE_BEGIN), page.find(TABLE_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"{doc}: no table markers ({TABLE_BEGIN!r} ... {TABLE_END!r})")
    doc.write_text(page[: begin + len(TABLE_BEGIN)] + "\n" + text + "\n" + page[end:])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("results", type=Path)
    rec.add_argument("cell")
    rec.add_argument("--junit", type=Path)
    rec.add_argument("--pytest-status", type=int)
    rec.add_argument("--build-failed", type=Path, dest="build_log")
    tab = sub.add_parser("table")
    tab.add_argument("results", type=Path)
    tab.add_argument("--write", type=Path, help="the document to write the table into, between its markers")
    args = parser.parse_args(argv)
    if args.command == "record":
        if (args.junit is None) == (args.build_log is None):
            parser.error("record takes exactly one of --junit and --build-failed")
        if args.junit is not None and (not args.junit.is_file() or args.junit.stat().st_size == 0):
            # pytest ended before writing its report (e.g. an error at collection): nothing ran.
            args.junit.write_text('<testsuites><testsuite tests="0"/></testsuites>')
        print(record(args.results, args.cell, args.junit, args.pytest_status, args.build_log))
    elif args.write is not None:
        write_table(args.write, table(args.results))
        print(f"table written into {args.write}")
    else:
        print(table(args.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
