"""Cancel and stop-policy (hold / hold-and-drain / resume) as
:class:`~tau_tui.mutations.mutation.Mutation` objects (cordon and uncordon: :mod:`tau_tui.mutations.node_changes`).

Each mutation is a closure over the backend call; ``run(True)`` is the server
dry-run preview, ``run(False)`` the real change.  The app confirms, runs and
audits them (:meth:`tau_tui.app.TauApp.request_mutation`)."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.mutations import StopPolicy
from tau_tui.core.operations.admission_fit import human
from tau_tui.mutations.mutation import ClusterHost, Mutation


def cancel_mutation(app: ClusterHost, kind: ResourceKind, namespace: str, name: str) -> Mutation:
    def run(dry_run: bool):
        assert app.backend is not None
        return app.backend.cancel(kind, namespace, name, dry_run=dry_run)

    return Mutation(
        verb="cancel",
        target=f"{kind.type.kind} {namespace}/{name}",
        title=f"Cancel {kind.type.kind} {namespace}/{name}? Its pods stop and Kueue releases the quota.",
        run=run,
        namespace=namespace,
        decline="Keep",
    )


STOP_VERBS = {"Hold": "hold", "HoldAndDrain": "hold-and-drain", "None": "resume"}


def stop_policy_mutation(app: ClusterHost, kind: ResourceKind, name: str, namespace: str | None, policy: StopPolicy) -> Mutation:
    def run(dry_run: bool):
        assert app.backend is not None
        return app.backend.set_stop_policy(kind, name, policy, namespace, dry_run=dry_run)

    where = f"{namespace}/{name}" if namespace else name
    what = {
        "Hold": "stops admitting new workloads; admitted ones keep running",
        "HoldAndDrain": "stops admitting AND evicts admitted workloads",
        "None": "admits workloads again",
    }[policy]
    def affected() -> list[str]:
        assert app.backend is not None
        return queue_impact(app.backend, kind, name, namespace)

    return Mutation(
        verb=STOP_VERBS[policy],
        target=f"{kind.type.kind} {where}",
        title=f"{STOP_VERBS[policy].capitalize()} {kind.type.kind} {where}: {what}.",
        run=run,
        namespace=namespace,
        affected=affected,
    )


def queue_impact(backend, kind: ResourceKind, name: str, namespace: str | None) -> list[str]:
    """The workloads a stop policy on this queue touches: how many admitted and pending,
    the GPUs and memory the admitted ones hold, and whose they are (namespaces, teams)."""
    if kind == ResourceKind.CLUSTER_QUEUE:
        local = {(q.namespace, q.name) for q in backend.local_queues() if q.cluster_queue == name}
        mine = [wl for wl in backend.workloads() if wl.cluster_queue == name or (wl.namespace, wl.queue_name) in local]
    else:
        mine = [wl for wl in backend.workloads(namespace) if wl.queue_name == name and wl.namespace == namespace]
    live = [wl for wl in mine if wl.status_word != "finished"]
    admitted = [wl for wl in live if wl.status_word in ("admitted", "quotaReserved")]
    held: dict[str, float] = {}
    for wl in admitted:
        for pod_set in wl.pod_sets:
            for resource, value in pod_set.requests.items():
                held[resource] = held.get(resource, 0.0) + value * pod_set.count
    gpus = sum(v for r, v in held.items() if r.startswith("nvidia.com/"))
    owners = sorted({wl.namespace or "" for wl in live})
    teams = sorted({(wl.labels or {}).get("tau.azure.com/team", "") for wl in live} - {""})
    lines = [f"{len(admitted)} admitted workload(s), {len(live) - len(admitted)} pending",
             f"admitted ones hold {human(gpus, 'gpu')} GPU(s), {human(held.get('memory', 0.0), 'memory')} memory, "
             f"{human(held.get('cpu', 0.0), 'cpu')} CPU"]
    lines.append("owners: " + (", ".join(f"namespace {ns}" for ns in owners) or "none")
                 + (f"; teams {', '.join(teams)}" if teams else ""))
    return lines

