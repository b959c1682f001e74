"""The replay's keys and ``:seek`` (``tau-tui --replay FILE``): play/pause, step, speed and seek.

The keys are the app's (its ``action_replay_*`` call here), hidden and inert unless the backend is
a :class:`ReplayBackend`; the clock and the records are the core's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from tau_tui.core.operations.recording.replay_backend import ReplayBackend

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell
    from tau_tui.core.operations.recording.replay_clock import ReplayStatus

#: The replay's keys (listed in ``?`` help and on the replay bar; space also in the footer).
REPLAY_BINDINGS: list[BindingType] = [
    Binding("space", "replay_toggle", "Play/pause", id="replay.toggle"),
    Binding("full_stop", "replay_step(1)", "Step to the next change", id="replay.step", key_display=".", show=False),
    Binding("comma", "replay_step(-1)", "Step back a change", id="replay.back", key_display=",", show=False),
    Binding("plus", "replay_speed(1)", "Faster (up to ×16)", id="replay.faster", key_display="+", show=False),
    Binding("minus", "replay_speed(-1)", "Slower (down to ×0.25)", id="replay.slower", key_display="-", show=False),
]
REPLAY_ACTIONS = frozenset({"replay_toggle", "replay_step", "replay_speed"})
#: What ``?`` help lists in a replay.
REPLAY_HELP_KEYS = [("space", "play / pause the replay"), (".", "step to the next recorded change"),
                    (",", "step back a change"), ("+ / -", "speed ×0.25 … ×16"),
                    (":seek HH:MM[:SS]", "jump to a time (UTC); also +90s, -2m, 5m, start, end")]


class ReplayControls:
    """Play/pause, step, speed and ``:seek`` of a replayed recording."""

    def __init__(self, app: AppShell) -> None:
        self.app = app

    @property
    def replay(self) -> ReplayBackend | None:
        backend = self.app.backend
        return backend if isinstance(backend, ReplayBackend) else None

    def status(self) -> ReplayStatus | None:
        replay = self.replay
        return replay.status() if replay is not None else None

    def allows(self, action: str) -> bool:
        """Whether the app's key ``action`` works now: the replay's keys only in a replay."""
        return action not in REPLAY_ACTIONS or self.replay is not None

    def toggle(self) -> None:
        replay = self.replay
        if replay is not None:
            replay.toggle_pause()
            self.app.refresh_tick()

    def step(self, direction: int) -> None:
        replay = self.replay
        if replay is not None:
            replay.step(direction)
            self.app.refresh_tick()

    def change_speed(self, direction: int) -> None:
        replay = self.replay
        if replay is not None:
            speed = replay.faster() if direction > 0 else replay.slower()
            self.app.notify(f"replay speed ×{speed:g}", timeout=2)
            self.app.refresh_tick()

    def seek(self, text: str) -> None:
        """``:seek TEXT``."""
        replay = self.replay
        if replay is None:
            self.app.notify(":seek works in a replay: tau-tui --replay FILE", severity="warning")
            return
        if not text.strip():
            status = replay.status()
            self.app.notify(f"usage: :seek HH:MM[:SS] (UTC, {status.start:%H:%M:%S}–{status.end:%H:%M:%S}), "
                            "+90s, -2m, 5m, start or end", severity="warning")
            return
        try:
            at = replay.seek(text)
        except ValueError as err:
            self.app.notify(str(err), severity="warning", timeout=8)
            return
        self.app.notify(f"replay at {at:%H:%M:%S} UTC", timeout=2)
        self.app.refresh_tick()
