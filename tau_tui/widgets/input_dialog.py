"""Ask for one line of text (a file path to save or open)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class InputDialog(ModalScreen[str | None]):
    DEFAULT_CSS = """
    InputDialog { align: center middle; }
    InputDialog > Vertical { width: 80%; max-width: 100; height: auto; border: thick $primary;
        background: $surface; padding: 0 1; }
    InputDialog Label { padding: 0 0 1 0; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, prompt: str, value: str = "") -> None:
        super().__init__()
        self.prompt = prompt
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.prompt)
            yield Input(value=self.value, id="input-dialog-value")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
