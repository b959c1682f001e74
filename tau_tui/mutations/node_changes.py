"""Cordon and uncordon as :class:`~tau_tui.mutations.mutation.Mutation` objects (drain has its own
plan: :mod:`tau_tui.mutations.drain`).

A cordon takes a GPU node out of service as a drain does, so it counts against the same
cluster-wide drain budget (:func:`~tau_tui.core.operations.drain.check_drain_budget`): its preview
shows the budget as the drain's does, a cordon over the budget is refused, and the budget is
checked again when it is applied.  An uncordon puts a node back in service: when its GPUs report a
fault (or nobody can tell), the preview names it first, and the pane asks for that on its own
before the usual confirmation (:func:`gpu_health_warning`).

``preview()`` and ``run()`` run in the app's mutation workers (network I/O)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import MutationResult
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.operations.drain import DrainBudget, check_drain_budget
from tau_tui.core.operations.gpufaults import fault_of, node_health_view
from tau_tui.mutations.mutation import ClusterHost, Mutation, describe_result

TITLES = {
    "cordon": "Cordon node {node}? No new pods are scheduled on it; running pods stay.",
    "uncordon": "Uncordon node {node}? It accepts new pods again.",
}


def gpu_health_warning(node: NodeView, now: datetime) -> str | None:
    """Why putting ``node`` back in service is risky: an active GPU fault (named, with its GPUs and
    who reported it), a degraded GPU, or GPU health nobody can tell; None for a healthy node or one
    without GPUs."""
    view = node_health_view(node, now)
    if view is None:
        return None
    fault = fault_of(node, view)
    if fault is not None:
        what = "an active GPU fault" if fault.verdict == Verdict.UNHEALTHY.value else "a degraded GPU"
        return f"{node.name} has {what}: {fault.describe()}"
    if view.verdict is Verdict.UNKNOWN:
        why = f"{view.reason}: {view.message}" if view.message else view.reason
        return f"{node.name}'s GPU health is unknown ({why}): a fault there would not show"
    return None


def cordon_budget(backend: ClusterBackend, node: str, now: datetime) -> DrainBudget:
    """The drain budget as a cordon of ``node`` would use it (every node from the cache)."""
    return check_drain_budget(node, [dict(n.raw) for n in backend.nodes()], now, action="cordoning")


def _dry_run_lines(result: Any) -> tuple[bool, list[str]]:
    ok, text = describe_result(result)
    return ok, [("✓ server dry-run passed: " if ok else "✗ server dry-run FAILED: ") + text]


def preview_node_change(backend: ClusterBackend, verb: str, node: str, now: datetime) -> tuple[bool, str, bool]:
    """(ok, text, allowed): for a cordon the budget (as the drain shows it) then the server dry-run;
    for an uncordon the node's GPU fault, when it has one, then the server dry-run."""
    lines: list[str] = []
    allowed = True
    if verb == "cordon":
        budget = cordon_budget(backend, node, now)
        allowed = budget.allowed
        lines.append(("✓ " if budget.allowed else "✗ ") + f"drain budget (a cordon counts as a drain): {budget.explanation}")
        lines += [f"  ⚠ cordon-timestamp on {why}: not counted as a recent drain" for why in budget.untrusted_cordon_times]
        if not budget.allowed:
            lines += ["", "not cordoned: wait for the budget, or bring a node back first"]
            return False, "\n".join(lines), False
    else:
        view = backend.get(ResourceKind.NODE, node)
        warning = gpu_health_warning(view, now) if isinstance(view, NodeView) else f"{node} is not in the cache"
        if warning:
            lines += [f"⚠ {warning}", "  uncordoning lets new pods be scheduled onto it", ""]
    ok, dry_run = _dry_run_lines(_call(backend, verb, node, dry_run=True))
    lines += dry_run
    return ok, "\n".join(lines), allowed and ok


def _call(backend: ClusterBackend, verb: str, node: str, dry_run: bool) -> MutationResult:
    return backend.cordon(node, dry_run=dry_run) if verb == "cordon" else backend.uncordon(node, dry_run=dry_run)


def apply_node_change(backend: ClusterBackend, verb: str, node: str, now: datetime) -> Any:
    """The change; a cordon checks the budget again first (the cluster may have moved since the preview)."""
    if verb == "cordon":
        budget = cordon_budget(backend, node, now)
        if not budget.allowed:
            return False, f"cordon refused at apply time: drain budget: {budget.explanation}"
    return _call(backend, verb, node, dry_run=False)


def node_mutation(app: ClusterHost, verb: str, node: str) -> Mutation:
    """Cordon or uncordon ``node``, previewed as :func:`preview_node_change` says."""
    def preview() -> tuple[bool, str, bool]:
        assert app.backend is not None
        return preview_node_change(app.backend, verb, node, app.now())

    def run(dry_run: bool) -> Any:
        assert app.backend is not None
        if dry_run:
            ok, text, _ = preview()
            return ok, text
        return apply_node_change(app.backend, verb, node, app.now())

    return Mutation(verb=verb, target=f"Node {node}", title=TITLES[verb].format(node=node), run=run, preview=preview)
