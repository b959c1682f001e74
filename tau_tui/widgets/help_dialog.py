"""Contextual help (``?`` / F1): what this pane is for and every key it has now."""

from __future__ import annotations

from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

GLOBAL_KEYS = (
    (":", "command mode (:queue :runs :nodes :logs RUN :ctx :ns :compose :profiles :mk :q)"),
    ("/", "filter rows: regex, !regex inverts, -l key=value selects by label"),
    ("esc", "back (close dialog, clear filter, previous pane)"),
    ("1-7", "switch pane"),
    ("? / F1", "this help"),
    ("ctrl+p", "command palette (this pane's commands)"),
    ("ctrl+q, ctrl+c", "quit"),
)


class HelpDialog(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpDialog { align: center middle; }
    HelpDialog > Vertical { width: 90%; max-width: 110; height: 90%; border: thick $primary;
        background: $surface; padding: 0 1; }
    HelpDialog #help-title { text-style: bold; padding: 0 0 1 0; }
    HelpDialog #help-versions { padding: 1 0 0 0; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def __init__(self, title: str, about: str, keys: list[tuple[str, str]], slash: str | None = None,
                 versions: str | Callable[[], str] | None = None) -> None:
        """``slash``: what ``/`` does on this pane when it is not the row filter (Logs searches).
        ``versions``: the versions line, or what reads it (network I/O: called in a worker thread)."""
        super().__init__()
        self.slash = slash
        self.versions = versions
        self.title_text = title
        self.about = about
        self.keys = keys

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Help: {self.title_text}"), id="help-title")
            with VerticalScroll():
                yield Static(Text(self.about), id="help-about")
                yield Static(self._table(), id="help-keys")
                if isinstance(self.versions, str):
                    yield Static(self._versions_text(self.versions), id="help-versions")
                elif self.versions is not None:
                    yield Static(Text("versions: reading…"), id="help-versions")

    def on_mount(self) -> None:
        if callable(self.versions):
            self._read_versions(self.versions)

    @staticmethod
    def _versions_text(line: str) -> Text:
        return Text(f"versions (:version): {line}")

    @work(description="_read_versions", thread=True, exclusive=True, exit_on_error=False)
    def _read_versions(self, versions: Callable[[], str]) -> None:
        line = versions()
        self.app.call_from_thread(self._show_versions, line)

    def _show_versions(self, line: str) -> None:
        if self.is_attached:
            self.query_one("#help-versions", Static).update(self._versions_text(line))

    def _table(self) -> Table:
        table = Table(box=None, show_header=True, header_style="bold", padding=(0, 2, 0, 0), expand=True)
        table.add_column("key", no_wrap=True)
        table.add_column("this pane")
        for key, description in self.keys:
            table.add_row(Text(key, style="bold"), Text(description))
        table.add_row("", "")
        table.add_row(Text("global", style="bold underline"), "")
        for key, description in GLOBAL_KEYS:
            if key == "/" and self.slash:
                description = self.slash
            table.add_row(Text(key, style="bold"), Text(description))
        return table

    def action_close(self) -> None:
        self.dismiss(None)
