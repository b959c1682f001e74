"""`tau-tui schema`: the JSON Schema (draft 2020-12) of `tau.yaml`, made from the pydantic models the
loader validates with, so the two cannot disagree.  As TauGrid's `tau run schema -o json`, every
property carries `x-tau-status`: `supported`, or `client-only` (`client_only.py`, with the reason);
the aliases the loader folds (`name`, `image`, `script`, `policy.priority`, `experiment.title`) are
properties too, marked `x-tau-alias-of`; the keys of other config shapes that the loader refuses are
listed under `x-tau-refused` (and are not properties: additionalProperties is false everywhere)."""

from __future__ import annotations

import copy
from typing import Any

from tau_tui.core.runconfig.client_only import CLIENT_ONLY_KEYS
from tau_tui.core.runconfig.config import ALIASES, FIELD_STATUS
from tau_tui.core.runconfig.schema import ENGINE_ALIASES, TauConfig
from tau_tui.core.runconfig.yamlsource import format_path

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "urn:tau-tui:schema:tau-run-config:v1"
SECTION_DEFS = {name: info.annotation.__name__ for name, info in TauConfig.model_fields.items()
                if isinstance(info.annotation, type)}


def config_json_schema() -> dict[str, Any]:
    schema = copy.deepcopy(TauConfig.model_json_schema(mode="validation"))
    defs: dict[str, Any] = schema.get("$defs", {})
    for section, def_name in SECTION_DEFS.items():
        for key, prop in defs[def_name]["properties"].items():
            dotted = f"{section}.{key}"
            prop["x-tau-status"] = "client-only" if dotted in CLIENT_ONLY_KEYS else "supported"
            if dotted in CLIENT_ONLY_KEYS:
                prop["x-tau-client-only"] = CLIENT_ONLY_KEYS[dotted]
    for section in schema["properties"].values():
        section["x-tau-status"] = "supported"
    _accept_engine_aliases(schema)
    for canonical, sources in ALIASES.items():
        target = defs[SECTION_DEFS[canonical[0]]]["properties"][canonical[1]]
        for alias in sources[1:]:
            shape = {k: v for k, v in target.items() if k not in ("title", "default", "x-tau-status")}
            shape.update({"x-tau-status": "supported", "x-tau-alias-of": format_path(canonical)})
            if alias == ("experiment", "title"):
                shape["deprecated"] = True
            holder = schema if len(alias) == 1 else defs[SECTION_DEFS[alias[0]]]
            holder["properties"][alias[-1]] = shape
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "tau.yaml (direct run config)",
        "description": "A TauGrid direct run config as tau-tui validates it: unknown keys are errors.",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
        "x-tau-refused": {format_path(path): f"{status}: {why}" for path, (status, why) in FIELD_STATUS.items()},
    }


def _accept_engine_aliases(node: Any) -> None:
    """`engine: ray` (and ray-train, ray_train) is folded to rayjob by the loader: the schema takes it too."""
    if isinstance(node, dict):
        if node.get("enum") == ["job", "rayjob"]:
            node["enum"] = list(ENGINE_ALIASES)
        for value in node.values():
            _accept_engine_aliases(value)
    elif isinstance(node, list):
        for value in node:
            _accept_engine_aliases(value)
