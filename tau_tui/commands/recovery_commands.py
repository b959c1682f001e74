"""`tau-tui runs retry RUN` and `tau-tui runs resume RUN`: the Runs pane's r and R, headless.

The decision is core's (:mod:`tau_tui.core.operations.recovery`) on the objects as read now, so
the command and the app decide alike; the write goes through the same
``perform_retry``/``perform_resume``.  Each is previewed with a server dry-run, confirmed (a
terminal prompt, or ``--yes``), and audited (intent before the call, outcome after).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime

from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_DECLINED, EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from .run_commands import _namespace_of, _read_backend, cmd_runs


def cmd_runs_or_action(args: argparse.Namespace) -> int:
    """`tau-tui runs` lists; `runs retry RUN` and `runs resume RUN` act."""
    action = getattr(args, "runs_command", None)
    if action == "retry":
        return cmd_runs_retry(args)
    if action == "resume":
        return cmd_runs_resume(args)
    return cmd_runs(args)


def _now(args: argparse.Namespace, backend) -> datetime:
    return backend.world.now() if args.demo is not None else datetime.now(UTC)


def _confirm(question: str, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        print("not confirmed: no terminal to ask on; pass --yes to apply without asking", file=sys.stderr)
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _print_lines(text: str, ok: bool) -> None:
    for line in text.splitlines():  # names come from the cluster: escaped, one line at a time
        print(escape_control(line), file=sys.stdout if ok else sys.stderr)


def _apply(args: argparse.Namespace, backend, verb: str, target: str, namespace: str, summary: list[str], write) -> int:
    """Print the plan, server-dry-run it, ask, then apply with the audit entries around the call."""
    from ..core.operations.demo_trust import audit_log_for
    from ..mutations.mutation import describe_result

    for line in summary:
        print(escape_control(line))
    ok, text = describe_result(write(True))
    _print_lines(text, ok)
    audit = audit_log_for(args.demo is not None, "cli")  # the demo's own log, apart from yours
    where = {"context": backend.current_context, "namespace": namespace, "identity": backend.who_am_i()}
    audit.append(verb, target, ok=ok, message="\n".join([*summary, text]), dry_run=True, phase="preview", **where)
    if not ok:
        return EXIT_FAILED
    if args.dry_run == "server":
        return EXIT_OK
    if not _confirm(f"{verb} {target}?", args.yes):
        return EXIT_DECLINED
    audit.append(verb, target, ok=None, message=summary[0], dry_run=False, phase="intent", **where)
    ok, text = describe_result(write(False))
    audit.append(verb, target, ok=ok, message=text, dry_run=False, phase="outcome", **where)
    _print_lines(text, ok)
    return EXIT_OK if ok else EXIT_FAILED


def cmd_runs_retry(args: argparse.Namespace) -> int:
    from ..core.operations.recovery import perform_retry, retry_decision
    from ..core.operations.rundocument import read_gpu_faults, read_run

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    target = f"run {namespace}/{args.run}"
    while True:
        objs = read_run(backend, namespace, args.run, read_gpu_faults(backend, _now(args, backend)))
        decision = retry_decision(objs, _now(args, backend))
        if decision.verdict != "wait" or not args.wait:
            break
        # --wait: sleep out the backoff (the simulated clock moves instead with --demo), then decide again.
        seconds = max(1.0, ((decision.not_before or _now(args, backend)) - _now(args, backend)).total_seconds())
        print(escape_control(decision.line))
        sys.stdout.flush()
        if args.demo is not None:
            backend.world.advance(seconds)
        else:
            time.sleep(seconds)
    if decision.verdict == "refused":
        print(escape_control(f"tau-tui: not retried: {decision.message}"), file=sys.stderr)
        return EXIT_REFUSED
    if decision.verdict == "wait":
        print(escape_control(f"tau-tui: not yet: {decision.message}; run again then, or pass --wait"), file=sys.stderr)
        return EXIT_REFUSED

    def write(dry_run: bool):
        fresh = read_run(backend, namespace, args.run, read_gpu_faults(backend, _now(args, backend)))
        again, results = perform_retry(backend, fresh, _now(args, backend), dry_run)
        return results or (False, f"not retried: {again.message}")

    return _apply(args, backend, "retry", target, namespace, [decision.line], write)


def cmd_runs_resume(args: argparse.Namespace) -> int:
    from ..core.operations.recovery import healthy_nodes_offered, perform_resume, plan_lines, resume_plan
    from ..core.operations.rundocument import read_gpu_faults, read_run

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    target = f"run {namespace}/{args.run}"
    config_hash, manifests = None, None
    if args.config:
        from ..core.runconfig.loader import load_config

        loaded = load_config(args.config)
        config_hash = loaded.config_hash
        manifests = _render(args, backend, loaded, namespace)
    faults = read_gpu_faults(backend, _now(args, backend))
    objs = read_run(backend, namespace, args.run, faults)
    plan = resume_plan(objs, force=args.force, checkpoint=args.from_path, config_hash=config_hash, manifests=manifests)
    if not plan.allowed:
        print(escape_control(f"tau-tui: not resumed: {plan.message}"), file=sys.stderr)
        return EXIT_REFUSED
    offered: list[str] = []
    if plan.avoid_nodes:
        from ..core.cluster.kinds import ResourceKind
        from ..core.cluster.view_types import NodeView

        try:
            nodes = [n for n in backend.fetch(ResourceKind.NODE) if isinstance(n, NodeView)]
        except Exception:  # a researcher may not list nodes: the anti-affinity still holds
            nodes = []
        offered = healthy_nodes_offered(nodes, faults, plan.avoid_nodes)
    for warning in plan.warnings:
        print(escape_control(f"tau-tui: warning: {warning}"), file=sys.stderr)
    return _apply(args, backend, "resume", target, namespace, plan_lines(plan, offered),
                  lambda dry_run: perform_resume(backend, objs, plan, dry_run) or (False, "nothing to resume"))


def _render(args: argparse.Namespace, backend, loaded, namespace: str):
    """The run rendered from ``--config`` against the cluster's profiles (the demo: none declared)."""
    from ..core.runconfig.pipeline import load_profiles, render_run
    from ..core.runconfig.profiles import ProfileSet
    from ..core.runconfig.resolve import RenderOptions

    if args.demo is not None:
        profile_set = ProfileSet("none", None, "", [])
    else:
        from ..core.cluster.profile_reader import read_profile_set

        profile_set = load_profiles(loaded, None, lambda: read_profile_set(backend.http.api_client), client_dry_run=False)
    return render_run(loaded, profile_set, RenderOptions(namespace, None, None, None)).manifests
