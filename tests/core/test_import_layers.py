"""Import layers of tau_tui and the agent: who may import whom, and no import circles.

Two views of the same rules:

* static: every ``import`` / ``from ... import`` in every module (function-level ones included)
  read with ``ast``, giving the module import graph; the layer rules are checked on it and it
  must be acyclic.  Imports under ``if TYPE_CHECKING:`` never run, so they count for the layer
  rules but not as graph edges for the cycle check;
* runtime: every module imported alone in a fresh interpreter state (one forked child per
  module, two subprocesses in all), which catches import-order-dependent failures and
  reports which tau_tui modules and whether Textual each one actually loads.

Layers (lower never imports higher):

    app shell (tau_tui/*.py, screens/, widgets/)
      -> core.operations  (drain, multikueue, runstatus, audit)
      -> core.cluster     (cluster access and its read models)
      -> core.runconfig   (the tau.yaml compiler)      core.gpuhealth (agent + TUI health model)
      -> core.apifields   (conditions and API times, shared by runconfig and cluster)
    agent/tau_agent imports only tau_tui.core.gpuhealth.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"tau_tui": ROOT / "tau_tui", "tau_agent": ROOT / "agent" / "tau_agent"}

CORE = "tau_tui.core"
RUNCONFIG = "tau_tui.core.runconfig"
CLUSTER = "tau_tui.core.cluster"
OPERATIONS = "tau_tui.core.operations"
GPUHEALTH = "tau_tui.core.gpuhealth"
APIFIELDS = "tau_tui.core.apifields"


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path) -> list[tuple[str, bool]]:
    """(imported module, annotation-only) for every import statement in the file."""
    tree = ast.parse(path.read_text("utf-8"))
    is_package = path.name == "__init__.py"
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                # ``from package import submodule`` imports the submodule.
                found.append((f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


def _internal(target: str) -> str | None:
    """The project module an import names (the longest known prefix), or None."""
    while target:
        if target in MODULES:
            return target
        target = target.rpartition(".")[0]
    return None


def _layer_violations(module: str, imported: str) -> str | None:
    """Why ``module`` may not import ``imported``; None when it may."""
    top = imported.split(".")[0]
    if _under(module, CORE):
        if top == "textual":
            return "the core never imports Textual"
        if top == "tau_tui" and not _under(imported, CORE):
            return "the core never imports the app, screens, widgets or CLI"
    if _under(module, GPUHEALTH) and top in ("tau_tui", "tau_agent") and not _under(imported, GPUHEALTH):
        return "the GPU health model imports nothing of tau_tui outside its package"
    if _under(module, APIFIELDS) and top in ("tau_tui", "tau_agent") and not _under(imported, APIFIELDS):
        return "apifields sits below every other core package"
    if _under(module, RUNCONFIG) and (_under(imported, CLUSTER) or _under(imported, OPERATIONS)):
        return "the run-config compiler imports no cluster access and no operations"
    if _under(module, CLUSTER) and (_under(imported, OPERATIONS) or (top == "tau_tui" and not _under(imported, CORE))):
        return "cluster access imports no operations and no app"
    if _under(module, "tau_agent") and top == "tau_tui" and not _under(imported, GPUHEALTH):
        return "the agent imports only tau_tui.core.gpuhealth"
    return None


def test_every_module_is_found():
    assert len([m for m in MODULES if _under(m, CORE)]) >= 40
    assert len([m for m in MODULES if _under(m, "tau_agent")]) >= 10
    for package in (RUNCONFIG, CLUSTER, OPERATIONS, GPUHEALTH):
        assert package in MODULES, package


def test_layers_import_downwards_only():
    problems = [
        f"{module} imports {imported}: {why}"
        for module, imports in IMPORTS.items()
        for imported, _type_only in imports
        if (why := _layer_violations(module, imported))
    ]
    assert not problems, "\n".join(problems)


def test_core_package_roots_stay_import_light():
    """Package ``__init__`` files of the core re-export nothing: import the defining module."""
    for module in (CORE, RUNCONFIG, CLUSTER, OPERATIONS, GPUHEALTH):
        assert not IMPORTS[module], f"{module}/__init__.py imports {IMPORTS[module]}"


def _graph(selected) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES if selected(m)}
    for module in graph:
        for imported, type_only in IMPORTS[module]:
            target = _internal(imported)
            if not type_only and target is not None and target in graph and target != module:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_core_or_the_agent():
    graph = _graph(lambda m: _under(m, CORE) or _under(m, "tau_agent"))
    assert len(graph) >= 50
    assert _cycles(graph) == []


def test_no_import_circle_anywhere_in_tau_tui():
    assert _cycles(_graph(lambda m: True)) == []


# --- runtime: each module alone ------------------------------------------------------------------

CHILD_PROGRAM = r"""
import importlib, json, os, sys
preload, modules = json.loads(sys.argv[1])
for name in preload:  # third-party packages every child would load anyway: load them once
    importlib.import_module(name)
for module in modules:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            importlib.import_module(module)
            error = None
        except BaseException as exc:  # report, never crash the batch
            error = f"{type(exc).__name__}: {exc}"
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tau_tui", "tau_agent"))
        textual = any(m == "textual" or m.startswith("textual.") for m in sys.modules)
        os.write(write_end, json.dumps({"module": module, "error": error, "loaded": loaded, "textual": textual}).encode())
        os.close(write_end)
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    print(b"".join(chunks).decode())
"""


def _import_alone(modules: list[str], preload: list[str]) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD_PROGRAM, json.dumps([preload, modules])],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["module"] for r in reports] == modules, result.stderr[-4000:]
    return reports


def test_every_core_and_agent_module_imports_alone_within_its_layer():
    modules = sorted(m for m in MODULES if _under(m, CORE) or _under(m, "tau_agent"))
    # Textual is deliberately not preloaded: a core module that pulls it in is caught.
    reports = _import_alone(modules, ["pydantic", "yaml", "kubernetes.client", "ruamel.yaml"])
    problems = [f"{r['module']}: {r['error']}" for r in reports if r["error"]]
    problems += [f"{r['module']} loads Textual" for r in reports if r["textual"]]
    problems += [
        f"{r['module']} loads {loaded}: {why}"
        for r in reports
        for loaded in r["loaded"]
        # Parent packages load with any submodule; their own imports are checked statically.
        if not any(other.startswith(loaded + ".") for other in r["loaded"])
        and (why := _layer_violations(r["module"], loaded))
    ]
    assert not problems, "\n".join(problems)
    assert len(reports) >= 50


def test_every_app_module_imports_alone():
    # `python -m tau_tui` runs the CLI on import; its one import is checked statically.
    modules = sorted(
        m for m in MODULES if _under(m, "tau_tui") and not _under(m, CORE) and not m.endswith(".__main__")
    )
    reports = _import_alone(modules, ["pydantic", "yaml", "kubernetes.client", "ruamel.yaml", "textual.app"])
    problems = [f"{r['module']}: {r['error']}" for r in reports if r["error"]]
    assert not problems, "\n".join(problems)
    assert len(reports) >= 20
