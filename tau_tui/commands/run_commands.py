"""`status`, `runs` and `cancel`: one-shot reads and the cancel of Tau-managed runs."""

from __future__ import annotations

import argparse
import sys

from ..core.runconfig.diagnostics import escape_control
from .connection import request_timeouts
from .parser import EXIT_FAILED, EXIT_OK

#: With --demo --watch the simulated clock moves instead of the wall clock; a run still
#: starting after this much simulated time is reported as such.
DEMO_WATCH_LIMIT_SECONDS = 3600.0


def _read_backend(args: argparse.Namespace):
    """A backend for one-shot reads: the simulated cluster, or the real one with no watch started
    (refused when its Kueue serves no v1beta2: :class:`UnsupportedKueueApi`; one warning line when its
    Kubernetes and Kueue are outside the tested version matrix)."""
    if args.demo is not None:
        from ..core.sim.backend import SimulatedBackend
        from ..core.sim.scenario import build_world

        return SimulatedBackend(build_world(args.demo), namespace=args.namespace)
    from ..core.cluster.kueue_api_support import refuse_unsupported_kueue
    from ..core.cluster.real import KubernetesBackend
    from ..core.operations.found_versions import outside_tested_matrix_warning

    backend = KubernetesBackend(context=args.context, namespace=args.namespace, timeouts=request_timeouts(args))
    discovered = refuse_unsupported_kueue(backend)  # a Kueue without v1beta2: one line and exit 7, not empty answers
    if (warning := outside_tested_matrix_warning(backend, discovered)) is not None:
        print(escape_control(f"tau-tui: warning: {warning}"), file=sys.stderr)
    return backend


def _workspace_namespace(args: argparse.Namespace, backend) -> str | None:
    """``--workspace WS`` without -n: the workspace's namespace (taugrid.md §2.4: the run lifecycle's
    connection flags).  A workspace that cannot be found is an error (ClusterError), never ignored."""
    if not getattr(args, "workspace", None) or args.namespace:
        return None
    from ..core.cluster.workspaces import find_workspace

    found = find_workspace(backend, args.workspace, getattr(args, "system_namespace", None))
    assert found is not None  # a named workspace is found or raises
    return found.namespace


def _namespace_of(args: argparse.Namespace, backend) -> str:
    """One run's namespace: -n, else --workspace's, else the context's (a kubeconfig's backend starts in
    it), else default."""
    from ..core.cluster.namespace_scope import object_namespace

    return _workspace_namespace(args, backend) or object_namespace(args.namespace, backend.namespace)


def _list_scope(args: argparse.Namespace, backend) -> str | None:
    """What a list covers: -n, else every namespace with -A, else the context's namespace, else every one."""
    from ..core.cluster.namespace_scope import context_namespace, list_scope

    if (from_workspace := _workspace_namespace(args, backend)) is not None:
        return from_workspace
    source = getattr(backend, "source", None)  # a kubeconfig's; the simulated cluster has no context namespace
    found = context_namespace(source, backend.current_context) if source is not None else None
    return list_scope(args.namespace, found, getattr(args, "all_namespaces", False))


def _print_document(doc, output: str, lines: list[str], stream_json: bool = False) -> None:
    import json

    if output == "json":
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) if stream_json else json.dumps(doc, indent=2, ensure_ascii=False)
        print(text)
    elif output == "yaml":
        import yaml

        print(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, explicit_start=stream_json), end="")
    else:
        # Names and messages come from the cluster: escaped, never printed raw.
        for line in lines:
            print(escape_control(line))
    sys.stdout.flush()


def cmd_status(args: argparse.Namespace) -> int:
    import time
    from datetime import UTC, datetime

    from ..core.operations.recovery import retry_decision
    from ..core.operations.run_position import read_queue_place
    from ..core.operations.rundocument import event_lines, read_gpu_faults, read_run, status_document, status_lines
    from ..core.operations.runstatus import compute_run_status

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    last = None
    waited = 0.0
    while True:
        now = backend.world.now() if args.demo is not None else datetime.now(UTC)
        objs = read_run(backend, namespace, args.run, read_gpu_faults(backend, now))
        status = compute_run_status(objs)
        # A failed run says whether it will be retried (now, after the backoff, never and why).
        retry = retry_decision(objs, now) if status.state == "failed" else None
        place = read_queue_place(backend, objs, now) if status.state == "queued" else None  # its place in line, why it waits
        doc = status_document(status, objs, retry, place)
        if doc != last:
            if last is not None and args.output == "table":
                print()
            lines = status_lines(status, retry, place) + (event_lines(objs, now) if getattr(args, "events", False) else [])
            _print_document(doc, args.output, lines, stream_json=args.watch)
            last = doc
        if not args.watch or status.state == "not_found":
            return EXIT_OK if status.state != "not_found" else EXIT_FAILED
        if status.state == "failed" or status.startup_failed:
            return EXIT_FAILED
        if status.startup_complete or status.state == "succeeded":
            return EXIT_OK
        if args.demo is not None:
            if waited >= DEMO_WATCH_LIMIT_SECONDS:
                print(f"tau-tui: {namespace}/{args.run} is still {status.display_state} after "
                      f"{int(waited)}s of simulated time", file=sys.stderr)
                return EXIT_FAILED
            backend.world.advance(args.interval)
        else:
            time.sleep(args.interval)
        waited += args.interval


