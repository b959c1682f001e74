"""No import circle anywhere: tau_tui (the core, the simulator and the app), the agent and the
GPU health package, read with ``ast`` as one module graph.

Every import statement counts as an edge: at module level, inside a function, and under
``if TYPE_CHECKING:``.  A function-level or annotation-only import dodges the runtime error of a
circle but keeps the two modules knowing each other; the cure is a module both can import."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "tau_tui": ROOT / "tau_tui",
    "tau_agent": ROOT / "agent" / "tau_agent",
    "tau_gpuhealth": ROOT / "gpuhealth" / "tau_gpuhealth",
}


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for name, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([name, *parts])] = path
    return modules


MODULES = _module_files()


def _known(target: str) -> str | None:
    """The project module an import names (the longest known prefix), or None."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _imported_modules(module: str, path: Path) -> set[str]:
    """The project modules ``module`` imports anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import submodule`` imports the submodule.
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            known = _known(target)
            if known is not None and known != module:
                found.add(known)
    return found


def import_graph() -> dict[str, set[str]]:
    return {module: _imported_modules(module, path) for module, path in MODULES.items()}


def _path_back(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """The shortest chain of imports from ``start`` back to itself, or None."""
    came_from: dict[str, str] = {}
    queue = deque(sorted(graph[start]))
    for child in queue:
        came_from[child] = start
    while queue:
        node = queue.popleft()
        if node == start:
            chain = [start]
            step = came_from[start]
            while step != start:
                chain.append(step)
                step = came_from[step]
            return [start, *reversed(chain[1:]), start]
        for child in sorted(graph[node]):
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    return None


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for child in graph[stack.pop()]:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (as its chain of imports) per group of modules that import each other."""
    reverse: dict[str, set[str]] = {module: set() for module in graph}
    for module, children in graph.items():
        for child in children:
            reverse.setdefault(child, set()).add(module)
    reported: set[str] = set()
    circles = []
    for module in sorted(graph):
        if module in reported:
            continue
        chain = _path_back(graph, module)
        if chain is not None:
            circles.append(chain)
            reported |= _reachable(graph, module) & _reachable(reverse, module)
    return circles


def test_the_walk_finds_every_package():
    for package, folder in PACKAGES.items():
        assert package in MODULES, f"{package} not found at {folder}"
    assert len([m for m in MODULES if m.startswith("tau_tui.core.sim.")]) >= 20


def test_the_circle_finder_reports_each_circle_with_its_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}, "f": {"a"}}
    assert import_circles(graph) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_a_function_level_or_annotation_only_import_is_an_edge(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tau_tui.core.sim.world import SimulatedCluster\n"
        "def build():\n    from tau_tui.core.sim import generate\n"
        "from ..cluster import kinds\n"
    )
    assert _imported_modules("tau_tui.core.sim.probe", probe) == {
        "tau_tui.core.sim.world", "tau_tui.core.sim.generate", "tau_tui.core.cluster.kinds"}


def test_no_import_circle_anywhere():
    circles = import_circles(import_graph())
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(chain) for chain in circles)
