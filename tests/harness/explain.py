"""What a live control plane says about pods that did not run: for a timeout's message."""

from __future__ import annotations

from kubernetes import client as k8s

EVENTS_SHOWN = 15


def _conditions(conditions: list[tuple]) -> str:
    """(type, status, reason, message) of each condition, on one line."""
    return ", ".join(f"{kind}={status}" + (f" ({reason}: {message})" if reason or message else "")
                     for kind, status, reason, message in conditions) or "no conditions"


def why_pods_wait(api_client: k8s.ApiClient, namespace: str, label_selector: str) -> str:
    """The namespace's Workloads, the selected pods, every node and the namespace's latest events."""
    core = k8s.CoreV1Api(api_client)
    lines = []
    workloads = k8s.CustomObjectsApi(api_client).list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", namespace, "workloads")["items"]
    for workload in workloads:
        conditions = [(c["type"], c["status"], c.get("reason"), c.get("message"))
                      for c in workload.get("status", {}).get("conditions", [])]
        lines.append(f"Workload {workload['metadata']['name']}: {_conditions(conditions)}")
    for pod in core.list_namespaced_pod(namespace, label_selector=label_selector).items:
        lines.append(f"Pod {pod.metadata.name}: {pod.status.phase} on {pod.spec.node_name or '(unbound)'}; "
                     f"selector {pod.spec.node_selector}; "
                     + _conditions([(c.type, c.status, c.reason, c.message) for c in pod.status.conditions or []]))
    all_pods = core.list_pod_for_all_namespaces().items
    for node in core.list_node().items:
        bound = [f"{p.metadata.namespace}/{p.metadata.name} ({p.status.phase})"
                 for p in all_pods if p.spec.node_name == node.metadata.name]
        lines.append(f"Node {node.metadata.name}: unschedulable={bool(node.spec.unschedulable)} "
                     f"taints={[f'{t.key}:{t.effect}' for t in node.spec.taints or []]} "
                     f"gpus={(node.status.allocatable or {}).get('nvidia.com/gpu')} "
                     f"Ready={[c.status for c in node.status.conditions or [] if c.type == 'Ready']} "
                     f"pods={bound}")
    events = sorted(core.list_namespaced_event(namespace).items,
                    key=lambda e: str(e.last_timestamp or e.event_time or e.metadata.creation_timestamp))
    for event in events[-EVENTS_SHOWN:]:
        lines.append(f"Event {event.involved_object.kind}/{event.involved_object.name}: {event.reason}: {event.message}")
    return "\n".join(lines)
