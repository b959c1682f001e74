"""Top bar: context, namespace, connection state, read-only badge, pane tabs."""

from __future__ import annotations

from dataclasses import dataclass, replace

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

#: Inactive tabs shrink to these, then to their digit, when the tabs and the crumbs do not fit.
SHORT_LABELS = {"compose": "Comp", "profiles": "Prof", "queue": "Queue", "runs": "Runs", "logs": "Logs",
                "nodes": "Node", "multikueue": "MK"}


@dataclass(frozen=True)
class HeaderState:
    context: str = "-"
    namespace: str = "all"
    connection: str = "connecting"  # connected | reconnecting (stale since T) | stale since T | connecting | no cluster
    readonly: bool = False
    pane: str = ""
    crumbs: str = ""
    filter: str = ""
    #: Read-only but recording (``--record-while-readonly``): the one write read-only allows on request.
    recording: bool = False


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
        width = self.size.width or 80
        top = self._top_line(s, s.context)
        context = s.context
        if top.cell_len > width and len(context) > 12:
            # A long context name gives way first: the connection state and READ-ONLY must stay visible.
            keep = max(11, len(context) - (top.cell_len - width) - 1)
            context = context[:keep] + "…"
            top = self._top_line(s, context)
        if top.cell_len > width and len(s.connection) > 24:
            # Then a long connection message (a server's error): the pane's banner shows it whole.
            keep = max(23, len(s.connection) - (top.cell_len - width) - 1)
            top = self._top_line(replace(s, connection=s.connection[:keep] + "…"), context)
        top.truncate(width, overflow="ellipsis")  # one line always: the tabs below must stay on screen
        for shrink in range(3):  # full labels, short labels, digits: the first that keeps the crumbs on screen
            bottom, spans = self._tabs_line(s, shrink)
            if bottom.cell_len <= width:
                break
        self.tab_spans = spans
        return Text("\n").join([top, bottom])

    @staticmethod
    def _tabs_line(s: HeaderState, shrink: int) -> tuple[Text, list[tuple[int, int, str]]]:
        """The pane tabs (inactive ones shortened by ``shrink``: 0 full, 1 short, 2 digit), crumbs and filter."""
        bottom = Text(no_wrap=True, overflow="ellipsis")
        spans = []
        for key, mode, label in PANES:
            active = mode == s.pane
            start = bottom.cell_len
            bottom.append(f" {key}", style="dim" if not active else "bold")
            if active or shrink == 0:
                bottom.append(f" {label} ", style="bold reverse" if active else "")
            elif shrink == 1:
                bottom.append(f" {SHORT_LABELS.get(mode, label)} ")
            spans.append((start, bottom.cell_len, mode))
        if s.crumbs:
            bottom.append("  › " + s.crumbs, style="italic")
        if s.filter:
            bottom.append(f"  filter: {s.filter}", style=style_of("warning"))
        return bottom, spans

    @staticmethod
    def _top_line(s: HeaderState, context: str) -> Text:
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append(" tau-tui ", style="bold reverse")
        top.append("  ctx ", style="dim")
        top.append(context, style="bold")
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
            top.append(" READ-ONLY · RECORDING " if s.recording else " READ-ONLY ", style="bold reverse " + style_of("warning"))
        return top
