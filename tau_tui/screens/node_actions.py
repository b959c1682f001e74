"""Cordon and uncordon from the Nodes pane and a node's drill-down.

Uncordoning a node whose GPUs report a fault (or whose GPU health nobody can tell) is asked about
on its own first: a dialog names the fault and offers "Uncordon anyway"; only a yes there goes on to
the usual preview (server dry-run, the fault named again) and its confirmation.  ``esc`` or ``n``
leaves the node cordoned."""

from __future__ import annotations

from rich.text import Text

from tau_tui.core.cluster.view_types import NodeView
from tau_tui.mutations.node_changes import gpu_health_warning, node_mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.widgets.confirm_dialog import ConfirmDialog


def request_node_change(screen: PaneScreen, verb: str, node: str, view: NodeView | None) -> None:
    """Ask for a cordon or an uncordon of ``node`` (``view``: the node as the pane read it)."""
    host = screen.tau
    warning = gpu_health_warning(view, host.now()) if verb == "uncordon" and view is not None else None
    if warning is None:
        host.request_mutation(node_mutation(host, verb, node))
        return

    def answered(yes: bool | None) -> None:
        if yes:
            host.request_mutation(node_mutation(host, verb, node))
        else:
            screen.notify(f"uncordon Node {node}: not done; it stays cordoned")

    body = Text()
    body.append(f"⚠ {warning}\n\n", style="bold")
    body.append("Uncordoning lets new pods be scheduled onto it, and a run placed there may fail the same way. "
                "The next step previews the uncordon (server dry-run) and asks again.")
    screen.app.push_screen(ConfirmDialog(f"Uncordon {node}? Its GPUs are not known to be healthy", body,
                                   verb="Uncordon anyway", decline="Keep cordoned"), answered)
