"""Bundled themes live inside the package (a wheel install has them); the
repo-root themes/ is the same directory."""

from __future__ import annotations

from pathlib import Path

import tau_tui
from tau_tui.settings.theme_files import BUNDLED_THEMES_DIR, load_theme_files


def test_bundled_themes_ship_inside_the_package():
    package = Path(tau_tui.__file__).resolve().parent
    assert BUNDLED_THEMES_DIR.parent == package
    names = {f.name for f in load_theme_files()[0] if f.path.parent == BUNDLED_THEMES_DIR}
    assert {"tau-dark", "tau-light", "tau-high-contrast"} <= names
    repo_root_themes = package.parent / "themes"
    if repo_root_themes.exists():  # source checkout: the root link resolves to the package's themes
        assert repo_root_themes.resolve() == BUNDLED_THEMES_DIR
