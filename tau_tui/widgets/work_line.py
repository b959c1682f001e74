"""A line that says what a long action is doing while it runs: a spinner, the action and what it
acts on ("verifying: Store the worker credentials"), and that ``esc`` stops it; then how it ended
("✗ cancelled: …").  It shows only once the action has run ``SHOW_AFTER_S`` (a quick one never
flickers), and redraws only itself."""

from __future__ import annotations

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from tau_tui.widgets.status_text import style_of

#: An action quicker than this is never shown as running.
SHOW_AFTER_S = 0.3
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class WorkLine(Static):
    DEFAULT_CSS = """
    WorkLine { height: auto; padding: 0 1; display: none; }
    WorkLine.-shown { display: block; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(Text(""), **kwargs)
        #: What runs now ("verifying: <step>"), None when nothing does.
        self.doing: str | None = None
        self.hint = ""
        self._frame = 0
        self._spin: Timer | None = None
        self._show_timer: Timer | None = None

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def working(self, doing: str, hint: str = "esc cancels") -> None:
        """Something runs (or moved on to another part): shown once it has run SHOW_AFTER_S."""
        started = self.doing is None
        self.doing, self.hint = doing, hint
        if self.shown:
            self._draw()
        elif started:
            self._stop_timers()
            self._show_timer = self.set_timer(SHOW_AFTER_S, self._show)

    def _show(self) -> None:
        self._show_timer = None
        if self.doing is None:
            return
        self.add_class("-shown")
        self._draw()
        self._spin = self.set_interval(0.1, self._next_frame)

    def _next_frame(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self._draw()

    def _draw(self) -> None:
        line = Text()
        line.append(f"{SPINNER[self._frame]} ", style=style_of("running"))
        line.append(self.doing or "", style="bold")
        if self.hint:
            line.append(f"  ({self.hint})", style="dim")
        self.update(line)

    def ended(self, outcome: Text | None = None) -> None:
        """Nothing runs any more: the line goes, or says ``outcome`` (kept until the next action)."""
        self.doing = None
        self._stop_timers()
        if outcome is None:
            self.remove_class("-shown")
            self.update(Text(""))
            return
        self.add_class("-shown")
        self.update(outcome)

    def cancelled(self, what: str) -> None:
        """``esc``: the action was told to stop; the line says so at once."""
        self.ended(Text(f"✗ cancelled: {what}", style=style_of("failed")))

    def _stop_timers(self) -> None:
        for timer in (self._spin, self._show_timer):
            if timer is not None:
                timer.stop()
        self._spin = self._show_timer = None
