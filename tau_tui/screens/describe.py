"""``d`` describe and ``y`` YAML for any object a pane shows, in an
:class:`~tau_tui.widgets.object_dialog.ObjectDialog`."""

from __future__ import annotations

from tau_tui.core.cluster.view_types import ObjectView, PodView
from tau_tui.screens.host import PaneHost
from tau_tui.widgets.object_dialog import ObjectDialog, to_yaml_text


def describe_object(app: PaneHost, obj: ObjectView, yaml_view: bool) -> None:
    kind = obj.kind.type.kind
    where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
    if yaml_view:
        app.push_screen(ObjectDialog(f"{kind} {where} (YAML)", to_yaml_text(obj.raw)))
        return
    lines = [f"{kind} {where}", f"uid {obj.uid}", f"created {obj.creation_timestamp}"]
    if obj.labels:
        lines.append("labels:")
        lines += [f"  {k}={v}" for k, v in sorted(obj.labels.items())]
    if isinstance(obj, PodView):
        lines.append(f"phase {obj.phase} on {obj.node_name or 'no node yet'}")
        lines.append("containers:")
        for cs in obj.container_statuses or ():
            kind = "init " if cs.init else ""
            lines.append(f"  {kind}{cs.name}: {cs.state}{' ' + cs.reason if cs.reason else ''}, "
                         f"{'ready' if cs.ready else 'not ready'}, restarts {cs.restart_count}")
        if not obj.container_statuses:
            lines += [f"  {name}: no status yet" for name in (*obj.init_containers, *obj.containers)]
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
