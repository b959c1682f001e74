"""Shown when there is no cluster to talk to: says why and offers the demo."""

from __future__ import annotations

from typing import cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from tau_tui.screens.host import PaneHost


class NoClusterScreen(Screen):
    PANE_TITLE = "No cluster"
    HELP = "tau-tui could not reach a cluster.  Press d (or the button) to open the simulated demo cluster; ctrl+q quits."
    BINDINGS = [
        Binding("d", "demo", "Open the demo", id="nocluster.demo"),
        Binding("ctrl+q", "app.quit", "Quit", id="nocluster.quit"),
    ]
    DEFAULT_CSS = """
    NoClusterScreen { align: center middle; }
    NoClusterScreen > Vertical { width: 80%; max-width: 90; height: auto; border: thick $warning; padding: 1 2; }
    NoClusterScreen Button { margin: 1 0 0 0; }
    """

    def __init__(self, message: str, offer_demo: bool = True, title: str = "No cluster") -> None:
        super().__init__()
        self.message = message
        self.offer_demo = offer_demo
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"✗ {self.title_text}", style="bold"), id="no-cluster-title")
            yield Static(Text(self.message), id="no-cluster-message")
            yield Static(Text("The demo runs an embedded simulated cluster (Kueue, MultiKueue, GPU nodes) on this "
                              "machine; nothing is sent anywhere."))
            with Center():
                yield Button("Open the demo (d)", id="open-demo", variant="primary")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_demo()

    def action_demo(self) -> None:
        cast(PaneHost, self.app).action_open_demo()

    def set_loading(self, loading: bool = True) -> None:
        """Says the demo is loading; keeps Widget.set_loading's signature, which Textual's ``loading`` calls."""
        if not loading:
            return
        self.query_one("#no-cluster-message", Static).update(Text("loading the demo cluster…"))
