"""Read-only view of one object as YAML (k9s ``y``) or a description (``d``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


def to_yaml_text(obj: Mapping[str, Any]) -> str:
    return yaml.safe_dump(_plain(obj), sort_keys=False, default_flow_style=False, width=100)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class ObjectDialog(ModalScreen[None]):
    DEFAULT_CSS = """
    ObjectDialog { align: center middle; }
    ObjectDialog > Vertical { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    ObjectDialog #object-title { text-style: bold; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: str, yaml_syntax: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yaml_syntax = yaml_syntax

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), id="object-title")
            with VerticalScroll():
                if self.yaml_syntax:
                    yield Static(Syntax(self.body, "yaml", theme="monokai" if self.app.current_theme.dark else "default", word_wrap=False, background_color=self.app.current_theme.surface))
                else:
                    yield Static(Text(self.body))

    def action_close(self) -> None:
        self.dismiss(None)
