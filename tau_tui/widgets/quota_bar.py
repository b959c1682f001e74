"""Quota bar for one flavor/resource: used against nominal, with borrowing shown.

Rendered as a ``rich.text.Text`` so it sits in a table cell (no widget per row)::

    ████████░░ 32/32 (+0)      used 32 of nominal 32, borrowing 0

The filled part is the used share of nominal; usage above nominal (borrowed)
is drawn with ``▓``; numbers are always printed, so the bar is never the only
carrier of the value."""

from __future__ import annotations

from rich.text import Text

from tau_tui.core.quantity_text import human_quantity
from tau_tui.widgets.status_text import style_of


def quota_bar(used: float | None, nominal: float, borrowed: float = 0.0, resource: str = "", width: int = 10) -> Text:
    if used is None:
        return Text("? unknown usage", style=style_of("unknown"))
    ratio = 0.0 if nominal <= 0 else min(used, nominal) / nominal
    filled = round(ratio * width)
    over = 0 if nominal <= 0 else min(width - filled, round(max(0.0, used - nominal) / nominal * width))
    text = Text()
    level = "failed" if nominal and used > nominal else ("pending" if ratio >= 0.9 else "running")
    text.append("█" * filled, style=style_of(level))
    text.append("▓" * over, style=style_of("warning"))
    text.append("░" * (width - filled - over), style="dim")
    text.append(f" {human_quantity(used, resource)}/{human_quantity(nominal, resource)}")
    if borrowed:
        text.append(f" (+{human_quantity(borrowed, resource)} borrowed)")
    return text
