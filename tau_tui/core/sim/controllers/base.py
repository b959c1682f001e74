"""What every simulated controller shares: the world's store, lock, settings,
clock and event recorder."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tau_tui.core.sim.controllers.world_view import ControllerWorld


class Controller:
    def __init__(self, world: ControllerWorld):
        self.world = world
        self.store = world.store
        self.lock = world.lock
        self.settings = world.settings

    def now(self) -> datetime:
        return self.world.now()

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.world.event(obj, type_, reason, message)
