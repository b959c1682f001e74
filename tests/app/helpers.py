"""Shared set-up for the app tests: a frozen-clock demo backend and an app around it."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from rich.text import Text
from textual.worker import WorkerCancelled

from tau_tui.app import TauApp
from tau_tui.core.cluster.sim.backend import SimulatedBackend
from tau_tui.core.cluster.sim.scenario import build_world
from tau_tui.core.operations.audit import AuditLog
from tau_tui.settings.settings_file import AppSettings, LoadedSettings


def plain_cells(cells) -> list[str]:
    """A row's cells as the text they show."""
    return [cell.plain if isinstance(cell, Text) else str(cell) for cell in cells]


def demo_backend(namespace: str | None = None):
    """The ``demo`` scenario at its start instant; time moves only via ``world.advance``."""
    world = build_world("demo")
    backend = SimulatedBackend(world, namespace=namespace, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    return world, backend


def make_app(tmp_path: Path, backend=None, *, readonly: bool = False, start_pane: str = "queue",
             compose_file: str | None = None, theme: str | None = None, settings: AppSettings | None = None) -> TauApp:
    if backend is None:
        _, backend = demo_backend()
    return TauApp(
        backend,
        readonly=readonly,
        theme=theme,
        settings=LoadedSettings(settings or AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
        audit=AuditLog(tmp_path / "audit.jsonl"),
        start_pane=start_pane,
        compose_file=compose_file,
    )


async def wait_workers(app) -> None:
    """Wait for the app's workers (a cancelled exclusive worker is not an error)."""
    for _ in range(5):
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


async def settle(pilot, rounds: int = 3) -> None:
    """Let refresh workers finish and their messages land."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        await wait_workers(app)
        await pilot.pause()
        screen = app.screen
        if hasattr(screen, "tick"):
            screen.tick()
        await wait_workers(app)
        await pilot.pause()


async def settle_until(pilot, predicate, rounds: int = 40) -> None:
    """Settle until ``predicate()`` holds (bounded; a slow machine may need a few ticks), then once more."""
    for _ in range(rounds):
        await settle(pilot)
        if predicate():
            break
    await settle(pilot)
    await pilot.pause(0.2)


async def settle_until_done(pilot, predicate, what: str, rounds: int = 300) -> None:
    """Settle, with a short pause between rounds, until ``predicate()`` holds; fail naming ``what`` if
    it never does.  For a state the app reaches through its own timers (a pane mounted and laid out
    ahead): how many settle rounds that takes depends on the machine, not on the app."""
    for _ in range(rounds):
        await settle(pilot, rounds=1)
        if predicate():
            await settle(pilot)
            return
        await pilot.pause(0.05)
    raise AssertionError(f"not reached after {rounds} rounds: {what}")


def async_test(fn):
    """Run an ``async def`` test without a pytest asyncio plugin."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper
