"""Textual's private footer internals the pane footer relies on (written against Textual 8.2.8)."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["FooterKey", "bindings_ready"]


def bindings_ready(footer: Footer) -> bool:
    """Whether the footer has built its keys from the screen's bindings yet.

    Written against Textual 8.2.8: ``Footer._bindings_ready`` turns true once the screen's bindings
    were read; the public API does not say it.  (``FooterKey``, the widget of one key, is exported
    only from the private ``textual.widgets._footer`` module.)"""
    return bool(footer._bindings_ready)
