"""Hooks into Textual's ``App`` internals, for mounting a pane ahead and ending a mode switch's
repaint hold early.  Written against Textual 8.2.8; ``tests/textual_compat/test_canary.py``
checks each assumption, so an upgrade that breaks one fails there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.screen import Screen


def hold_repaints(app: App[Any]) -> Callable[[], None]:
    """Hold the app's repaints until the returned release is called (only its first call counts);
    the release that ends the last hold refreshes the screen, as ``App.delay_update``'s does.

    Written against Textual 8.2.8.  ``App.batch_update`` holds only around a ``with`` block and
    ``App.delay_update`` for a fixed time; a hold that a timer or an earlier event may end needs the
    batch counter both use (``_begin_batch``, ``_end_batch``, ``_batch_count``)."""
    app._begin_batch()
    ended = False

    def release() -> None:
        nonlocal ended
        if ended:
            return
        ended = True
        app._end_batch()
        if not repaint_holds(app):
            app.screen.refresh()

    return release


def repaint_holds(app: App[Any]) -> int:
    """How many holds on the app's repaints are open: ``App.batch_update`` blocks,
    ``App.delay_update`` delays (a mode switch's among them) and :func:`hold_repaints` holds.

    Written against Textual 8.2.8: all of them count in the private ``App._batch_count``; no
    public name tells whether repaints are held."""
    return int(app._batch_count)


def mode_started(app: App[Any], mode: str) -> bool:
    """Whether Textual has made ``mode``'s screen stack (the mode was switched to, or is the default).

    Written against Textual 8.2.8: ``App.screen_stack`` is the current mode's stack only, and no
    public name tells whether another mode's screen was made (``App._screen_stacks``)."""
    return mode in app._screen_stacks


def mode_top_screen(app: App[Any], mode: str) -> Screen[Any] | None:
    """The top screen of ``mode``'s stack, or None when the mode has none yet.

    Written against Textual 8.2.8: ``App.screen_stack`` is the current mode's stack only
    (``App._screen_stacks`` holds every mode's)."""
    stack = app._screen_stacks.get(mode)
    return stack[-1] if stack else None


def mount_screen_ahead(app: App[Any], screen: Screen[Any]) -> None:
    """Mount ``screen`` (its widgets made and styled) without showing it, so that a later
    ``switch_mode`` to a mode that returns it only shows it.

    Written against Textual 8.2.8: a mode's screen is mounted only inside ``switch_mode``
    (``App._init_mode``), and ``install_screen`` only records a screen, so this does what
    ``_init_mode`` does before it shows one: ``App._load_screen_css``, then ``App._register``."""
    app._load_screen_css(screen)
    app._register(app, screen)
