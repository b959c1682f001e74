"""The app's modules import each other in one direction only (docs/architecture.md,
"Import direction in the app"): a static graph of every module outside tau_tui/core,
function-level and TYPE_CHECKING imports included, has no circle, and no lower layer
reaches up to the screens, the app shell or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import tau_tui
from tests.architecture.test_import_circles import import_circles

PACKAGE = Path(tau_tui.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _app_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py") if "core" not in p.relative_to(PACKAGE).parts[:1]}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The known modules ``name`` imports anywhere in its body."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rsplit(".", 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _app_modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def test_the_app_has_no_import_circle():
    graph = _graph()
    assert len(graph) > 30  # the walk found the app's modules
    assert import_circles(graph) == []


def test_lower_layers_never_import_upwards():
    upward = {
        "tau_tui.app": ("tau_tui.cli", "tau_tui.commands"),
        "tau_tui.app_components": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app"),
        "tau_tui.app_messages": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app", "tau_tui.app_components",
                                 "tau_tui.screens", "tau_tui.widgets"),
        "tau_tui.screens": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app"),
        "tau_tui.mutations": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app", "tau_tui.screens", "tau_tui.widgets"),
        "tau_tui.startup": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app", "tau_tui.screens", "tau_tui.widgets"),
        "tau_tui.settings": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app", "tau_tui.screens", "tau_tui.widgets", "tau_tui.mutations"),
        "tau_tui.widgets": ("tau_tui.cli", "tau_tui.commands", "tau_tui.app", "tau_tui.screens", "tau_tui.mutations", "tau_tui.startup"),
    }
    wrong = []
    for name, targets in _graph().items():
        for layer, forbidden in upward.items():
            if name == layer or name.startswith(layer + "."):
                wrong += [f"{name} imports {t}" for t in targets
                          if any(t == f or t.startswith(f + ".") for f in forbidden)]
    assert wrong == []
