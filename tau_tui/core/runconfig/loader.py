"""Load `tau.yaml`: parse with positions, fold aliases, validate shape and rules, hash.

The one entry point is `load_config` / `load_config_text`. Everything it rejects comes back as
a `DiagnosticError` holding one `Diagnostic` per problem; nothing here raises a traceback at
the user.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tau_tui.core.runconfig.config import LoadedConfig, canonicalise, pydantic_diagnostics
from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.rules import check_rules, infer_engine
from tau_tui.core.runconfig.schema import TauConfig
from tau_tui.core.runconfig.yamlsource import SourceMap, load_mapping_file, load_mapping_text


def config_hash(config: TauConfig, engine: str) -> str:
    """SHA-256 of the validated config, defaults included, keys sorted: stable across formatting."""
    document = {"engine": engine, "config": config.model_dump(mode="json")}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load_config_text(text: str, file: str = "tau.yaml", base_dir: Path | None = None) -> LoadedConfig:
    raw, smap = load_mapping_text(text, file)
    return _validate(raw, smap, file, base_dir or Path.cwd())


def load_config(path: Path | str, label: str | None = None) -> LoadedConfig:
    path = Path(path)
    name = label or str(path)
    raw, smap = load_mapping_file(path, name)
    return _validate(raw, smap, name, path.resolve().parent)


def _validate(raw: dict[str, Any], smap: SourceMap, file: str, base_dir: Path) -> LoadedConfig:
    data, origins, problems = canonicalise(raw, file, smap)
    try:
        config = TauConfig.model_validate(data)
    except ValidationError as err:
        raise DiagnosticError(problems + pydantic_diagnostics(err, file, smap, origins)) from None
    engine = infer_engine(config)
    loaded = LoadedConfig(config, engine, file, base_dir, smap, config_hash(config, engine), origins)
    problems += check_rules(loaded)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise DiagnosticError(errors)
    loaded.warnings = [p for p in problems if p.severity != "error"]
    return loaded
