"""The footer of a pane: Textual's Footer that, at narrow widths, leaves out the app-wide keys a
k9s user already knows (``:`` commands, ``/`` filter; both listed in ``?`` help) so the pane's own
keys and ``?`` fit on one line at 80 columns; and that hides and shows its keys as the focus moves
instead of being built again."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from tau_tui.textual_compat.footer import FooterKey, bindings_ready

#: Keys left out of a compact footer.
KEYS_KNOWN_FROM_K9S = frozenset({"colon", "slash"})


def shown_bindings(screen: Screen) -> tuple[Any, ...]:
    """What a footer on `screen` would show: each shown binding with its state, in order."""
    return tuple((binding.key, binding.action, binding.description, binding.group, enabled, tooltip)
                 for (_node, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show)


class PaneFooter(Footer):
    #: The bindings the footer's keys were last built from (None: not built yet).
    _built_from: tuple[Any, ...] | None = None

    def compose(self) -> ComposeResult:
        if bindings_ready(self):
            self._built_from = shown_bindings(self.screen)
        for widget in super().compose():
            if self.compact and isinstance(widget, FooterKey) and widget.key in KEYS_KNOWN_FROM_K9S:
                continue
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        # Textual builds every key of the footer again whenever the focus moves (`/` into the filter
        # line and esc out of it), which costs more than the keys' own work: when the keys to show
        # are some of those built, in the same state, the others are hidden instead.
        built = self._built_from
        if built is not None and screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = shown_bindings(screen)
            if set(shown) <= set(built):
                visible = {(key, action) for key, action, *_ in shown}
                for footer_key in self.query(FooterKey):
                    if not footer_key.has_class("-command-palette"):  # shown apart from the bindings
                        footer_key.display = (footer_key.key, footer_key.action) in visible
                return
        super().bindings_changed(screen)
