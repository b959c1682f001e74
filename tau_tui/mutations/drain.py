"""Node drain for the Nodes pane: plan with :mod:`tau_tui.core.operations.drain` (which pods
would be evicted, which are skipped, PodDisruptionBudgets that block, the
cluster-wide drain budget), server dry-run of the evictions, then — only if
nothing blocks and the user confirms — the backend's Eviction-API drain, with
the node annotated as drain-started so the budget's rate limit sees it.

Everything here runs in the app's mutation workers (network I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.mutations import DrainResult
from tau_tui.core.operations.drain import ANNOTATION_DRAIN_STARTED, DrainPlan, plan_drain
from tau_tui.mutations.mutation import ClusterHost, Mutation


@dataclass
class DrainInputs:
    pods: list[dict] = field(default_factory=list)
    pdbs: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _api_error(err: Exception) -> str:
    return getattr(err, "message", None) or str(err)


def read_drain_inputs(backend: ClusterBackend, node: str) -> DrainInputs:
    """Pods on the node and the PDBs of their namespaces straight from the API
    (the cache may be namespace-scoped), all nodes from the cache."""
    inputs = DrainInputs(nodes=[dict(n.raw) for n in backend.nodes()])
    try:
        inputs.pods, inputs.pdbs, inputs.problems = backend.drain_inputs(node)
    except ClusterError as err:
        inputs.problems.append(f"cannot list the pods on {node}: {err.message}")
    return inputs


@dataclass
class DrainPreview:
    plan: DrainPlan | None
    dry_run: DrainResult | None
    text: str
    #: True only when the plan allows the drain and the server dry-run passed.
    allowed: bool


def preview_drain(backend: ClusterBackend, node: str, now: datetime) -> DrainPreview:
    inputs = read_drain_inputs(backend, node)
    lines: list[str] = []
    if not inputs.pods and inputs.problems and inputs.problems[0].startswith("cannot list"):
        return DrainPreview(None, None, "✗ " + inputs.problems[0], False)
    plan = plan_drain(node, inputs.pods, inputs.pdbs, inputs.nodes, now)
    budget = plan.budget
    lines.append(("✓ " if budget.allowed else "✗ ") + f"drain budget: {budget.explanation}")
    lines.append("")
    lines.append(f"would evict ({len(plan.evict)}):")
    lines += [f"  → {p.namespace}/{p.name}" + (f"  ({p.owner})" if p.owner else "") for p in plan.evict] or ["  (none)"]
    if plan.skipped:
        lines.append(f"stay ({len(plan.skipped)}):")
        lines += [f"  – {s.pod.namespace}/{s.pod.name}: {s.why}" for s in plan.skipped]
    if plan.blockers:
        lines.append("BLOCKED:")
        lines += [f"  ✗ {b}" for b in plan.blockers]
    warnings = list(plan.warnings) + inputs.problems + [
        f"cordon-timestamp on {why}: not counted as a recent drain" for why in budget.untrusted_cordon_times
    ]
    if warnings:
        lines.append("warnings:")
        lines += [f"  ⚠ {w}" for w in warnings]
    dry_run: DrainResult | None = None
    if plan.allowed:
        try:
            dry_run = backend.drain(node, dry_run=True)
        except Exception as err:
            lines.append(f"✗ server dry-run failed: {_api_error(err)}")
        else:
            lines.append("")
            if dry_run.ok:
                lines.append(f"✓ server dry-run passed: cordon and {len(dry_run.evicted)} eviction(s) accepted")
            else:
                lines.append("✗ server dry-run FAILED:")
                if not dry_run.cordoned:
                    lines.append("  cordon refused")
                lines += [f"  ✗ {f.name}: {f.message}" for f in dry_run.failed]
    else:
        lines.append("")
        lines.append("not drained: fix the blockers above (or wait for the budget), then try again")
    allowed = plan.allowed and dry_run is not None and dry_run.ok
    return DrainPreview(plan, dry_run, "\n".join(lines), allowed)


def apply_drain(backend: ClusterBackend, node: str, now: datetime) -> tuple[bool, str]:
    """Re-plan (the cluster may have moved since the preview), then cordon and
    evict through the Eviction API, and mark the node drain-started."""
    preview = preview_drain(backend, node, now)
    if preview.plan is None or not preview.plan.allowed:
        return False, "drain refused at apply time:\n" + preview.text
    note = ""
    marked = backend.annotate_node(node, {ANNOTATION_DRAIN_STARTED: now.strftime("%Y-%m-%dT%H:%M:%SZ")})
    if not marked.ok:  # the drain itself can still proceed; say the budget will not see it
        note = f"\n⚠ could not annotate {node} as drain-started ({marked.message}); the budget's rate limit will not count it"
    result = backend.drain(node)
    lines = [f"node {node}: " + ("cordoned" if result.cordoned else "NOT cordoned")]
    lines += [f"  evicted {ref}" for ref in result.evicted] or ["  no pods to evict"]
    lines += [f"  stayed  {ref} (DaemonSet, mirror or finished)" for ref in result.skipped]
    lines += [f"  FAILED  {f.name}: {f.message}" for f in result.failed]
    return result.ok, "\n".join(lines) + note


def drain_mutation(app: ClusterHost, node: str) -> Mutation:
    def preview() -> tuple[bool, str, bool]:
        assert app.backend is not None
        result = preview_drain(app.backend, node, app.now())
        return result.allowed, result.text, result.allowed

    def run(dry_run: bool) -> Any:
        assert app.backend is not None
        if dry_run:
            return preview()
        return apply_drain(app.backend, node, app.now())

    return Mutation(
        verb="drain",
        target=f"Node {node}",
        title=f"Drain node {node}? It is cordoned and the pods below are evicted through the Eviction API "
              f"(PodDisruptionBudgets respected).",
        run=run,
        preview=preview,
    )
