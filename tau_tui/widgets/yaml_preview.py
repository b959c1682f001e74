"""Rendered manifests as highlighted YAML (read-only)."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static


class YamlPreview(VerticalScroll):
    DEFAULT_CSS = """
    YamlPreview { height: 1fr; background: $surface; }
    """
    HELP = "The Job/RayJob manifests this tau.yaml renders to (client dry-run), refreshed as you type."

    def compose(self):
        yield Static(Text("…"), id="yaml-preview-body")

    def show_yaml(self, text: str, dark: bool = True) -> None:
        background = self.app.current_theme.surface or ("#000000" if dark else "#ffffff")
        self.query_one("#yaml-preview-body", Static).update(
            Syntax(text, "yaml", theme="monokai" if dark else "default", word_wrap=False, background_color=background,
                   line_numbers=False))

    def show_text(self, text: Text) -> None:
        self.query_one("#yaml-preview-body", Static).update(text)
