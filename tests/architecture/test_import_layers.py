"""Import layers of tau_tui, the GPU health model and the agent: who may import whom, no import circles.

Two views of the same rules:

* static: every ``import`` / ``from ... import`` in every module (function-level and
  ``TYPE_CHECKING`` ones included) read with ``ast``; the layer rules are checked on it
  (``test_import_circles.py`` checks the same graph has no circle);
* runtime: every module imported alone in a fresh interpreter state (one forked child per
  module, two subprocesses in all), which catches import-order-dependent failures and
  reports which tau_tui modules and whether Textual each one actually loads.

Layers (lower never imports higher):

    app shell (tau_tui/*.py, screens/, widgets/)
      -> core.operations  (drain, multikueue, runstatus, audit)
      -> core.sim         (the simulated cluster: one ClusterBackend and its world)
      -> core.cluster     (cluster access and its read models)
      -> core.runconfig   (the tau.yaml compiler)
      -> core.apifields   (conditions and API times, shared by runconfig and cluster)
    tau_gpuhealth (gpuhealth/, its own distribution): imports neither tau_tui, the agent nor Textual;
    tau_tui.core and the agent (agent/tau_agent) may import it. The agent imports no tau_tui and no Textual.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.architecture.test_import_circles import MODULES, PACKAGES, ROOT

CORE = "tau_tui.core"
RUNCONFIG = "tau_tui.core.runconfig"
CLUSTER = "tau_tui.core.cluster"
OPERATIONS = "tau_tui.core.operations"
SIM = "tau_tui.core.sim"
GPUHEALTH = "tau_gpuhealth"
APIFIELDS = "tau_tui.core.apifields"


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


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


def _layer_violations(module: str, imported: str) -> str | None:
    """Why ``module`` may not import ``imported``; None when it may."""
    top = imported.split(".")[0]
    if _under(module, CORE):
        if top == "textual":
            return "the core never imports Textual"
        if top == "tau_tui" and not _under(imported, CORE):
            return "the core never imports the app, screens, widgets or CLI"
    if _under(module, GPUHEALTH) and top in ("tau_tui", "tau_agent", "textual"):
        return "the GPU health model imports neither tau_tui, the agent nor Textual"
    if _under(module, APIFIELDS) and top in PACKAGES and not _under(imported, APIFIELDS):
        return "apifields sits below every other core package"
    if _under(module, RUNCONFIG) and (_under(imported, CLUSTER) or _under(imported, OPERATIONS)):
        return "the run-config compiler imports no cluster access and no operations"
    if _under(module, CLUSTER) and (_under(imported, OPERATIONS) or _under(imported, SIM)
                                    or (top == "tau_tui" and not _under(imported, CORE))):
        return "cluster access imports no simulator, no operations and no app"
    if _under(module, SIM) and _under(imported, OPERATIONS):
        return "the simulator imports no operations"
    if _under(module, "tau_agent") and top in ("tau_tui", "textual"):
        return "the agent imports the GPU health model (tau_gpuhealth), never tau_tui or Textual"
    return None


def test_every_module_is_found():
    assert len([m for m in MODULES if _under(m, CORE)]) >= 40
    assert len([m for m in MODULES if _under(m, "tau_agent")]) >= 10
    assert len([m for m in MODULES if _under(m, GPUHEALTH)]) >= 10
    for package in (RUNCONFIG, CLUSTER, SIM, OPERATIONS, GPUHEALTH):
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
    for module in (CORE, RUNCONFIG, CLUSTER, SIM, OPERATIONS, GPUHEALTH):
        assert not IMPORTS[module], f"{module}/__init__.py imports {IMPORTS[module]}"


def _core_health_or_agent(module: str) -> bool:
    return _under(module, CORE) or _under(module, GPUHEALTH) or _under(module, "tau_agent")


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
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tau_tui", "tau_gpuhealth", "tau_agent"))
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
    modules = sorted(m for m in MODULES if _core_health_or_agent(m))
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
