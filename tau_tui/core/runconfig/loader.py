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
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError
from tau_tui.core.runconfig.rules import check_rules, infer_engine
from tau_tui.core.runconfig.schema import TauConfig
from tau_tui.core.runconfig.yamlsource import SourceMap, format_path, load_mapping_file, load_mapping_text


def config_hash(config: TauConfig, engine: str) -> str:
    """SHA-256 of the validated config, defaults included, keys sorted: stable across formatting."""
    document = {"engine": engine, "config": config.model_dump(mode="json")}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load_config_text(text: str, file: str = "tau.yaml", base_dir: Path | None = None) -> LoadedConfig:
    raw, smap = load_mapping_text(text, file)
    return _validate(raw, smap, file, base_dir or Path.cwd())


def load_config(path: Path | str, label: str | None = None, *, rule_errors: list[Diagnostic] | None = None) -> LoadedConfig:
    """``rule_errors``: when given, rule errors of a config whose shape is valid are appended to it
    instead of raised, so a caller (``tau-tui validate``) can go on to check the profile too."""
    path = Path(path)
    name = label or str(path)
    raw, smap = load_mapping_file(path, name)
    return _validate(raw, smap, name, path.resolve().parent, rule_errors)


def _validate(raw: dict[str, Any], smap: SourceMap, file: str, base_dir: Path,
              rule_errors: list[Diagnostic] | None = None) -> LoadedConfig:
    data, origins, problems = canonicalise(raw, file, smap)
    try:
        config = TauConfig.model_validate(data)
    except ValidationError as err:
        shape = pydantic_diagnostics(err, file, smap, origins)
        raise DiagnosticError(problems + shape + _rules_beside_shape_errors(data, err, smap, file, base_dir, origins)) from None
    engine = infer_engine(config)
    loaded = LoadedConfig(config, engine, file, base_dir, smap, config_hash(config, engine), origins)
    problems += check_rules(loaded)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        if rule_errors is None:
            raise DiagnosticError(errors)
        rule_errors.extend(errors)
    loaded.warnings = [p for p in problems if p.severity != "error"]
    return loaded


def _rules_beside_shape_errors(data: dict[str, Any], err: ValidationError, smap: SourceMap, file: str,
                               base_dir: Path, origins: Any) -> list[Diagnostic]:
    """Rule errors of the sections whose shape is valid, so one run reports all it can.

    The sections with shape errors are left out (their defaults stand in) and any rule message
    about them is dropped: it would speak about values the user did not write."""
    broken = {str(e["loc"][0]) for e in err.errors() if e.get("loc")}
    partial = {key: value for key, value in data.items() if key not in broken}
    try:
        config = TauConfig.model_validate(partial)
    except ValidationError:
        return []  # the shape errors are all we can say
    engine = infer_engine(config)
    loaded = LoadedConfig(config, engine, file, base_dir, smap, config_hash(config, engine), origins)
    # A message names the key as written (a top-level `name:` for run.name): its section is the canonical one's.
    section_of = {format_path(written): canonical[0] for canonical, written in origins.items()}

    def section(path: str) -> str:
        return section_of.get(path) or path.split(".", 1)[0].split("[", 1)[0]

    return [p for p in check_rules(loaded) if p.severity == "error" and section(p.path) not in broken]
