"""Shared set-up for the app tests: a frozen-clock demo backend and an app around it."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

from rich.text import Text
from textual.worker import WorkerCancelled

from tau_tui.app import TauApp
from tau_tui.core.operations.audit import AuditLog
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tests.scenarios import demo_backend


def plain_cells(cells) -> list[str]:
    """A row's cells as the text they show."""
    return [cell.plain if isinstance(cell, Text) else str(cell) for cell in cells]


def make_app(tmp_path: Path, backend=None, *, readonly: bool = False, start_pane: str = "queue",
             compose_file: str | None = None, theme: str | None = None, settings: AppSettings | None = None,
             audit: AuditLog | None = None) -> TauApp:
    if backend is None:
        _, backend = demo_backend()
    return TauApp(
        backend,
        readonly=readonly,
        theme=theme,
        settings=LoadedSettings(settings or AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
        audit=audit or AuditLog(tmp_path / "audit.jsonl"),
        start_pane=start_pane,
        compose_file=compose_file,
    )


class RunningDemo(NamedTuple):
    world: Any
    backend: Any
    app: TauApp
    pilot: Any


@asynccontextmanager
async def demo_app(tmp_path: Path, *, size: tuple[int, int] = (160, 48), settled: bool = True,
                   message_hook=None, **app_options: Any) -> AsyncIterator[RunningDemo]:
    """The app over a fresh :func:`demo_backend`, running at ``size`` and settled once (unless not
    ``settled``); ``app_options`` go to :func:`make_app`."""
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, **app_options)
    async with app.run_test(size=size, message_hook=message_hook) as pilot:
        if settled:
            await settle(pilot)
        yield RunningDemo(world, backend, app, pilot)


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


async def settle_until(pilot, predicate, rounds: int = 40, paused_rounds: int = 300) -> bool:
    """Settle until ``predicate()`` holds, then once more; returns whether it held.  Bounded by counts:
    ``rounds`` quick rounds, then ``paused_rounds`` more with 50 ms between them, for a state the app
    reaches through its own timers (a pane laid out ahead, a tick's refresh), which a busy machine's
    quick rounds can all run before."""
    held = False
    for done in range(rounds + paused_rounds):
        await settle(pilot, rounds=3 if done < rounds else 1)
        if predicate():
            held = True
            break
        if done >= rounds:
            await pilot.pause(0.05)
    await settle(pilot)
    await pilot.pause(0.2)
    return held


async def settle_until_done(pilot, predicate, what: str) -> None:
    """:func:`settle_until`, failing with ``what`` when the predicate never held (a precondition)."""
    if not await settle_until(pilot, predicate):
        raise AssertionError(f"never reached: {what}")


async def wait_until(pilot, predicate, timeout: float = 120.0, what: str = "condition") -> None:
    """Poll until `predicate` holds; the bound only catches a hang (a busy machine may be slow)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def of_type(messages, kind):
    """The messages of ``kind`` (from a ``message_hook`` list)."""
    return [m for m in messages if isinstance(m, kind)]


def record_notifications(app) -> list[str]:
    """From now on, the text of every notification the app shows (through the public ``notify``,
    which widgets' and screens' ``notify`` call), in order."""
    messages: list[str] = []
    notify = app.notify

    def recording(message, *args, **kwargs):
        messages.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = recording
    return messages


def key_event(key: str):
    """The event a terminal's driver posts for ``key`` (a pilot key name, or one character)."""
    import unicodedata

    from textual import events
    from textual.keys import key_to_character

    if len(key) == 1:
        name = key if key.isalnum() else unicodedata.name(key).lower().replace("-", "_").replace(" ", "_")
        return events.Key(name, key)
    return events.Key(key, key_to_character(key))


def type_burst(app, keys) -> None:
    """Every key of ``keys`` sent at once, as a paste, a fast typist or a busy machine delivers them:
    posted as the terminal driver posts them, with no wait for the app between two keys (Pilot.press
    waits for the app to go idle after each key, which hides keys that overtake each other)."""
    for key in keys:
        event = key_event(key)
        event.set_sender(app)
        app.post_message(event)


def async_test(fn):
    """Run an ``async def`` test without a pytest asyncio plugin."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


def visible_text(app) -> str:
    """The text of every Static (and Label) shown on the screen on top, one widget a line."""
    from textual.widgets import Static

    return "\n".join(str(widget.render()) for widget in app.screen.query(Static) if widget.display)


async def pause_until(pilot, predicate, what: str, rounds: int = 600) -> None:
    """Pause until ``predicate()`` holds, at most ``rounds`` pauses of 50 ms (a bound for a hang): for
    a state reached while a worker is held on purpose (a test's gate), which :func:`settle` would wait for."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never reached: {what}\n{visible_text(pilot.app)}")
