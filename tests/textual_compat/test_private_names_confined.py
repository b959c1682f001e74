"""Textual's private names appear only in ``tau_tui/textual_compat/``.

The oracle is Textual's own source, read with ``ast``: every private module (``textual._x``,
``textual.widgets._x``), every private method or attribute a Textual class defines (``def _x``,
``self._x = ...``, class-level ``_x``, name-mangled ``__x`` as ``_Class__x``).  Every UI module
(one that imports Textual) outside the compat package is scanned for imports of those modules,
attribute reads/writes of those names, ``getattr``-style string access, and methods that override
them.  The project's own private fields count only when Textual defines the same name, because an
accidental collision with a Textual private on a Textual subclass is the same hazard.

The test modules are scanned the same way (every ``tests/**/*.py``), except ``tests/textual_compat/``
as a whole (the canary and the tests of the compat hooks themselves, which must touch the names),
the snapshot baselines and ``tests/data/`` (inputs the tests read, not test code).  A test that
needs to observe an internal goes through a named hook in the compat package (``probes.py`` holds
those only tests call).
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

import textual

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "tau_tui"
COMPAT = PRODUCT / "textual_compat"
TESTS = ROOT / "tests"
TESTS_EXEMPT = (TESTS / "textual_compat", TESTS / "data")
TEXTUAL_ROOT = Path(textual.__file__).resolve().parent

# Private names Textual defines that the product uses for its own objects on purpose, with why.
# A name here is never read from or written to a Textual object.
OWN_NAMES_SHARED_WITH_TEXTUAL: dict[str, str] = {}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _privates_of(cls_node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(cls_node):
        found: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                found.append(node.attr)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in cls_node.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.extend(t.id for t in targets if isinstance(t, ast.Name))
        for name in found:
            if name.startswith("__") and not name.endswith("__"):
                names.add(f"_{cls_node.name.lstrip('_')}{name}")  # name mangling
            elif _is_private(name):
                names.add(name)
    return names


@cache
def _textual_classes() -> dict[tuple[str, str], frozenset[str]]:
    """(module, class name) -> the private names that Textual class defines."""
    classes: dict[tuple[str, str], frozenset[str]] = {}
    for path in TEXTUAL_ROOT.rglob("*.py"):
        parts = list(path.relative_to(TEXTUAL_ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        tree = ast.parse(path.read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes[(".".join(parts), node.name)] = frozenset(_privates_of(node))
    return classes


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _classes_of(module_name: str) -> list[type]:
    module = importlib.import_module(module_name)
    found: list[type] = []
    pending = [value for value in vars(module).values()
               if isinstance(value, type) and value.__module__ == module_name]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(value for value in vars(cls).values()
                       if isinstance(value, type) and value.__module__ == module_name and value not in found)
    return found


def _textual_privates_in_mro(cls: type) -> frozenset[str]:
    classes = _textual_classes()
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] == "textual":
            names |= classes.get((base.__module__, base.__name__), frozenset())
    return frozenset(names)


@cache
def _reachable_privates() -> frozenset[str]:
    """Privates of the Textual objects every UI module can reach (``self.app``, ``self.screen``)."""
    from textual.app import App
    from textual.screen import Screen
    from textual.widget import Widget

    return _textual_privates_in_mro(App) | _textual_privates_in_mro(Screen) | _textual_privates_in_mro(Widget)


def textual_private_names(module_name: str) -> frozenset[str]:
    """Private names a module may lean on: those of every Textual class its classes inherit from,
    and those of the app, screen and widget it can reach."""
    names = set(_reachable_privates())
    for cls in _classes_of(module_name):
        names |= _textual_privates_in_mro(cls)
    return frozenset(names) - set(OWN_NAMES_SHARED_WITH_TEXTUAL)


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "textual" and any(_is_private(part) for part in parts[1:])


def _ui_modules() -> list[Path]:
    files = []
    for path in sorted(PRODUCT.rglob("*.py")):
        if COMPAT in path.parents:
            continue
        text = path.read_text("utf-8")
        if "textual" in text:
            files.append(path)
    return files


def _test_modules() -> list[Path]:
    return [path for path in sorted(TESTS.rglob("*.py"))
            if "__snapshots__" not in path.parts and not any(exempt in path.parents for exempt in TESTS_EXEMPT)]


def _overridable(module_name: str, class_name: str, private: frozenset[str]) -> frozenset[str]:
    """The private names a class's Textual bases define (all of ``private`` if it cannot be found)."""
    cls = getattr(importlib.import_module(module_name), class_name, None)
    return _textual_privates_in_mro(cls) if isinstance(cls, type) else private


def _uses(path: Path, private: frozenset[str]) -> list[str]:
    module_name = _module_name(path)
    tree = ast.parse(path.read_text("utf-8"))
    where = path.relative_to(ROOT)
    uses: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _private_module(node.module):
            uses.append(f"{where}:{node.lineno}: imports {node.module}")
        elif isinstance(node, ast.Import):
            uses.extend(f"{where}:{node.lineno}: imports {a.name}" for a in node.names if _private_module(a.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("textual"):
            uses.extend(f"{where}:{node.lineno}: imports {node.module}.{a.name}"
                        for a in node.names if _is_private(a.name))
        elif isinstance(node, ast.Attribute) and node.attr in private:
            uses.append(f"{where}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ClassDef):
            overridden = _overridable(module_name, node.name, private)
            uses.extend(f"{where}:{item.lineno}: {node.name} overrides Textual's {item.name}"
                        for item in node.body
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in overridden)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in private:
            uses.append(f"{where}:{node.lineno}: string {node.value!r}")
    return uses


def test_textual_private_names_are_known() -> None:
    names = _reachable_privates()
    # The scan must see Textual's privates, or it proves nothing.
    assert {"_compositor", "_register", "_batch_count", "_Screen__update_timer", "_load_screen_css"} <= names


def test_no_private_textual_name_outside_the_compat_package() -> None:
    modules = _ui_modules()
    assert len(modules) > 20, "the scan found too few UI modules to mean anything"
    uses = [use for path in modules for use in _uses(path, textual_private_names(_module_name(path)))]
    assert not uses, "private Textual names outside tau_tui/textual_compat/:\n" + "\n".join(uses)


def test_no_private_textual_name_in_the_tests_outside_tests_textual_compat() -> None:
    modules = _test_modules()
    assert len(modules) > 100, "the scan found too few test modules to mean anything"
    uses = [use for path in modules for use in _uses(path, textual_private_names(_module_name(path)))]
    assert not uses, ("private Textual names in tests outside tests/textual_compat/ (observe through a hook in "
                      "tau_tui/textual_compat/, e.g. probes.py, or public API):\n" + "\n".join(uses))