def cmd_runs(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from ..core.operations.rundocument import list_document, list_lines, list_statuses, read_gpu_faults, read_run_owners

    backend = _read_backend(args)
    now = backend.world.now() if args.demo is not None else datetime.now(UTC)
    scope = _list_scope(args, backend)  # as the Runs pane starts
    owners = read_run_owners(backend, scope, queue=args.queue, include_external=args.include_external)
    statuses = list_statuses(backend, scope, owners, read_gpu_faults(backend, now))
    doc = list_document(scope, owners, now, statuses)
    _print_document(doc, args.output, list_lines(doc))
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    import time
    from dataclasses import replace

    from ..core.cluster.kinds import ResourceKind
    from ..core.operations.demo_trust import audit_log_for
    from ..core.operations.multikueue_steps.worker_logs import worker_log_backend
    from ..core.operations.multikueue_steps.worker_release import DispatchWorkers, dispatch_workers, read_pods_on_worker
    from ..core.operations.rundocument import read_run
    from ..core.operations.runstatus import compute_run_status
    from ..settings.settings_file import load_settings

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    objs = read_run(backend, namespace, args.run)
    if objs.job is None and objs.ray_job is None:
        print(escape_control(f"tau-tui: no Job or RayJob {namespace}/{args.run}; tau-tui runs -n {namespace} lists them"),
              file=sys.stderr)
        return EXIT_FAILED
    dry_run = args.dry_run == "server"
    # A MultiKueue run holds GPUs on a worker: read before the delete (its Workload goes with it),
    # which workers may hold its pods, even when an eviction cleared the Workload's clusterName.
    dispatch = dispatch_workers(backend, objs) if args.wait and not dry_run else DispatchWorkers()
    kind = ResourceKind.JOB if objs.job is not None else ResourceKind.RAY_JOB
    target = f"{kind.type.kind} {namespace}/{args.run}"
    audit = audit_log_for(args.demo is not None, "cli")  # the demo's own log, apart from yours
    where = {"context": backend.current_context, "namespace": namespace, "identity": backend.who_am_i()}
    audit.append("cancel", target, ok=None, message=f"delete {target} and its headless Service", dry_run=dry_run, phase="preview" if dry_run else "intent", **where)
    result = backend.cancel(kind, namespace, args.run, dry_run=dry_run)
    audit.append("cancel", target, ok=result.ok, dry_run=dry_run, message=result.message,
                 phase="preview" if dry_run else "outcome", **where)
    print(escape_control(result.message), file=sys.stdout if result.ok else sys.stderr, flush=True)
    if not result.ok:
        return EXIT_FAILED
    if not args.wait or dry_run:
        return EXIT_OK
    if dispatch.problem:
        print(escape_control(f"tau-tui: {namespace}/{args.run}: release unknown: {dispatch.problem}"), file=sys.stderr)
        return EXIT_FAILED
    contexts = load_settings().settings.worker_contexts if dispatch.workers else {}
    worker_backends = {w: worker_log_backend(backend, w, contexts) for w in dispatch.workers}
    if len(dispatch.workers) > 1 or dispatch.why.startswith("no clusterName"):
        print(escape_control(f"{namespace}/{args.run}: dispatched through MultiKueue; asking workers "
                             f"{', '.join(dispatch.workers)} ({dispatch.why})"), flush=True)
    ray_cluster = objs.ray_job.ray_cluster_name if objs.ray_job is not None else None
    last = ""
    waited, started = 0.0, time.monotonic()  # the demo's clock is simulated: there, count its seconds
    while True:
        manager = replace(read_run(backend, namespace, args.run, ray_cluster=ray_cluster), cancelled=True)
        reads = [read_pods_on_worker(w, worker_backends[w], namespace, args.run, ray_job=objs.ray_job is not None,
                                     ray_cluster=ray_cluster) for w in dispatch.workers]
        unknown = [r for r in reads if r.pods is None]
        statuses = [compute_run_status(replace(manager, worker=r.worker, worker_pods=r.pods, worker_owners=r.owners))
                    for r in reads if r.pods is not None] or [compute_run_status(manager)]
        pending = [s for s in statuses if s.state != "cancelled"]
        if not pending and not unknown:
            print(f"{namespace}/{args.run}: cancelled; compute released")
            return EXIT_OK
        if pending:
            status = pending[0]
            release = status.phase("Compute release")
            line = f"{namespace}/{args.run}: {status.display_state}" + (f": {release.detail}" if release and release.detail else "")
            if line != last:
                print(escape_control(line))
                sys.stdout.flush()
                last = line
        if unknown:
            # Nothing here can confirm the release on these workers: say so, never "released".
            for r in unknown:
                hint = (f" (worker_contexts: {{{r.worker}: CONTEXT}})" if worker_backends.get(r.worker) is None else "")
                print(escape_control(f"tau-tui: {namespace}/{args.run}: release on worker {r.worker} unknown: "
                                     f"{r.problem}{hint}; its pods may still hold GPUs there"), file=sys.stderr)
            return EXIT_FAILED
        elapsed = waited if args.demo is not None else time.monotonic() - started
        if args.teardown_timeout and elapsed >= args.teardown_timeout:
            print(escape_control(f"tau-tui: {namespace}/{args.run} is still releasing compute after {int(elapsed)}s "
                                 f"(--teardown-timeout); its pods may still hold GPUs: tau-tui status {args.run} -n {namespace}"),
                  file=sys.stderr)
            return EXIT_FAILED
        if args.demo is not None:
            backend.world.advance(args.interval)
        else:
            time.sleep(args.interval)
        waited += args.interval
