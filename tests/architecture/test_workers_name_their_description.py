"""Every ``@work`` in the app passes ``description=``.

Without it Textual builds the worker's debug description from ``repr()`` of every argument, on
the calling thread: a pane refresh handed its table states (thousands of rich ``Text`` cells)
spent most of the UI thread's time in ``__repr__`` under a stream of changes.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tau_tui"


def work_decorators_without_description() -> list[str]:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                if name != "work":
                    continue
                keywords = {k.arg for k in decorator.keywords} if isinstance(decorator, ast.Call) else set()
                if "description" not in keywords:
                    missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    return missing


def test_every_work_decorator_names_its_description() -> None:
    assert work_decorators_without_description() == []


def test_the_check_sees_the_decorators() -> None:
    found = sum(1 for path in PACKAGE.rglob("*.py") if "@work(" in path.read_text(encoding="utf-8"))
    assert found >= 5, "no @work decorators found: the check above would pass on nothing"
