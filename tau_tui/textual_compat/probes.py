"""Views of Textual's internals that the tests observe and no public API shows (each changes
nothing Textual does): which widgets the app mounts, when a screen draws a frame, what that frame
shows, whether a layout is pending, whether a screen's styles are current.  The product never
calls these.

Written against Textual 8.2.8; ``tests/textual_compat/test_canary.py`` checks each name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget


def record_mounts(app: App[Any]) -> list[Widget]:
    """From now on, every widget handed to the app to mount (``App._register``, which mounting a
    widget, a screen or a mode's first screen goes through), in order.

    Written against Textual 8.2.8: no public event names the widgets a mount is asked for (a
    widget mounted again gets no ``Mount`` event, so counting events cannot prove it was not)."""
    mounted: list[Widget] = []
    register = app._register

    def recording_register(parent: Any, *widgets: Widget, **kwargs: Any) -> list[Widget]:
        mounted.extend(widgets)
        return register(parent, *widgets, **kwargs)

    app._register = recording_register  # type: ignore[method-assign]
    return mounted


def before_each_frame(screen: Screen[Any], call: Callable[[], None]) -> None:
    """Call ``call`` each time ``screen`` draws a frame, just before it is drawn.

    Written against Textual 8.2.8: ``Screen._compositor_refresh`` draws a frame; no public event
    says that one is drawn."""
    draw = screen._compositor_refresh

    def calling_then_drawing() -> None:
        call()
        draw()

    screen._compositor_refresh = calling_then_drawing  # type: ignore[method-assign]


def visible_widgets(screen: Screen[Any]) -> set[Widget]:
    """The widgets the screen's last frame showed.

    Written against Textual 8.2.8: the compositor's ``visible_widgets`` (``Screen._compositor``);
    the public ``Widget.is_on_screen`` may lay the screen out to answer."""
    return set(screen._compositor.visible_widgets)


def layout_pending(screen: Screen[Any]) -> bool:
    """Whether ``screen`` was asked for a layout that its next frame will do.

    Written against Textual 8.2.8 (``Screen._layout_required``); no public name tells it."""
    return bool(screen._layout_required)


def styled_with_current_stylesheet(screen: Screen[Any]) -> bool:
    """Whether ``screen`` is marked as styled with the app's current stylesheet, so that switching
    to it restyles nothing (what ``CompatScreen.mark_styled`` marks).

    Written against Textual 8.2.8: ``Screen._css_update_count`` against ``App._css_update_count``;
    no public name tells it."""
    return bool(screen._css_update_count == screen.app._css_update_count)
