"""The footer of a pane: Textual's Footer that, at narrow widths, leaves out the app-wide keys a
k9s user already knows (``:`` commands, ``/`` filter; both listed in ``?`` help) so the pane's own
keys and ``?`` fit on one line at 80 columns."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: Keys left out of a compact footer.
KEYS_KNOWN_FROM_K9S = frozenset({"colon", "slash"})


class PaneFooter(Footer):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if self.compact and isinstance(widget, FooterKey) and widget.key in KEYS_KNOWN_FROM_K9S:
                continue
            yield widget
