"""`tau-tui explain-config FILE`: every effective value of a run config and where it came from.

Sources: `file` (with the line where it was written, or the alias that wrote it), `profile NAME` (the
selected workload profile decides it), `workspace NAME` (a TauWorkspace default), a flag (`-n`,
`--team`, `--lane`) or `$TAU_TEAM`, and `default` (the schema's).  Values the resolution computes
(namespace, queue, priorities, GPU counts, output, TTL) are shown as resolved, not as written.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tau_tui.core.runconfig.client_only import CLIENT_ONLY_KEYS
from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.resolve import PRIORITY_TIERS, Resolution
from tau_tui.core.runconfig.schema import TauConfig
from tau_tui.core.runconfig.yamlsource import KeyPath, format_path


@dataclass(frozen=True)
class ExplainedValue:
    key: str
    value: Any
    source: str
    note: str = ""


def leaf_paths(model: type[BaseModel] = TauConfig, prefix: KeyPath = ()) -> list[KeyPath]:
    """Every key of the models in declaration order; nested sections walked, lists and mappings one key each."""
    out: list[KeyPath] = []
    for name, info in model.model_fields.items():
        nested = [a for a in (info.annotation, *typing.get_args(info.annotation))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested and typing.get_origin(info.annotation) not in (list, dict):
            out += leaf_paths(nested[0], prefix + (name,))
        else:
            out.append(prefix + (name,))
    return out


def _lookup(config: TauConfig, path: KeyPath) -> tuple[bool, Any]:
    """(written in the file, value): a key counts as written when every model on its way says so."""
    node: Any = config
    written = True
    for part in path:
        if node is None:
            return False, None
        written = written and part in node.model_fields_set
        node = getattr(node, str(part))
    return written, node.model_dump(mode="json") if isinstance(node, BaseModel) else _plain(node)


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def _file_source(loaded: LoadedConfig, path: KeyPath) -> str:
    written = loaded.origins.get(path, path)
    position = loaded.source_map.position_of(written)
    where = f"file {loaded.file}" + (f":{position.line}" if position else "")
    return where + (f" (as {format_path(written)})" if written != path else "")


def _resolved(loaded: LoadedConfig, r: Resolution) -> dict[str, tuple[Any, str]]:
    """Values the resolution decides, with the source when it is not the file."""
    profile = f"profile {r.profile.name}" if r.profile else ""
    team_source = "--team" if r.team and r.team != loaded.config.policy.team and r.team != os.environ.get("TAU_TEAM") else "$TAU_TEAM"
    out: dict[str, tuple[Any, str]] = {
        "policy.namespace": (r.namespace, r.provenance.get("policy.namespace", "")),
        "policy.team": (r.team, team_source if r.team else ""),
        "policy.lane": (r.lane, "--lane" if r.lane else ""),
        "policy.queue": (r.queue, r.provenance.get("policy.queue", "")),
        "policy.workload_priority_class": (r.workload_priority_class, profile or "policy.priority_tier"),
        "policy.pod_priority_class": (r.pod_priority_class, profile),
        "policy.topology": (r.placement, profile),
        "policy.workspace": (r.workspace, f"workspace {r.workspace}" if r.workspace else ""),
        "storage.output": (r.output, r.provenance.get("storage.output", "")),
        "run.ttl_seconds_after_finished": (r.ttl_seconds_after_finished, r.provenance.get("run.ttl_seconds_after_finished", "")),
    }
    if r.profile is None:
        tiers = {cls: tier for tier, cls in PRIORITY_TIERS.items()}
        out["policy.priority_tier"] = (tiers.get(r.workload_priority_class or ""), r.provenance.get("policy.priority_tier", ""))
    if r.profile is not None:
        out["policy.profile"] = (r.profile.name, "implicit: the unique ready profile for this namespace, team and lane")
        out["policy.mode"] = (r.profile.mode, profile)
    if loaded.engine == "job":
        out["compute.gpus"] = (r.gpus, profile or r.provenance.get("compute.gpus", ""))
        out["execution.nodes"] = (r.nodes, profile)
    else:
        out["compute.workers"] = (r.workers, profile)
        out["compute.gpus_per_worker"] = (r.gpus_per_worker, profile)
    return out


def explain_config(loaded: LoadedConfig, resolution: Resolution | None = None) -> list[ExplainedValue]:
    """One row per schema key, in schema order, plus the engine."""
    c = loaded.config
    resolved = _resolved(loaded, resolution) if resolution is not None else {}
    engine_written = any(p in loaded.origins or _lookup(c, p)[0] for p in (("run", "engine"), ("run", "workload_kind"), ("compute", "workload_kind")))
    rows = [ExplainedValue("engine", loaded.engine, "file" if engine_written else "inferred (taugrid.md §1.3: workers, gpus_per_worker, pip)")]
    for path in leaf_paths():
        key = format_path(path)
        written, value = _lookup(c, path)
        if path == ("experiment", "title"):
            continue  # folded into experiment.name when read
        if key in resolved:
            effective, source = resolved[key]
            if written:
                rows.append(ExplainedValue(key, effective if effective is not None else value, _file_source(loaded, path)))
                continue
            if source:
                rows.append(ExplainedValue(key, effective if effective is not None else value, source))
                continue
            value = effective if effective is not None else value
        note = f"client-only: {CLIENT_ONLY_KEYS[key]}" if key in CLIENT_ONLY_KEYS else ""
        rows.append(ExplainedValue(key, value, _file_source(loaded, path) if written else "default", note))
    return rows


def explain_document(rows: list[ExplainedValue]) -> dict[str, Any]:
    return {"values": [{"key": r.key, "value": r.value, "source": r.source, **({"note": r.note} if r.note else {})} for r in rows]}
