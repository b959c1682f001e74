"""Rewrite imports of tau_tui's old core layout to the layout by data flow (issue #9).

Usage (from the repository root)::

    python scripts/dev/rewrite_imports.py FILE_OR_DIR ...        # rewrite in place, list changed files
    python scripts/dev/rewrite_imports.py --check FILE_OR_DIR ...  # change nothing; exit 1 if a file would change

Directories are walked for ``*.py`` files (``.venv``, ``.git`` and ``__pycache__`` skipped).  For each file:

* ``from OLD import a, b as c`` (one line or parenthesised over several, at module level, in a
  function, under ``if TYPE_CHECKING:`` or in ``try:``) is rewritten to the new module; when the
  names moved to different modules of a split module, the statement is split into one
  ``from NEW import ...`` per module, in the order the names first appear;
* ``from PACKAGE import old_module`` becomes ``from NEW_PARENT import new_module as old_module``
  when the module moved as a whole;
* relative forms (``from .config import x``, ``from ..core.render import y``) are resolved
  against the file's own package; they stay relative when the new module is still under the same
  anchor package and the file itself does not move, and become absolute otherwise;
* dotted references anywhere else in the file (``import tau_tui.core.drain``, strings such as
  ``"tau_tui.core.positions.time"`` for ``monkeypatch``) are rewritten too.

Statements that import nothing that moved are left byte for byte; a file containing the line
``# rewrite_imports: skip file`` is not touched.  Running the script twice
changes nothing the second time.  Anything it cannot rewrite safely (``import`` of a module
that was split, a name missing from the tables) is printed as ``FILE:LINE: ...`` and makes
the exit status 2; fix those few by hand.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

# --------------------------------------------------------------------------------------------
# The tables
# --------------------------------------------------------------------------------------------

#: Modules that moved whole (every name they define went to the same new module, except the
#: names listed for them in SYMBOL_MOVES).
MODULE_MOVES: dict[str, str] = {
    # The run-config compiler: file -> canonical config -> rules -> profiles -> resolution -> manifests.
    "tau_tui.core.yamlsource": "tau_tui.core.runconfig.yamlsource",
    "tau_tui.core.diagnostics": "tau_tui.core.runconfig.diagnostics",
    "tau_tui.core.config": "tau_tui.core.runconfig.config",
    "tau_tui.core.schema": "tau_tui.core.runconfig.schema",
    "tau_tui.core.rules": "tau_tui.core.runconfig.rules",
    "tau_tui.core.profiles": "tau_tui.core.runconfig.profiles",
    "tau_tui.core.resolve": "tau_tui.core.runconfig.resolve",
    "tau_tui.core.render": "tau_tui.core.runconfig.manifests",
    "tau_tui.core.workload": "tau_tui.core.runconfig.pipeline",
    "tau_tui.compose_document": "tau_tui.core.runconfig.document",
    # The app without an import circle: mutations, settings and cell text left the package root.
    "tau_tui.app_actions": "tau_tui.mutations.cluster_changes",
    "tau_tui.app_drain": "tau_tui.mutations.drain",
    "tau_tui.app_config": "tau_tui.settings.settings_file",
    "tau_tui.formatting": "tau_tui.widgets.cell_text",
    # Cluster access owns its read models; the raw-object -> view converter says what it does.
    "tau_tui.core.positions": "tau_tui.core.cluster.positions",
    "tau_tui.core.logspool": "tau_tui.core.cluster.logspool",
    "tau_tui.core.cluster.views": "tau_tui.core.cluster.convert",
    # Operations built on the cluster access layer.
    "tau_tui.core.drain": "tau_tui.core.operations.drain",
    "tau_tui.core.multikueue": "tau_tui.core.operations.multikueue",
    "tau_tui.core.runstatus": "tau_tui.core.operations.runstatus",
    "tau_tui.core.audit": "tau_tui.core.operations.audit",
}

_CLUSTER = "tau_tui.core.cluster"
_HEALTH = "tau_gpuhealth"


def _names(module: str, names: str) -> dict[str, str]:
    return {name: module for name in names.split()}


#: Where each name of a split module went (the old ``cluster/api.py`` and ``gpu_health.py``).
_API_SYMBOLS: dict[str, str] = {
    **_names(
        f"{_CLUSTER}.names",
        "KUEUE_GROUP KUEUE_VERSION TAU_GROUP TAU_VERSION RAY_GROUP RAY_VERSION MULTIKUEUE_CONTROLLER_NAME"
        " SUBMISSION_ID_LABEL QUEUE_NAME_LABEL TAU_LABEL_PREFIX GPU_RESOURCE_NAMES MIG_RESOURCE_PREFIX"
        " GPU_NODE_CONDITIONS is_gpu_resource",
    ),
    **_names(f"{_CLUSTER}.kinds", "ResourceType ResourceKind GPU_HEALTH_TYPE MULTIKUEUE_KINDS"),
    **_names("tau_tui.core.apifields", "Condition"),
    **_names(
        f"{_CLUSTER}.view_types",
        "ObjectView ResourceQuantity FlavorQuota FlavorUsage PodSetAssignment AdmissionCheckState PodSetView"
        " WorkloadStatusWord WorkloadView ClusterQueueView LocalQueueView ResourceFlavorView CohortView"
        " WorkloadPriorityClassView AdmissionCheckView MultiKueueConfigView MultiKueueClusterView JobView"
        " RayJobView ContainerStatusView PodView EventView GpuResourceUsage NodeView GpuHealthView"
        " TauClusterView TauWorkspaceView NamespaceView VIEW_TYPES",
    ),
    **_names(
        f"{_CLUSTER}.changes",
        "ChangeType ChangeEvent ChangeBatch ConnectionStatus ConnectionState ViewStatus ViewState"
        " ChangeCallback StateCallback Subscription",
    ),
    **_names(
        f"{_CLUSTER}.positions", "PositionSource PendingPosition PositionReport PositionSample PositionHistory"
    ),
    **_names(f"{_CLUSTER}.logspool", "LogRequest LogChunkRequest"),
    **_names(f"{_CLUSTER}.mutations", "StopPolicy MutationResult DrainResult"),
    **_names(f"{_CLUSTER}.errors", "ClusterError"),
    **_names(
        f"{_CLUSTER}.interfaces",
        "ClusterBackend Lifecycle ContextScope Lister Getter Watcher QueuePositions LogSource Mutator"
        " NodeOps MultiKueueAdmin",
    ),
}

_GPU_HEALTH_SYMBOLS: dict[str, str] = {
    **_names(
        f"{_HEALTH}.names",
        "API_GROUP API_VERSION HEALTH_KIND HEALTH_PLURAL CONDITION_UNHEALTHY CONDITION_DEGRADED"
        " TAINT_UNHEALTHY_KEY ANNOTATION_CORDONED_BY ANNOTATION_CORDON_REASON ANNOTATION_CORDON_TIMESTAMP"
        " LABEL_MANAGED LABEL_EXPECTED_GPU_COUNT AGENT_COMPONENT STALE_AFTER_PERIODS MESSAGE_LIMIT",
    ),
    **_names(f"{_HEALTH}.verdicts", "Verdict worst Action"),
    **_names(
        f"{_HEALTH}.xid",
        "XidSeverity XidEntry XidUnknownPolicy XidCatalog CatalogError load_xid_catalog",
    ),
    **_names(f"{_HEALTH}.policy", "HealthPolicy"),
    **_names(
        f"{_HEALTH}.samples",
        "CLOCK_EVENT_BITS HW_SLOWDOWN_BITS RECOVERY_ACTIONS HEALTH_SIGNALS clock_event_names GpuSample"
        " NodeSample XidObservation",
    ),
    **_names(f"{_HEALTH}.report", "HealthReason GpuTelemetry GpuHealth LatchRecord NodeHealth"),
    **_names(f"{_HEALTH}.model", "Recovery HealthModel"),
    **_names(f"{_HEALTH}.conditions", "Transition transitions ConditionState node_conditions"),
    **_names(f"{_HEALTH}.nodeview", "NodeHealthView view_from_node"),
}

#: Names that left their module: old module -> {name: new module}.  A module listed here and not
#: in MODULE_MOVES was split (or, for a package, stopped re-exporting): each of its names must be
#: listed, except its submodules.
SYMBOL_MOVES: dict[str, dict[str, str]] = {
    "tau_tui.core.cluster.api": _API_SYMBOLS,
    # The package used to re-export everything of api.py; it now holds only its submodules.
    _CLUSTER: _API_SYMBOLS,
    "tau_tui.core.gpu_health": _GPU_HEALTH_SYMBOLS,
    # config.py <-> rules.py circle: loading (which runs the rules) left the canonicaliser.
    "tau_tui.core.config": _names("tau_tui.core.runconfig.loader", "load_config load_config_text _validate config_hash"),
    # Conditions and API times are read by both the run config (TauCluster status) and the views.
    "tau_tui.core.cluster.views": _names("tau_tui.core.apifields", "parse_time _parse_time_text parse_conditions"),
    "tau_tui.app_actions": _names("tau_tui.screens.describe", "describe_object"),
    "tau_tui.app_config": _names("tau_tui.settings.theme_files", "load_theme_files theme_dirs ThemeFile"),
}

#: A file containing this line is left alone (the rewriter's own tests spell old names on purpose).
SKIP_MARKER = "# rewrite_imports: skip file"

#: Packages whose submodules may be imported by name (``from tau_tui.core.cluster import real``).
_KEPT_PACKAGES = {"tau_tui", "tau_tui.core", _CLUSTER, "tau_tui.core.sim"}

# --------------------------------------------------------------------------------------------
# The rewriter
# --------------------------------------------------------------------------------------------


class Unresolved(Exception):
    pass


def _target(module: str, name: str) -> str | None:
    """New module for ``name`` imported from ``module``; None when nothing moved."""
    moved = SYMBOL_MOVES.get(module, {})
    if name in moved:
        return moved[name]
    if module in MODULE_MOVES:
        return MODULE_MOVES[module]
    if module in SYMBOL_MOVES:  # split: every public name must be listed
        if module in _KEPT_PACKAGES:
            return None  # a submodule of the package, or a name it still defines
        if name == "*":
            raise Unresolved(f"'from {module} import *': list the names instead")
        raise Unresolved(f"{module}.{name} is not in the tables of scripts/dev/rewrite_imports.py")
    return None


def _module_of_file(path: Path, root: Path) -> tuple[str, bool]:
    """Dotted module name of ``path`` and whether it is a package ``__init__``."""
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:  # outside the repository: only absolute imports can be rewritten
        return "", False
    parts = list(rel.with_suffix("").parts)
    if parts and parts[0] == "agent":  # the agent package lives under agent/
        parts = parts[1:]
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _resolve_relative(level: int, module: str | None, file_module: str, is_package: bool) -> str:
    base = file_module.split(".") if file_module else []
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _file_moves(file_module: str) -> bool:
    return file_module in MODULE_MOVES or file_module in SYMBOL_MOVES and file_module not in _KEPT_PACKAGES


def _spell(new_module: str, level: int, anchor: str, file_moves: bool) -> tuple[str, int]:
    """(module text, level) for a ``from`` statement: relative when it still fits."""
    if level and not file_moves and (new_module == anchor or new_module.startswith(anchor + ".")):
        rest = new_module[len(anchor) + 1 :] if new_module != anchor else ""
        return rest, level
    return new_module, 0


def _format_from(module: str, level: int, names: list[tuple[str, str | None]], indent: str) -> str:
    """One line when it fits in 120 columns, else parenthesised with one name a line."""
    items = [f"{n} as {a}" if a else n for n, a in names]
    head = f"from {'.' * level}{module} import "
    one_line = head + ", ".join(items)
    if len(indent) + len(one_line) <= 120:
        return one_line
    body = "".join(f"{indent}    {item},\n" for item in items)
    return f"{head}(\n{body}{indent})"


def _rewrite_from(node: ast.ImportFrom, file_module: str, is_package: bool, indent: str) -> list[str] | None:
    level = node.level or 0
    module = node.module
    absolute = _resolve_relative(level, module, file_module, is_package) if level else module or ""
    anchor = _resolve_relative(level, None, file_module, is_package) if level else ""
    file_moves = _file_moves(file_module)
    groups: dict[tuple[str, int], list[tuple[str, str | None]]] = {}
    changed = False
    for alias in node.names:
        new = _target(absolute, alias.name)
        if new is None and f"{absolute}.{alias.name}" in MODULE_MOVES:
            # ``from tau_tui.core import positions``: the module itself moved.
            new_full = MODULE_MOVES[f"{absolute}.{alias.name}"]
            parent, _, leaf = new_full.rpartition(".")
            key = _spell(parent, level, anchor, file_moves)
            as_name = alias.asname or (alias.name if leaf != alias.name else None)
            groups.setdefault(key, []).append((leaf, as_name))
            changed = True
            continue
        if new is None and f"{absolute}.{alias.name}" in SYMBOL_MOVES and f"{absolute}.{alias.name}" not in _KEPT_PACKAGES:
            raise Unresolved(f"'from {absolute} import {alias.name}' imports a module that was split; import its names")
        if new is None:
            key = (module or "", level) if level else (absolute, 0)
            groups.setdefault(key, []).append((alias.name, alias.asname))
            continue
        changed = True
        groups.setdefault(_spell(new, level, anchor, file_moves), []).append((alias.name, alias.asname))
    if level and file_moves and not changed:
        # The file itself moves: its relative imports must become absolute to keep meaning.
        return [_format_from(absolute, 0, [(a.name, a.asname) for a in node.names], indent)]
    if not changed:
        return None
    # Relative imports first, then absolute ones, each sorted by module (as isort orders them).
    ordered = sorted(groups.items(), key=lambda item: (item[0][1] == 0, "." * item[0][1] + item[0][0]))
    return [_format_from(mod, lvl, names, indent) for (mod, lvl), names in ordered]


def _rewrite_import(node: ast.Import) -> list[str] | None:
    parts = []
    changed = False
    for alias in node.names:
        name = alias.name
        if name in MODULE_MOVES:
            name = MODULE_MOVES[name]
            changed = True
        elif name in SYMBOL_MOVES and name not in _KEPT_PACKAGES:
            raise Unresolved(f"'import {name}': that module was split; import the names you use instead")
        parts.append(f"{name} as {alias.asname}" if alias.asname else name)
    return [f"import {p}" for p in parts] if changed else None


def _dotted_pattern() -> re.Pattern[str]:
    olds = sorted(set(MODULE_MOVES) | set(SYMBOL_MOVES), key=len, reverse=True)
    return re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o in olds) + r")(?:\.(\w+))?(?!\w)")


_DOTTED = _dotted_pattern()


def _rewrite_dotted(text: str) -> str:
    def repl(match: re.Match[str]) -> str:
        old, attr = match.group(1), match.group(2)
        if attr is not None:
            if f"{old}.{attr}" in MODULE_MOVES or f"{old}.{attr}" in SYMBOL_MOVES:
                return match.group(0)  # a longer old name; the alternation tried it first
            try:
                new = _target(old, attr)
            except Unresolved:
                new = None
            if new is not None:
                return f"{new}.{attr}"
        if old in MODULE_MOVES:
            return MODULE_MOVES[old] + (f".{attr}" if attr is not None else "")
        return match.group(0)

    return _DOTTED.sub(repl, text)


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def rewrite_source(text: str, file_module: str, is_package: bool = False, where: str = "<text>") -> tuple[str, list[str]]:
    """The rewritten text and the problems that need a hand (``where:line: message``)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    problems: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        # ast columns count UTF-8 bytes; the text is indexed by characters.
        start_col = _char_col(lines[node.lineno - 1], node.col_offset)
        start = offsets[node.lineno - 1] + start_col
        end = offsets[node.end_lineno - 1] + _char_col(lines[node.end_lineno - 1], node.end_col_offset)
        line_head = lines[node.lineno - 1][:start_col]
        indent = line_head if not line_head.strip() else " " * (len(line_head) - len(line_head.lstrip()))
        try:
            if isinstance(node, ast.ImportFrom):
                new = _rewrite_from(node, file_module, is_package, indent)
            else:
                new = _rewrite_import(node)
        except Unresolved as exc:
            problems.append(f"{where}:{node.lineno}: {exc}")
            continue
        if new is None:
            continue
        joiner = "\n" + indent if not line_head.strip() else "; "
        edits.append((start, end, joiner.join(new)))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    # Everything outside import statements: attribute paths and strings naming old modules.
    text = _rewrite_dotted(text)
    return text, problems


def _files(paths: list[str]) -> list[Path]:
    skip = {".venv", ".git", "__pycache__", "node_modules"}
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out += sorted(p for p in path.rglob("*.py") if not skip & set(p.parts))
        elif path.suffix == ".py":
            out.append(path)
    # Never rewrite the tables themselves, nor files that hold old names on purpose.
    return [
        p for p in out if p.resolve() != Path(__file__).resolve() and SKIP_MARKER not in p.read_text("utf-8")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="files or directories to rewrite")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    parser.add_argument("--root", default=".", help="repository root (module names are taken relative to it)")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    changed, problems = [], []
    for path in _files(args.paths):
        module, is_package = _module_of_file(path, root)
        text = path.read_text("utf-8")
        new, found = rewrite_source(text, module, is_package, str(path))
        problems += found
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, "utf-8")
    for path in changed:
        print(("would rewrite " if args.check else "rewrote ") + str(path))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 2
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
