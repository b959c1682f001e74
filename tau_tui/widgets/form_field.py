"""One compose-form field: label, input, and its validation message right under it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Static

from tau_tui.core.runconfig.form_text import EntryError, field_text, parse_field_text, parse_key_values
from tau_tui.widgets.status_text import style_of

__all__ = ["EntryError", "FormField", "parse_key_values", "placeholder_hint"]


def placeholder_hint(example: str) -> str:
    """What an empty field shows: never a bare value that could pass for one (issue #11: a cleared
    image field read ``python:3.12-slim``).  Examples get "e.g. ", choices "one of ", notes stay."""
    if not example or example.startswith("("):
        return example
    if "|" in example:
        return f"one of {example}"
    return f"e.g. {example}"


class FormField(Vertical):
    """``path`` is the canonical tau.yaml key (``compute.gpus_per_worker``)."""

    DEFAULT_CSS = """
    FormField { height: auto; }
    FormField > Horizontal { height: 1; }
    FormField Label.field-label { width: 18; color: $text-muted; }
    FormField Input { border: none; height: 1; padding: 0 1; width: 1fr; background: $boost; }
    FormField Input:focus { border: none; background: $primary 30%; }
    FormField Input > .input--placeholder { color: $text-disabled; text-style: italic; }
    FormField .field-error { display: none; padding: 0 0 0 18; height: auto; }
    FormField.-error .field-error { display: block; }
    """

    def __init__(self, path: str, label: str, kind: str = "text", placeholder: str = "", help_text: str = "") -> None:
        super().__init__(id="field-" + path.replace(".", "-").replace("_", "-"))
        self.path = path
        self.label_text = label
        self.kind = kind  # text | int | list | map
        self.placeholder = placeholder_hint(placeholder)
        # Textual's help panel reads HELP from the focused widget itself, so each field carries its own text.
        self.HELP = help_text or f"tau.yaml key {path}"  # type: ignore[misc]

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self.label_text, classes="field-label")
            yield Input(placeholder=self.placeholder, id="input-" + self.path.replace(".", "-").replace("_", "-"))
        yield Static("", classes="field-error")

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    def show_value(self, value) -> None:
        text = field_text(value)
        if self.input.value != text:
            with self.input.prevent(Input.Changed):
                self.input.value = text

    def parsed_value(self):
        """The value the field's text stands for (:class:`EntryError` when it stands for none)."""
        return parse_field_text(self.kind, self.input.value)

    def set_messages(self, messages: list[tuple[str, str]]) -> None:
        """``(severity, text)`` pairs; empty clears."""
        error = self.query_one(".field-error", Static)
        if not messages:
            self.remove_class("-error")
            error.update("")
            return
        text = Text()
        for i, (severity, message) in enumerate(messages):
            if i:
                text.append("\n")
            symbol, word = ("✗", "failed") if severity == "error" else ("⚠", "warning")
            text.append(f"{symbol} {message}", style=style_of(word))
        error.update(text)
        self.add_class("-error")
