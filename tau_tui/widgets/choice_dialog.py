"""A question with a few named answers, each on a button with its key (save / discard / cancel,
restore / discard / keep for later).  Esc gives the way back; nothing is chosen by a key that is
not one of the answers'.  Closing hands focus back to what had it, as any modal screen does."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


@dataclass(frozen=True)
class Choice:
    answer: str
    label: str
    key: str  # a Textual key name: "s", "escape"
    variant: str = "default"

    @property
    def button_label(self) -> str:
        shown = "esc" if self.key == "escape" else self.key
        return f"{self.label} ({shown})"


class ChoiceDialog(ModalScreen[str]):
    """Returns the chosen :attr:`Choice.answer`; esc returns ``escape_answer``."""

    DEFAULT_CSS = """
    ChoiceDialog { align: center middle; }
    ChoiceDialog > Vertical { width: 80%; max-width: 100; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1; }
    ChoiceDialog #choice-title { text-style: bold; width: 100%; padding: 0 0 1 0; }
    ChoiceDialog VerticalScroll { height: auto; max-height: 16; }
    ChoiceDialog #choice-buttons { height: auto; align-horizontal: right; padding: 1 0 0 0; }
    ChoiceDialog Button { margin: 0 1; min-width: 12; }
    """

    def __init__(self, title: str, body: str | Text, choices: list[Choice], *, escape_answer: str,
                 focused_answer: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.body = body if isinstance(body, Text) else Text(body)
        self.choices = choices
        self.escape_answer = escape_answer
        self.focused_answer = focused_answer or escape_answer

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), id="choice-title")
            with VerticalScroll():
                yield Static(self.body, id="choice-body")
            with Horizontal(id="choice-buttons"):
                for choice in self.choices:
                    yield Button(choice.button_label, id=f"choice-{choice.answer}", variant=choice.variant,  # type: ignore[arg-type]  # one of Button's variants, given by the caller
                                 compact=True)

    def on_mount(self) -> None:
        self.query_one(f"#choice-{self.focused_answer}", Button).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(self.escape_answer)
            return
        for choice in self.choices:
            if event.key == choice.key:
                event.stop()
                self.dismiss(choice.answer)
                return

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss((event.button.id or "").removeprefix("choice-"))
