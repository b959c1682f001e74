"""What the user types outside a pane: the app's key bindings and the words of ``:`` command mode."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from tau_tui.widgets.header_bar import PANES

#: ``:`` command aliases → pane.
PANE_ALIASES = {
    "compose": "compose", "new": "compose", "edit": "compose", "co": "compose",
    "profiles": "profiles", "profile": "profiles", "prof": "profiles", "pr": "profiles",
    "queue": "queue", "queues": "queue", "qu": "queue", "kq": "queue", "cq": "queue", "lq": "queue",
    "wl": "queue", "workloads": "queue", "workload": "queue",
    "runs": "runs", "run": "runs", "jobs": "runs", "job": "runs", "rayjobs": "runs", "rj": "runs",
    "logs": "logs", "log": "logs",
    "nodes": "nodes", "node": "nodes", "no": "nodes", "gpu": "nodes", "gpus": "nodes",
    "multikueue": "multikueue", "mk": "multikueue", "mkc": "multikueue", "admissionchecks": "multikueue", "ac": "multikueue",
    "evidence": "evidence", "ev": "evidence", "records": "evidence",
    "pods": "pods", "pod": "pods", "po": "pods",
    "events": "events", "event": "events",
    "workspaces": "workspaces", "workspace": "workspaces", "ws": "workspaces", "tw": "workspaces",
}


MULTIKUEUE_FLOWS = ("setup", "drain", "rotate")


#: The app's own keys (panes add theirs).
APP_BINDINGS: list[BindingType] = [
    # priority: handled before the next key is routed (see app_components/command_mode.py); skipped inside text fields
    Binding("colon", "command", ":cmd", id="app.command", key_display=":", priority=True),
    Binding("slash", "filter", "/filter", id="app.filter", key_display="/", priority=True),
    Binding("escape", "back", "Back", id="app.back", show=False),
    Binding("question_mark,f1", "help", "Help", id="app.help", key_display="?"),
    # ctrl+c quits as in k9s (through the unsaved-work guard), even from a text field
    Binding("ctrl+q,ctrl+c", "quit", "Quit", id="app.quit", show=False, priority=True),
    *[Binding(key, f"switch_pane('{mode}')", label, id=f"app.pane.{mode}", show=False) for key, mode, label in PANES],
    # alt+digit switches from inside a text field too, and never types the digit (priority: before the Input).
    *[Binding(f"alt+{key}", f"switch_pane('{mode}')", label, id=f"app.pane_alt.{mode}", show=False, priority=True)
      for key, mode, label in PANES],
]
