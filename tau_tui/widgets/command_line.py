"""The ``:`` command / ``/`` filter line, k9s style: shown on demand, esc hides it.

In filter mode every keystroke posts :class:`CommandLine.Changed` (the pane
filters as you type) and the line shows the match count; ``esc`` closes it,
gives the focus back to what had it and calls :attr:`CommandLine.on_close`
(the pane clears the filter).  In command mode ``tab`` completes the word
under the cursor from :attr:`CommandLine.completer` (commands, then their
arguments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from rich.cells import cell_len
from textual import on
from textual.binding import Binding
from textual.containers import Horizontal
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Input, Label

from tau_tui.widgets.messages import CommandLineChanged, CommandLineSubmitted

#: (text before the cursor) -> candidates for its last word.
Completer = Callable[[str], list[str]]
#: (the mode of the line that closed) -> None.
CloseHandler = Callable[[str], None]


def complete(text: str, candidates: list[str]) -> tuple[str, list[str]]:
    """``text`` with its last word completed as far as all matching candidates agree,
    and the candidates that match (several: the caller shows them)."""
    head, _, word = text.rpartition(" ")
    matches = sorted({c for c in candidates if c.startswith(word)})
    if not matches:
        return text, []
    common = matches[0]
    for other in matches[1:]:
        while not other.startswith(common):
            common = common[:-1]
    completed = common + (" " if len(matches) == 1 else "")
    return (f"{head} " if head else "") + completed, matches


#: Characters the count label always has room for (its CSS min-width less its padding).
COUNT_WIDTH = 20


class LineInput(Input):
    """The line's text field: typing repaints it, never lays the screen out again (its width is
    the line's; Input's own virtual size, which follows the text, only bounds its scrolling)."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=True)


class CommandLine(Horizontal):
    """Hidden until :meth:`open`; posts :class:`CommandLine.Submitted`."""

    DEFAULT_CSS = """
    CommandLine { height: 1; display: none; background: $boost; }
    CommandLine.-open { display: block; }
    CommandLine > Label { width: auto; padding: 0 0 0 1; color: $accent; text-style: bold; }
    CommandLine > #command-count { color: $text-muted; text-style: none; padding: 0 1; min-width: 22; }
    CommandLine > Input, CommandLine > Input:focus { border: none; height: 1; padding: 0 1; background: $boost; width: 1fr; }
    """

    BINDINGS = [
        Binding("escape", "close", "Cancel", show=False),
        Binding("tab", "complete", "Complete", show=False, priority=True),
    ]

    Submitted: TypeAlias = CommandLineSubmitted
    Changed: TypeAlias = CommandLineChanged

    def __init__(self, covers: str | None = None, on_close: CloseHandler | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.mode = "command"
        self.completer: Completer | None = None
        #: Called on esc once the line is hidden, not through a message: what closing changes (the
        #: filter cleared, every row back) is in the same frame as the closed line.
        self.on_close = on_close
        #: What had the focus when the line opened: esc gives it back.
        self._focused_before: Widget | None = None
        #: The id of a one-line widget the open line takes the place of: the lines above keep their
        #: size, so opening the line redraws the line only, not the table above it.
        self.covers = covers

    def compose(self):
        yield Label(":", id="command-prompt")
        yield LineInput(placeholder="", id="command-input", select_on_focus=False)
        yield Label("", id="command-count")

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self, mode: str, initial: str = "") -> None:
        self.mode = mode
        prompt = self.query_one("#command-prompt", Label)
        prompt.update(":" if mode == "command" else "/")
        field = self.query_one(Input)
        field.placeholder = {
            "command": "queue · runs · nodes · logs RUN · ctx [NAME] · ns [NAME|all] · compose · profiles · mk · help · q  (tab completes)",
            "filter": "regex · !regex (invert) · -l key=value,key2 (labels) — filters as you type",
            "search": "search the whole log (regex)",
        }[mode]
        with field.prevent(Input.Changed):
            field.value = initial
        field.cursor_position = len(initial)
        self.set_count("")
        if self.screen.focused is not field:
            self._focused_before = self.screen.focused
        self._show(True)
        # Focus now, not on the next idle: keys typed right after ":" or "/" (while a refresh
        # is applying) must land in this line, never in the table behind it.
        self.screen.set_focus(field, scroll_visible=False)

    def set_count(self, text: str) -> None:
        """The match count (or completions). A count that fits the label's least width repaints
        the label alone; only a longer text lays the screen out again."""
        try:
            label = self.query_one("#command-count", Label)
        except Exception:
            return
        fits = cell_len(text) <= COUNT_WIDTH and cell_len(str(label.content)) <= COUNT_WIDTH
        label.update(text, layout=not fits)

    def _show(self, shown: bool) -> None:
        if self.covers is not None:
            for covered in self.screen.query(f"#{self.covers}"):
                covered.display = not shown
        self.set_class(shown, "-open")

    def action_close(self) -> None:
        """Hide the line, give the focus back and let :attr:`on_close` act, in one frame: the
        layout and the focused widget's look are asked for now, not when Textual's messages about
        them come.  Each would be a frame of its own, and a frame starts the screen's 60 Hz update
        timer, so the next one waits up to 17 ms for its tick."""
        self._show(False)
        screen = self.screen
        self._give_focus_back()
        if self.on_close is not None:
            self.on_close(self.mode)
        if screen.focused is not None:
            self.app.update_styles(screen.focused)
        screen.refresh(layout=True)

    def _give_focus_back(self) -> None:
        """To what had it when the line opened, if it still can take it."""
        screen = self.screen
        before, self._focused_before = self._focused_before, None
        if before is not None and before.is_attached and before.screen is screen and before.focusable:
            screen.set_focus(before, scroll_visible=False)
        else:
            screen.focus_next()

    def action_complete(self) -> None:
        field = self.query_one(Input)
        if self.mode != "command" or self.completer is None or self.screen.focused is not field:
            self.screen.focus_next()
            return
        before = field.value[: field.cursor_position]
        completed, matches = complete(before, self.completer(before))
        if completed != before:
            field.value = completed + field.value[field.cursor_position:]
            field.cursor_position = len(completed)
        self.set_count("  ".join(matches[:12]) + (" …" if len(matches) > 12 else "") if len(matches) > 1 else "")

    @on(Input.Changed, "#command-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.mode == "filter" and self.is_open:
            self.post_message(self.Changed(self.mode, event.value))

    @on(Input.Submitted, "#command-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self._show(False)
        self._give_focus_back()
        self.post_message(self.Submitted(self.mode, text))
