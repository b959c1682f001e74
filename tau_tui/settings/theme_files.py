"""Theme files: YAML files holding :class:`textual.theme.Theme` fields.

The bundled ones ship inside the package (``tau_tui/themes/``, package data, so a
wheel install has them; the repo-root ``themes/`` is a link to it), then
``$XDG_CONFIG_HOME/tau-tui/themes`` is read (user themes; same name overrides).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau_tui.settings.settings_file import config_dir

#: Bundled themes: package data (repo-root themes/ links here).
BUNDLED_THEMES_DIR = Path(__file__).resolve().parent.parent / "themes"

THEME_FIELDS = (
    "name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
    "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables",
)


def theme_dirs() -> list[Path]:
    return [BUNDLED_THEMES_DIR, config_dir() / "themes"]


@dataclass
class ThemeFile:
    name: str
    path: Path
    fields: dict[str, Any]


def load_theme_files(dirs: list[Path] | None = None) -> tuple[list[ThemeFile], list[str]]:
    """Every ``*.yaml`` theme in the theme directories, and a message per bad file."""
    themes: dict[str, ThemeFile] = {}
    problems: list[str] = []
    for directory in dirs if dirs is not None else theme_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.yaml")):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as err:
                problems.append(f"theme {path}: cannot load ({err.__class__.__name__}); skipped")
                continue
            if not isinstance(data, dict) or not data.get("name") or not data.get("primary"):
                problems.append(f"theme {path}: needs at least name: and primary:; skipped")
                continue
            unknown = sorted(set(data) - set(THEME_FIELDS))
            if unknown:
                problems.append(f"theme {path}: unknown key(s) {', '.join(unknown)}; skipped")
                continue
            themes[str(data["name"])] = ThemeFile(str(data["name"]), path, data)
    return list(themes.values()), problems
