"""The thread that plays a replay in real time: every ``interval`` it moves the replay on by the
wall time that passed, times the speed (nothing while paused)."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Playable(Protocol):
    def play_for(self, wall_seconds: float) -> None: ...


class ReplayPlayer(threading.Thread):
    def __init__(self, replay: Playable, interval: float = 0.1) -> None:
        super().__init__(name="tau-replay-player", daemon=True)
        self.replay = replay
        self.interval = interval
        self._stopping = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self._stopping.wait(self.interval):
            now = time.monotonic()
            try:
                self.replay.play_for(now - last)
            except Exception:  # a bad record must not stop the clock silently: log it, keep playing
                import logging

                logging.getLogger(__name__).exception("replay step failed")
            last = now

    def stop(self) -> None:
        self._stopping.set()
