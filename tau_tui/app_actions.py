"""The app's mutations as :class:`tau_tui.app.Mutation` objects, plus describe/YAML views.

Each mutation is a closure over the backend call; ``run(True)`` is the server
dry-run preview, ``run(False)`` the real change.  The app confirms, runs and
audits them (:meth:`tau_tui.app.TauApp.request_mutation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView
from tau_tui.widgets.object_dialog import ObjectDialog, to_yaml_text

if TYPE_CHECKING:
    from tau_tui.app import Mutation, TauApp


def _mutation(**kwargs: Any) -> "Mutation":
    from tau_tui.app import Mutation

    return Mutation(**kwargs)


def cancel_mutation(app: "TauApp", kind: ResourceKind, namespace: str, name: str) -> "Mutation":
    def run(dry_run: bool):
        assert app.backend is not None
        return app.backend.cancel(kind, namespace, name, dry_run=dry_run)

    return _mutation(
        verb="cancel",
        target=f"{kind.type.kind} {namespace}/{name}",
        title=f"Cancel {kind.type.kind} {namespace}/{name}? Its pods stop and Kueue releases the quota.",
        run=run,
        namespace=namespace,
    )


STOP_VERBS = {"Hold": "hold", "HoldAndDrain": "hold-and-drain", "None": "resume"}


def stop_policy_mutation(app: "TauApp", kind: ResourceKind, name: str, namespace: str | None, policy: str) -> "Mutation":
    def run(dry_run: bool):
        assert app.backend is not None
        return app.backend.set_stop_policy(kind, name, policy, namespace, dry_run=dry_run)  # type: ignore[arg-type]

    where = f"{namespace}/{name}" if namespace else name
    what = {
        "Hold": "stops admitting new workloads; admitted ones keep running",
        "HoldAndDrain": "stops admitting AND evicts admitted workloads",
        "None": "admits workloads again",
    }[policy]
    return _mutation(
        verb=STOP_VERBS[policy],
        target=f"{kind.type.kind} {where}",
        title=f"{STOP_VERBS[policy].capitalize()} {kind.type.kind} {where}: {what}.",
        run=run,
        namespace=namespace,
    )


def node_mutation(app: "TauApp", verb: str, node: str) -> "Mutation":
    """Cordon or uncordon (drain has its own plan: :mod:`tau_tui.app_drain`)."""
    def run(dry_run: bool):
        assert app.backend is not None
        if verb == "cordon":
            return app.backend.cordon(node, dry_run=dry_run)
        return app.backend.uncordon(node, dry_run=dry_run)

    titles = {
        "cordon": f"Cordon node {node}? No new pods are scheduled on it; running pods stay.",
        "uncordon": f"Uncordon node {node}? It accepts new pods again.",
    }
    return _mutation(verb=verb, target=f"Node {node}", title=titles[verb], run=run)


def describe_object(app: "TauApp", obj: ObjectView, yaml_view: bool) -> None:
    kind = obj.kind.type.kind
    where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
    if yaml_view:
        app.push_screen(ObjectDialog(f"{kind} {where} (YAML)", to_yaml_text(obj.raw)))
        return
    lines = [f"{kind} {where}", f"uid {obj.uid}", f"created {obj.creation_timestamp}"]
    if obj.labels:
        lines.append("labels:")
        lines += [f"  {k}={v}" for k, v in sorted(obj.labels.items())]
    if obj.conditions:
        lines.append("conditions:")
        for c in obj.conditions:
            lines.append(f"  {c.type}={c.status} {c.reason} {c.message}".rstrip())
    backend = app.backend
    if backend is not None:
        events = [e for e in backend.events(obj.namespace) if e.involved_name == obj.name]
        if events:
            lines.append("events:")
            for e in events[-15:]:
                lines.append(f"  {e.type:<8} {e.reason:<20} {e.message}")
    app.push_screen(ObjectDialog(f"describe {kind} {where}", "\n".join(lines), yaml_syntax=False))
