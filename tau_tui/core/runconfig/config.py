"""Canonicalise `tau.yaml`: fold aliases, refuse reserved and workflow-only keys, remember where
each canonical key was written, and phrase pydantic's errors as diagnostics.

`LoadedConfig` (a valid config with what is needed to explain it) is defined here, below the
rules that read it; `tau_tui.core.runconfig.loader` runs the whole load.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_tui.core.runconfig.diagnostics import Diagnostic, shown
from tau_tui.core.runconfig.schema import DEPRECATED_GPU_CLASSES, ENGINE_ALIASES, TauConfig
from tau_tui.core.runconfig.yamlsource import KeyPath, SourceMap, format_path

# Keys that exist in the TauGrid schema but are not valid in a direct run config (taugrid.md §1.1/§1.2).
FIELD_STATUS: dict[KeyPath, tuple[str, str]] = {
    ("schema_version",): ("reserved", "schema_version belongs to SDK-generated managed workflow manifests, which tau-tui does not run"),
    ("workflow",): ("workflow-only", "workflow.* is read only from a managed workflow manifest"),
    ("run", "main_script"): ("workflow-only", "run.main_script is used only by workflow rendering"),
    ("run", "smoke_pairs"): ("workflow-only", "run.smoke_pairs is used only by workflow rendering"),
    ("runtime", "env_kv"): ("workflow-only", "Key Vault references need the workflow path; use runtime.env_secret with a Kubernetes Secret"),
}

# Top-level and run.* aliases, highest priority first for each canonical key.
ALIASES: dict[tuple[str, ...], list[tuple[str, ...]]] = {
    ("run", "name"): [("run", "name"), ("name",)],
    ("run", "engine"): [("run", "engine"), ("engine",)],
    ("run", "entrypoint"): [("run", "entrypoint"), ("run", "script"), ("entrypoint",), ("script",)],
    ("runtime", "image"): [("runtime", "image"), ("run", "image"), ("image",)],
    ("policy", "priority_tier"): [("policy", "priority_tier"), ("policy", "priority")],
    # Deprecated: the comparison set's old name.
    ("experiment", "name"): [("experiment", "name"), ("experiment", "title")],
}
# Images are documented as a priority order; the others must agree when given twice.
PRIORITY_ORDERED = {("runtime", "image")}
ENGINE_KEYS = {("run", "engine"), ("run", "workload_kind"), ("compute", "workload_kind")}


@dataclass
class LoadedConfig:
    """A valid config, with what the renderer and the UI need to explain it."""

    config: TauConfig
    engine: str
    file: str
    base_dir: Path
    source_map: SourceMap
    config_hash: str
    origins: dict[KeyPath, KeyPath] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)

    def diagnostic(self, path: KeyPath, message: str, hint: str = "", severity: str = "error") -> Diagnostic:
        return make_diagnostic(self.file, self.source_map, self.origins, path, message, hint, severity)


def make_diagnostic(
    file: str,
    source_map: SourceMap,
    origins: dict[KeyPath, KeyPath],
    path: KeyPath,
    message: str,
    hint: str = "",
    severity: str = "error",
) -> Diagnostic:
    origin = origins.get(path, path)
    return Diagnostic(
        file,
        message,
        path=format_path(origin),
        position=source_map.position_of(origin),
        hint=hint,
        severity=severity,
    )


def _take(data: dict[str, Any], path: KeyPath) -> tuple[bool, Any]:
    node: Any = data
    for part in path[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    if isinstance(node, dict) and path[-1] in node:
        return True, node.pop(path[-1])
    return False, None


def _put(data: dict[str, Any], path: KeyPath, value: Any) -> None:
    node: dict[Any, Any] = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def canonicalise(raw: dict[str, Any], file: str, smap: SourceMap) -> tuple[dict[str, Any], dict[KeyPath, KeyPath], list[Diagnostic]]:
    """Fold aliases into canonical keys. Returns data, canonical→written path map, problems."""
    data = json.loads(json.dumps(raw))  # deep copy of plain data
    origins: dict[KeyPath, KeyPath] = {}
    problems: list[Diagnostic] = []

    def diag(path: KeyPath, message: str, hint: str) -> None:
        problems.append(Diagnostic(file, message, path=format_path(path), position=smap.position_of(path), hint=hint))

    for path, (status, why) in FIELD_STATUS.items():
        present, _ = _take(data, path)
        if present:
            diag(path, f"is {status} and not allowed in a direct run config: {why}", "remove this key")

    # A section given as something other than a mapping would make alias folding meaningless.
    for section in ("run", "runtime", "compute", "policy", "experiment"):
        if section in data and not isinstance(data[section], dict):
            return data, origins, problems

    for canonical, sources in ALIASES.items():
        found: list[tuple[KeyPath, Any]] = []
        for source in sources:
            present, value = _take(data, source)
            if present:
                found.append((source, value))
        if not found:
            continue
        chosen_path, chosen = found[0]
        if canonical in ENGINE_KEYS and isinstance(chosen, str):
            chosen = ENGINE_ALIASES.get(chosen, chosen)
        if canonical not in PRIORITY_ORDERED:
            for other_path, other in found[1:]:
                if canonical in ENGINE_KEYS and isinstance(other, str):
                    other = ENGINE_ALIASES.get(other, other)
                if other != chosen:
                    diag(
                        other_path,
                        f"conflicts with {format_path(chosen_path)} ({shown(other)} vs {shown(chosen)})",
                        f"{format_path(other_path)} is an alias of {format_path(canonical)}; keep only one of them",
                    )
        _put(data, canonical, chosen)
        origins[canonical] = chosen_path
    for kind_path in (("run", "workload_kind"), ("compute", "workload_kind")):
        section = data.get(kind_path[0])
        if isinstance(section, dict) and isinstance(section.get(kind_path[1]), str):
            section[kind_path[1]] = ENGINE_ALIASES.get(section[kind_path[1]], section[kind_path[1]])
    gpu_class = data.get("policy", {}).get("gpu_class")
    if isinstance(gpu_class, str) and gpu_class in DEPRECATED_GPU_CLASSES:
        data["policy"]["gpu_class"] = DEPRECATED_GPU_CLASSES[gpu_class]
    return data, origins, problems


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: Any = TauConfig
    for part in loc:
        if isinstance(part, int):
            continue
        info = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if info is None:
            return None
        annotation = info.annotation
        inner = getattr(annotation, "__args__", None)
        candidates = [annotation, *(inner or ())]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            inner_lists = [a for c in candidates for a in getattr(c, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)]
            model = inner_lists[0] if inner_lists else None
        if model is None:
            return None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


TYPE_WORDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "float_type": "a number",
}


def pydantic_diagnostics(err: ValidationError, file: str, smap: SourceMap, origins: dict[KeyPath, KeyPath]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        # Strip pydantic's internal union/validator segments (e.g. 'function-after[...]').
        loc = tuple(p for p in loc if isinstance(p, int) or not str(p).startswith(("function-", "literal[")))
        kind = item["type"]
        given = item.get("input")
        if kind == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = _allowed_keys(parent) if parent else []
            close = difflib.get_close_matches(str(loc[-1])[:64], allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed keys here: {', '.join(allowed)}"
            out.append(make_diagnostic(file, smap, origins, loc, "unknown key", hint))
            continue
        if kind == "missing":
            out.append(make_diagnostic(file, smap, origins, loc, "is required", "add this key"))
            continue
        if kind in TYPE_WORDS:
            out.append(make_diagnostic(file, smap, origins, loc, f"must be {TYPE_WORDS[kind]} (got {shown(given)})", "fix the value's type; quote strings, leave numbers unquoted"))
            continue
        ctx = item.get("ctx") or {}
        if kind == "greater_than_equal":
            out.append(make_diagnostic(file, smap, origins, loc, f"must be >= {ctx.get('ge')} (got {shown(given)})", f"use a value of at least {ctx.get('ge')}"))
        elif kind == "less_than_equal":
            out.append(make_diagnostic(file, smap, origins, loc, f"must be <= {ctx.get('le')} (got {shown(given)})", f"use a value of at most {ctx.get('le')}"))
        elif kind == "literal_error":
            expected = ctx.get("expected", "")
            out.append(make_diagnostic(file, smap, origins, loc, f"must be one of {expected} (got {shown(given)})", "pick one of the listed values"))
        elif kind == "too_long":
            out.append(make_diagnostic(file, smap, origins, loc, f"has {ctx.get('actual_length')} entries; at most {ctx.get('max_length')} are allowed", "remove entries"))
        elif kind == "value_error":
            # Our validators' messages already show a valid example.
            out.append(make_diagnostic(file, smap, origins, loc, str(ctx.get("error", item["msg"]))))
        else:
            out.append(make_diagnostic(file, smap, origins, loc, f"{item['msg']} (got {shown(given)})", "correct the value"))
    return out
