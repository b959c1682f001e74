"""The app's own settings (not tau.yaml): theme, keymap overrides, refresh tick.

Read from ``$XDG_CONFIG_HOME/tau-tui/config.yaml`` (default ``~/.config``) or
``$TAU_TUI_CONFIG``, validated with pydantic.  A file that cannot be read or
does not validate never stops the app: :func:`load_settings` returns the
defaults plus a message naming the file, line and key to fix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

APP_DIR = "tau-tui"
CONFIG_ENV = "TAU_TUI_CONFIG"
DEFAULT_THEME = "tau-dark"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / APP_DIR


def default_config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else config_dir() / "config.yaml"


class AppSettings(BaseModel):
    """``config.yaml``.  ``keymap`` maps Binding ids (``queue.cancel``) to keys (``ctrl+x``)."""

    model_config = ConfigDict(extra="forbid")

    theme: str = DEFAULT_THEME
    keymap: dict[str, str] = Field(default_factory=dict)
    refresh_tick: float = Field(1.0, ge=0.1, le=60.0, description="seconds between table refreshes")
    team: str | None = Field(None, description="team used for profile applicability (else $TAU_TEAM)")
    lane: str | None = None
    request_timeout: float = Field(30.0, ge=0, le=3600, description="seconds an API request may wait for an answer (0: no limit)")
    connect_timeout: float = Field(5.0, ge=0, le=600, description="seconds to connect to the API server, TLS included (0: no limit)")
    exec_timeout: float = Field(60.0, ge=0, le=3600, description="seconds an exec credential plugin may run (0: no limit)")

    def timeouts(self):
        """The :class:`~tau_tui.core.cluster.kubeconfig.RequestTimeouts` these settings ask for."""
        from tau_tui.core.cluster.kubeconfig import RequestTimeouts

        return RequestTimeouts.from_read(self.request_timeout, self.connect_timeout, self.exec_timeout)
    multikueue_plan: str | None = Field(None, description="the MultiKueue plan file the wizard and checklist use")
    worker_contexts: dict[str, str] = Field(
        default_factory=dict,
        description="MultiKueueCluster name -> kubeconfig context, to read logs of runs placed on that worker")

    @field_validator("keymap")
    @classmethod
    def _keys_not_empty(cls, value: dict[str, str]) -> dict[str, str]:
        for binding_id, keys in value.items():
            if not keys.strip():
                raise ValueError(f"keymap entry {binding_id!r} has no key; write e.g. {binding_id}: ctrl+x")
        return value


@dataclass
class LoadedSettings:
    settings: AppSettings
    path: Path
    problems: list[str] = field(default_factory=list)


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(f"{key}:"):
            return number
    return None


def load_settings(path: Path | None = None) -> LoadedSettings:
    """Never raises for a bad file: defaults plus a message instead."""
    path = path or default_config_path()
    if not path.exists():
        return LoadedSettings(AppSettings(), path)
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = yaml.safe_load(text) if text.strip() else {}
    except (OSError, UnicodeDecodeError) as err:
        return LoadedSettings(AppSettings(), path, [f"{path}: cannot read ({err}); using defaults"])
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(err, "problem", None) or "invalid YAML"
        return LoadedSettings(AppSettings(), path, [f"{where}: {problem}; using defaults"])
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return LoadedSettings(AppSettings(), path, [f"{path}: the top level must be a mapping (theme:, keymap:, refresh_tick:); using defaults"])
    try:
        return LoadedSettings(AppSettings.model_validate(data), path)
    except ValidationError as err:
        problems = []
        for item in err.errors(include_url=False):
            key = ".".join(str(p) for p in item["loc"]) or "(top level)"
            line = _line_of(text, str(item["loc"][0])) if item["loc"] else None
            where = f"{path}:{line}" if line else str(path)
            message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
            problems.append(f"{where} {key}: {message}")
        return LoadedSettings(AppSettings(), path, problems + ["using default settings"])
