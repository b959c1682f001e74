"""Shared by the golden tests and regen.py: how a tests/data/configs case is run.

A case is a directory with tau.yaml (and any script it names). Optional `args` holds extra CLI
arguments on one line ({data} stands for tests/data). `expected.yaml` (exit 0, stdout) or `expected.txt` (exit 2, stderr) is
the golden output.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

from tau_tui.cli import main

DATA = Path(__file__).resolve().parent
CASES_DIR = DATA / "configs"
DEFAULT_SNAPSHOT = DATA / "profiles" / "snapshot.yaml"


def case_argv(case: Path) -> list[str]:
    text = (case / "args").read_text().replace("{data}", str(DATA)) if (case / "args").exists() else ""
    extra = shlex.split(text)
    if extra[:1] == ["validate"]:
        return ["validate", str(case / "tau.yaml")]
    if "--profiles-from-config" in extra:
        # The case names its snapshot in policy.workload_profile_snapshot.
        extra.remove("--profiles-from-config")
    elif "--profiles" not in extra:
        extra += ["--profiles", str(DEFAULT_SNAPSHOT)]
    return ["render", str(case / "tau.yaml"), *extra]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    # Golden files must not depend on where the checkout lives.
    root = str(DATA)
    return code, out.getvalue().replace(root, "<data>"), err.getvalue().replace(root, "<data>")
