"""Top bar: context, namespace, connection state, read-only badge, pane tabs."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.widget import Widget

from tau_tui.widgets.status_text import style_of

PANES = (
    ("1", "compose", "Compose"),
    ("2", "profiles", "Profiles"),
    ("3", "queue", "Queue"),
    ("4", "runs", "Runs"),
    ("5", "logs", "Logs"),
    ("6", "nodes", "Nodes"),
    ("7", "multikueue", "MultiKueue"),
)


@dataclass(frozen=True)
class HeaderState:
    context: str = "-"
    namespace: str = "all"
    connection: str = "connecting"  # connected | reconnecting (stale since T) | stale since T | connecting | no cluster
    readonly: bool = False
    pane: str = ""
    crumbs: str = ""
    filter: str = ""


class HeaderBar(Widget):
    """Two lines: who/where/connection on top, pane tabs and crumbs below."""

    DEFAULT_CSS = """
    HeaderBar { height: 2; background: $panel; color: $foreground; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = HeaderState()
        #: (first column, end column, mode) of each pane tab on the second line, for clicks.
        self.tab_spans: list[tuple[int, int, str]] = []

    async def on_click(self, event: events.Click) -> None:
        """A click on a pane tab switches to that pane."""
        if event.y != 1:
            return
        for start, end, mode in self.tab_spans:
            if start <= event.x < end:
                event.stop()
                await self.app.run_action(f"switch_pane('{mode}')")
                return

    def set_state(self, state: HeaderState) -> None:
        if state != self.state:
            self.state = state
            self.refresh()

    def render(self) -> Text:
        s = self.state
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append(" tau-tui ", style="bold reverse")
        top.append("  ctx ", style="dim")
        top.append(s.context, style="bold")
        top.append("  ns ", style="dim")
        top.append(s.namespace, style="bold")
        top.append("  ")
        if s.connection == "connected":
            top.append("● connected", style=style_of("healthy"))
        elif s.connection.startswith("reconnecting"):
            top.append(f"◌ {s.connection}", style=style_of("warning"))
        elif s.connection in ("connecting", "loading demo"):
            top.append(f"◌ {s.connection}", style=style_of("pending"))
        else:
            top.append(f"✗ {s.connection}", style=style_of("failed"))
        if s.readonly:
            top.append("  ")
            top.append(" READ-ONLY ", style="bold reverse " + style_of("warning"))
        bottom = Text(no_wrap=True, overflow="ellipsis")
        spans = []
        for key, mode, label in PANES:
            active = mode == s.pane
            start = bottom.cell_len
            bottom.append(f" {key}", style="dim" if not active else "bold")
            bottom.append(f" {label} ", style="bold reverse" if active else "")
            spans.append((start, bottom.cell_len, mode))
        self.tab_spans = spans
        if s.crumbs:
            bottom.append("  › " + s.crumbs, style="italic")
        if s.filter:
            bottom.append(f"  filter: {s.filter}", style=style_of("warning"))
        return Text("\n").join([top, bottom])
