"""The ``:`` command / ``/`` filter line, k9s style: shown on demand, esc hides it."""

from __future__ import annotations

from textual import on
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label


class CommandLine(Horizontal):
    """Hidden until :meth:`open`; posts :class:`CommandLine.Submitted`."""

    DEFAULT_CSS = """
    CommandLine { height: 1; display: none; background: $boost; }
    CommandLine.-open { display: block; }
    CommandLine > Label { width: auto; padding: 0 0 0 1; color: $accent; text-style: bold; }
    CommandLine > Input, CommandLine > Input:focus { border: none; height: 1; padding: 0 1; background: $boost; }
    """

    BINDINGS = [Binding("escape", "close", "Cancel", show=False)]

    class Submitted(Message):
        def __init__(self, mode: str, text: str) -> None:
            super().__init__()
            self.mode = mode  # "command", "filter" or "search"
            self.text = text

    class Closed(Message):
        pass

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.mode = "command"

    def compose(self):
        yield Label(":", id="command-prompt")
        yield Input(placeholder="", id="command-input", select_on_focus=False)

    def open(self, mode: str, initial: str = "") -> None:
        self.mode = mode
        prompt = self.query_one(Label)
        prompt.update(":" if mode == "command" else "/")
        field = self.query_one(Input)
        field.placeholder = {
            "command": "queue · runs · nodes · logs RUN · ctx [NAME] · ns [NAME|all] · compose · profiles · mk · help · q",
            "filter": "regex · !regex (invert) · -l key=value,key2 (labels)",
            "search": "search the whole log (regex)",
        }[mode]
        field.value = initial
        self.add_class("-open")
        field.focus()

    def action_close(self) -> None:
        self.remove_class("-open")
        self.post_message(self.Closed())

    @on(Input.Submitted, "#command-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.remove_class("-open")
        self.post_message(self.Submitted(self.mode, text))
