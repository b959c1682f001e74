"""Status as symbol + word + colour (never colour alone)."""

from __future__ import annotations

from rich.text import Text

# word -> (symbol, theme style)
_STATES: dict[str, tuple[str, str]] = {
    # workloads / runs
    "pending": ("◷", "$warning"),
    "queued": ("◷", "$warning"),
    "quotaReserved": ("◐", "$accent"),
    "admitted": ("▶", "$success"),
    "running": ("▶", "$success"),
    "starting": ("◐", "$accent"),
    "finished": ("■", "$text-muted"),
    "succeeded": ("✓", "$success"),
    "failed": ("✗", "$error"),
    "not_found": ("?", "$error"),
    "releasing": ("◑", "$accent"),
    "cancelled": ("■", "$text-muted"),
    # GPU verdicts
    "healthy": ("✓", "$success"),
    "degraded": ("▲", "$warning"),
    "unhealthy": ("✗", "$error"),
    "unknown": ("?", "$warning"),
    # phases
    "active": ("◐", "$accent"),
    "done": ("✓", "$success"),
    "warning": ("⚠", "$warning"),
    "skipped": ("–", "$text-muted"),
    # conditions
    "True": ("✓", "$success"),
    "False": ("✗", "$error"),
    "Unknown": ("?", "$warning"),
    "ready": ("✓", "$success"),
    "not ready": ("✗", "$error"),
    "selectable": ("✓", "$success"),
    "excluded": ("✗", "$error"),
    "cordoned": ("⊘", "$warning"),
    "held": ("‖", "$warning"),
}

# Rich styles cannot use theme variables; the app maps them once per theme.
_STYLE_FOR: dict[str, str] = {}


def set_palette(success: str, warning: str, error: str, accent: str, muted: str) -> None:
    """Called by the app when the theme changes."""
    _STYLE_FOR.update({"$success": success, "$warning": warning, "$error": error, "$accent": accent, "$text-muted": muted})


def style_of(word: str) -> str:
    _, style = _STATES.get(word, ("•", ""))
    return _STYLE_FOR.get(style, "")


def symbol_of(word: str) -> str:
    return _STATES.get(word, ("•", ""))[0]


def status_text(word: str, label: str | None = None) -> Text:
    """``✓ healthy`` styled for the current theme.  ``label`` overrides the word shown."""
    symbol, _ = _STATES.get(word, ("•", ""))
    return Text(f"{symbol} {label if label is not None else word}", style=style_of(word))
