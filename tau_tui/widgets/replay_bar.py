"""The replay bar (``tau-tui --replay FILE``): paused or playing (a symbol and a word, never
colour alone), the recorded time, a progress bar, elapsed / length, speed and the keys.
Hidden when the cluster is live."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from tau_tui.core.operations.recording.replay_clock import ReplayStatus
from tau_tui.widgets.status_text import style_of

#: Below this many columns the bar drops the file name and shortens the key hints.
WIDE = 120


def _duration(seconds: float) -> str:
    """``45s``, ``4m10s``, ``1h02m`` (seconds matter when stepping through a recording)."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class ReplayBar(Widget):
    DEFAULT_CSS = """
    ReplayBar { height: 1; background: $panel; display: none; }
    ReplayBar.-shown { display: block; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.status: ReplayStatus | None = None

    def show(self, status: ReplayStatus | None) -> None:
        self.set_class(status is not None, "-shown")
        if status != self.status:
            self.status = status
            self.refresh()

    def render(self) -> Text:
        s = self.status
        line = Text(no_wrap=True, overflow="ellipsis")
        if s is None:
            return line
        width = self.size.width or 80
        wide = width >= WIDE
        line.append(" REPLAY ", style="bold reverse")
        if s.paused:
            line.append(" ‖ paused ", style=style_of("warning"))
        else:
            line.append(" ▶ playing ", style=style_of("healthy"))
        line.append(f" {s.position:%H:%M:%S} UTC ", style="bold")
        slots = 24 if wide else 10
        done = 0 if s.length_s <= 0 else round(slots * s.elapsed_s / s.length_s)
        line.append("━" * done, style="bold")
        line.append("─" * (slots - done), style="dim")
        line.append(f" {_duration(s.elapsed_s)}/{_duration(s.length_s)}")
        line.append(f"  ×{s.speed:g}", style="bold")
        if s.truncated:
            line.append("  cut short", style=style_of("warning"))
        if wide:
            line.append(f"  {s.file}", style="dim")
            line.append("   space play/pause · , . step · - + speed · :seek HH:MM", style="dim")
        else:
            line.append("  space , . - + :seek", style="dim")
        return line
