"""Confirmation for a mutation: what will happen (server dry-run preview) and yes/no."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmDialog(ModalScreen[bool]):
    """Returns True only on an explicit yes (``y`` or the button)."""

    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical { width: 80%; max-width: 100; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1; }
    ConfirmDialog #confirm-title { text-style: bold; width: 100%; padding: 0 0 1 0; }
    ConfirmDialog VerticalScroll { height: auto; max-height: 16; }
    ConfirmDialog #confirm-buttons { height: auto; align-horizontal: right; padding: 1 0 0 0; }
    ConfirmDialog Button { margin: 0 1; min-width: 12; }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, preview: str | Text, verb: str = "Confirm", danger: bool = True,
                 can_confirm: bool = True, decline: str = "Back", confirm_key: str = "y") -> None:
        """``can_confirm=False``: the preview says why the change is refused; only "close" is offered.
        ``decline`` names the way out; it must not repeat the verb ("Cancel" a run → "Keep").
        ``confirm_key``: the yes key; a second confirmation takes another one than the first's ``y``, so
        that a doubled ``y`` never answers both."""
        super().__init__()
        self.confirm_key = confirm_key
        self.decline = decline
        self.can_confirm = can_confirm
        self.title_text = title
        self.preview = preview if isinstance(preview, Text) else Text(preview)
        self.verb = verb
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), id="confirm-title")
            with VerticalScroll():
                yield Static(self.preview, id="confirm-preview")
            with Horizontal(id="confirm-buttons"):
                if self.can_confirm:
                    yield Button(f"{self.verb} ({self.confirm_key})", id="confirm-yes",
                                 variant="error" if self.danger else "primary")
                yield Button(f"{self.decline} (n)" if self.can_confirm else "Close (n)", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def on_key(self, event: events.Key) -> None:
        if self.confirm_key != "y" and event.key == self.confirm_key and self.can_confirm:
            event.stop()
            self.dismiss(True)

    def action_answer(self, yes: bool) -> None:
        if yes and self.confirm_key != "y":
            return  # not this dialog's yes: a y typed twice must not answer a second confirmation
        self.dismiss(yes and self.can_confirm)
