"""The one private Textual name the table widgets use.

Written against Textual 8.2.8."""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget


def update_scrollbars(widget: Widget, virtual_size: Size) -> None:
    """Show, hide and size ``widget``'s scrollbars for ``virtual_size`` without laying out the screen.

    Textual 8.2.8: ``Widget.virtual_size`` is a layout reactive, so setting it lays out (and
    re-renders) every widget on the screen.  A table whose own height is fixed (``1fr``) needs
    no layout when only its row count changes: the caller stores the size with ``set_reactive``
    and this brings the scrollbars up to date (``Widget._scroll_update``, which a layout would
    call; a scrollbar that appears or goes lays the screen out itself).  The public API has no
    call that updates the scrollbars alone."""
    widget._scroll_update(virtual_size)
