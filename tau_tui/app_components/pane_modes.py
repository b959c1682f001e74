"""The app's modes, one per pane, each screen's module imported when its pane is first made.

The first frame needs only the pane it opens on; importing every pane (compose with the
``tau.yaml`` schema, logs, the MultiKueue wizard, ...) before it would delay the start.  The others
load in a worker after the first frame (:func:`import_pane_modules`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from textual.screen import Screen

#: mode -> (module, screen class)
PANE_SCREENS: dict[str, tuple[str, str]] = {
    "compose": ("tau_tui.screens.compose", "ComposeScreen"),
    "profiles": ("tau_tui.screens.profiles", "ProfilesScreen"),
    "queue": ("tau_tui.screens.queue", "QueueScreen"),
    "runs": ("tau_tui.screens.runs", "RunsScreen"),
    "logs": ("tau_tui.screens.logs", "LogsScreen"),
    "nodes": ("tau_tui.screens.nodes", "NodesScreen"),
    "multikueue": ("tau_tui.screens.multikueue", "MultiKueueScreen"),
    "evidence": ("tau_tui.screens.evidence", "EvidenceScreen"),
    "pods": ("tau_tui.screens.pods", "PodsScreen"),
    "events": ("tau_tui.screens.events", "EventsScreen"),
    "workspaces": ("tau_tui.screens.workspaces", "WorkspacesScreen"),
}


#: The panes whose ``/`` filters rows (their screens' FILTERS_ROWS; a test keeps the two in step).
#: Named here so a refusal can list them without importing every pane.
FILTERING_PANES = ("profiles", "queue", "runs", "nodes", "multikueue", "evidence", "pods", "events", "workspaces")


def filtering_pane_titles() -> list[str]:
    return [mode.capitalize() if mode != "multikueue" else "MultiKueue" for mode in FILTERING_PANES]


def screen_class(mode: str) -> type[Screen]:
    module, name = PANE_SCREENS[mode]
    made: type[Screen] = getattr(importlib.import_module(module), name)
    return made


def pane_mode(mode: str) -> Callable[[], Screen]:
    """What Textual's ``MODES`` holds for ``mode``: makes the pane's screen, importing it first."""

    def make() -> Screen:
        return screen_class(mode)()

    make.__qualname__ = make.__name__ = f"make_{mode}_screen"
    return make


PANE_MODES: dict[str, str | Callable[[], Screen]] = {mode: pane_mode(mode) for mode in PANE_SCREENS}

#: Loaded ahead of their first use once the first sync is done (:func:`import_pane_modules`).
LATER_MODULES = (*(module for module, _ in PANE_SCREENS.values()), "tau_tui.screens.multikueue_wizard")


def import_pane_modules(between: Callable[[], object] | None = None) -> list[str]:
    """A worker thread, after the first frame: every pane's module, so that a pane's first open
    does not import it on the UI thread.  ``between`` runs before each module (the app's worker
    naps there while keys come).  Returns the modules it loaded."""
    loaded = [name for name in LATER_MODULES if name not in sys.modules]
    for name in loaded:
        if between is not None:
            between()
        importlib.import_module(name)
    return loaded
