"""`tau-tui logs RUN`: a run's logs, headless, as TauGrid's `tau run logs` reads them.

A Job's pods by ``job-name``; a RayJob's driver output (``ray job logs`` in its head, else the
head's log-offload sidecar), and with ``--all`` the head's and workers' containers merged after it.
Every line goes through the app's spool (nothing dropped, however fast the run writes), and is
printed in the order the merge wrote it; ``-f`` follows the run across its pods (a retried Job's
next pod) and ends once the run has ended and every source has been read to its end."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .run_commands import _namespace_of, _read_backend

#: With --demo -f the simulated clock moves (DEMO_STEP_SECONDS a round); this much simulated time at most.
DEMO_FOLLOW_LIMIT_SECONDS = 3600.0
DEMO_STEP_SECONDS = 5.0
#: How long one wait for new lines lasts (the loop also notices the stream's end).
WAIT_S = 0.2

def cmd_logs(args: argparse.Namespace) -> int:
    from ..core.cluster.errors import ClusterError
    from ..core.cluster.logspool.log_requests import LogRequest
    from ..core.cluster.logspool.spool_dirs import process_spool_dir
    from ..core.operations.audit import state_dir
    from ..core.operations.rundocument import read_run

    if args.tail is not None and args.tail < 0:
        print("tau-tui: --tail takes a number of lines, 0 or more", file=sys.stderr)
        return EXIT_INVALID
    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    objs = read_run(backend, namespace, args.run)
    owner = objs.job or objs.ray_job
    if owner is None:
        print(escape_control(f"tau-tui: no Job or RayJob {namespace}/{args.run}; tau-tui runs -n {namespace} lists them"),
              file=sys.stderr)
        return EXIT_FAILED
    is_ray = objs.ray_job is not None
    log_backend = _backend_for_pods(backend, objs)
    if log_backend is None:
        return EXIT_FAILED
    request = LogRequest(
        namespace=namespace, job=None if is_ray else args.run, ray_job=args.run if is_ray else None,
        follow=args.follow and not args.previous, previous=args.previous, all_containers=args.all,
        since_seconds=int(args.since) if args.since else None, tail_lines=args.tail,
        driver=not args.previous, containers=args.all or args.previous, prefix=args.all,
    )
    try:
        stream = log_backend.open_logs(request, spool_dir=process_spool_dir(state_dir() / "spool"))
    except ClusterError as err:
        print(escape_control(f"tau-tui: {err.message}"), file=sys.stderr)
        return EXIT_FAILED
    advance = None
    if args.demo is not None and request.follow:
        advance = _demo_clock(backend)
    try:
        printed = _print_until_done(stream, advance)
    finally:
        stream.close(delete_spool=True)
    if printed == 0 and stream.errors:
        return EXIT_FAILED
    return EXIT_OK


def _backend_for_pods(backend, objs):
    """Where the run's pods are: here, or on the MultiKueue worker its Workload was placed on
    (worker_contexts in config.yaml); None, with the reason printed, when that worker is not mapped."""
    from ..core.operations.multikueue_steps.worker_logs import unmapped_message, worker_log_backend
    from ..settings.settings_file import default_config_path, load_settings

    owner = objs.job or objs.ray_job
    worker = next((w.cluster_name for w in objs.workloads if w.cluster_name), None)
    if not worker:
        return backend
    placed = worker_log_backend(backend, worker, load_settings().settings.worker_contexts)
    if placed is None:
        what = f"{owner.kind.type.kind} {objs.namespace}/{objs.name}"
        print(escape_control(f"tau-tui: {unmapped_message(worker, what, str(default_config_path()))}"), file=sys.stderr)
    return placed


def _demo_clock(backend) -> Callable[[], bool]:
    """DEMO_STEP_SECONDS of simulated time per call, until the limit (then False)."""
    moved = [0.0]

    def advance() -> bool:
        if moved[0] >= DEMO_FOLLOW_LIMIT_SECONDS:
            return False
        backend.world.advance(DEMO_STEP_SECONDS)
        moved[0] += DEMO_STEP_SECONDS
        return True

    return advance


def _print_until_done(stream, advance: Callable[[], bool] | None) -> int:
    """Every line the spool takes, in its order, until the stream is done; its warnings on stderr
    once each. Control characters are escaped on a terminal, the bytes kept as they are in a pipe."""
    spool = stream.spool
    tty = sys.stdout.isatty()
    printed = 0
    warned: set[str] = set()
    out = sys.stdout
    while True:
        done = stream.done  # before the count: lines written before the end are all counted
        committed = spool.committed_count
        if committed > printed:
            for line in spool.lines(printed, committed):
                out.write((escape_control(line) if tty else line) + "\n")
            out.flush()
            printed = committed
        for error in stream.errors:
            if error not in warned:
                warned.add(error)
                print(escape_control(f"tau-tui: {error}"), file=sys.stderr, flush=True)
        if done:
            return printed
        if advance is not None:
            if not advance():
                print(f"tau-tui: the run still runs after {int(DEMO_FOLLOW_LIMIT_SECONDS)}s of simulated time",
                      file=sys.stderr)
                return printed
        spool.wait_for_lines(printed + 1, WAIT_S)
