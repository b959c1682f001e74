"""`tau-tui` entry point: the headless commands, or the Textual app when no command is given.

Exit codes: 0 success, 2 invalid input (messages on stderr), 1 cluster/runtime failure.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

from .core.cluster.errors import ClusterError
from .core.cluster.kubeconfig import KubeconfigSource
from .core.operations.multikueue_steps.access import AccessError
from .core.operations.multikueue_steps.credentials import CredentialError
from .core.runconfig.diagnostics import Diagnostic, DiagnosticError, escape_control, report_lines
from .core.runconfig.loader import load_config
from .core.runconfig.manifests import to_yaml
from .core.runconfig.profiles import Caller, ProfileReadError, explain
from .core.runconfig.resolve import RenderOptions

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
COMMANDS = ("validate", "render", "submit", "profiles", "init", "audit", "multikueue", "status", "runs", "cancel")
#: `tau-tui multikueue` outcomes beyond 0/1/2 (docs/multikueue.md).
EXIT_REFUSED, EXIT_NOT_VERIFIED, EXIT_DECLINED, EXIT_NO_KEYRING = 3, 4, 5, 6
OperationError = (AccessError, CredentialError)

DESCRIPTION = """\
tau-tui: a terminal UI for AI workloads on Kubernetes with Kueue, KubeRay and MultiKueue.

Without a command, starts the interactive app (current kubeconfig context; --demo for the
embedded simulated cluster). The headless commands use the same core and rules as the app:

  tau-tui validate FILE [--profiles SNAPSHOT]
                                        check a tau.yaml; exit 0 if valid, 2 if not (every problem found,
                                        on stderr); with a snapshot, also whether its profile resolves
  tau-tui render FILE [--profiles SNAPSHOT] [-n NS] [--team T] [--lane L] [--context C]
                                        client dry-run: print the Job/RayJob manifests as YAML
  tau-tui submit FILE [--dry-run=server] [--context C] [-n NS] [--submission-id ID]
                                        server dry-run (dryRun=All) or create the objects; re-submitting
                                        the same file with the same submission id creates no duplicate
  tau-tui profiles [--profiles SNAPSHOT] [-n NS] [--team T] [--lane L]
                                        every workload profile and why it is or is not selectable
  tau-tui init [DIR]                    write an example tau.yaml and train.py (never overwrites)
  tau-tui multikueue setup|drain|rollback|rotate|status|records --plan PLAN [--yes] [--context C]
                                        platform owners: the MultiKueue setup wizard, drain checklist,
                                        rollback and credential rotation, headless (docs/multikueue.md);
                                        exit 0 verified, 3 refused, 4 not verified in time, 5 not
                                        confirmed (use --yes), 6 no OS keyring (rotate), 1 failure, 2 bad input
  tau-tui audit verify [FILE]           check the audit log's hash chain; exit 0 if intact, 1 naming
                                        the first bad line
  tau-tui status RUN [-n NS] [-o json|yaml|table] [--watch] [--demo [SCENARIO]]
                                        the run's state, phases, diagnostics with codes and next actions
                                        (the document the Runs pane draws); exit 1 if there is no such run;
                                        --watch prints each change until startup completes (0) or fails (1)
  tau-tui runs [-n NS] [-o json|yaml|table] [--demo [SCENARIO]]
                                        every Tau-managed Job and RayJob, as `tau run list`
  tau-tui cancel RUN [-n NS] [--wait] [--dry-run=server] [--demo [SCENARIO]]
                                        delete the Job or RayJob and its <name>-headless Service (audited);
                                        --wait shows "releasing compute" until its pods are gone, then
                                        "cancelled"

Commands that talk to the cluster take --request-timeout DURATION (as kubectl: 30s, 1m, 0 = no
limit; default request_timeout in the app's config.yaml, else 30s; connecting, TLS included,
gets at most 5s). A timeout names the server and what timed out, and exits 1; Ctrl-C exits 130.

Profiles come from TauCluster/cluster (tau.azure.com/v1alpha1) status.workloadProfiles, behind
the fail-closed readiness gate; an offline TauWorkloadProfileSnapshot (--profiles or
policy.workload_profile_snapshot) serves client dry-run only.
"""


def duration_arg(text: str) -> float:
    """argparse type for kubectl-style durations (a bad one exits 2 with the reason)."""
    from .core.cluster.kubeconfig import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _common(parser: argparse.ArgumentParser, file: bool = True) -> None:
    if file:
        parser.add_argument("file", help="path to tau.yaml")
    parser.add_argument("-n", "--namespace", help="target namespace (must agree with policy.namespace if both are set)")
    parser.add_argument("--context", help="kubeconfig context (default: current)")
    parser.add_argument("--team", help="team for profile applicability (default: policy.team or $TAU_TEAM)")
    parser.add_argument("--lane", help="lane for profile applicability (default: policy.lane)")
    parser.add_argument("--request-timeout", metavar="DURATION", type=duration_arg,
                        help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; default 30s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tau-tui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate = sub.add_parser("validate", help="check a tau.yaml")
    validate.add_argument("file", help="path to tau.yaml")
    validate.add_argument("--profiles", metavar="SNAPSHOT",
                          help="offline TauWorkloadProfileSnapshot to check the profile against "
                               "(default: policy.workload_profile_snapshot, if set)")
    render = sub.add_parser("render", help="client dry-run: print manifests")
    _common(render)
    render.add_argument("--profiles", metavar="SNAPSHOT", help="offline TauWorkloadProfileSnapshot file")
    render.add_argument("--submission-id", help="override the submission id label")
    submit = sub.add_parser("submit", help="server dry-run or create")
    _common(submit)
    submit.add_argument("--dry-run", choices=["server", "none"], default="none", help="server: send with dryRun=All, create nothing")
    submit.add_argument("--submission-id", help="override the submission id (default: derived from the config hash, namespace and name)")
    profiles = sub.add_parser("profiles", help="explain every workload profile")
    _common(profiles, file=False)
    profiles.add_argument("--profiles", metavar="SNAPSHOT", help="offline TauWorkloadProfileSnapshot file")
    init = sub.add_parser("init", help="write an example tau.yaml")
    init.add_argument("dir", nargs="?", default=".", help="directory to write into")
    mk = sub.add_parser("multikueue", help="MultiKueue setup, drain, rollback, rotation, status, records")
    mk.add_argument("action", choices=["setup", "drain", "rollback", "rotate", "status", "records"])
    mk.add_argument("--plan", help="the MultiKueue plan (YAML): workers, namespaces, queue and profile names")
    mk.add_argument("--context", help="the manager's kubeconfig context (default: current)")
    mk.add_argument("--kubeconfig", help="kubeconfig file(s) for the manager and worker contexts (default: $KUBECONFIG)")
    mk.add_argument("--yes", action="store_true", help="apply every step without asking (scripts, CI)")
    mk.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each step's verification (default 300)")
    mk.add_argument("--cancel", action="append", default=[], metavar="NS/KIND/NAME",
                    help="drain: a pending owner to cancel (repeatable)")
    mk.add_argument("--cancel-pending", action="store_true", help="drain: cancel every pending owner of the dedicated queue")
    mk.add_argument("--worker", help="rotate: which worker (default: the plan's first)")
    mk.add_argument("--new-kubeconfig", help="rotate: the new credential's kubeconfig file")
    mk.add_argument("--new-context", help="rotate: the new credential as a kubeconfig context")
    mk.add_argument("--json", action="store_true", help="records: JSON lines instead of a table")
    audit = sub.add_parser("audit", help="check the audit log")
    audit_sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    verify = audit_sub.add_parser("verify", help="check the hash chain; name the first bad line")
    verify.add_argument("file", nargs="?", help="audit log (default: $XDG_STATE_HOME/tau-tui/audit.jsonl)")
    for name, text in (("status", "one run's state, phases, diagnostics and next actions"),
                       ("runs", "list the Tau-managed Jobs and RayJobs"),
                       ("cancel", "delete a run and its headless Service")):
        cmd = sub.add_parser(name, help=text)
        if name == "cancel":
            cmd.add_argument("run", help="name of the Job or RayJob")
            cmd.add_argument("--wait", action="store_true", help="wait until the run's pods are gone (compute released)")
            cmd.add_argument("--dry-run", choices=["server", "none"], default="none", help="server: send with dryRun=All")
            cmd.add_argument("--interval", metavar="DURATION", type=duration_arg, default=2.0,
                             help="time between reads with --wait (default 2s)")
        if name == "status":
            cmd.add_argument("run", help="name of the Job or RayJob")
            cmd.add_argument("--watch", action="store_true", help="print every change until startup completes or fails")
            cmd.add_argument("--interval", metavar="DURATION", type=duration_arg, default=2.0,
                             help="time between reads with --watch (default 2s)")
        cmd.add_argument("-n", "--namespace", help="namespace (default: the context's, else default)")
        cmd.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table", help="output format")
        cmd.add_argument("--context", help="kubeconfig context (default: current)")
        cmd.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO",
                         help="read the embedded simulated cluster instead (scenario: demo, faults, large)")
        cmd.add_argument("--request-timeout", metavar="DURATION", type=duration_arg,
                         help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; default 30s)")
    return parser


def request_timeouts(args: argparse.Namespace):
    """``--request-timeout`` if given, else the app config's keys, else the defaults."""
    from .core.cluster.kubeconfig import RequestTimeouts

    given = getattr(args, "request_timeout", None)
    if given is not None:
        return RequestTimeouts.from_read(given)
    from .settings.settings_file import load_settings

    return load_settings().settings.timeouts()


def api_client(context: str | None, timeouts=None):
    return KubeconfigSource().api_client(context, timeouts)


def _live_profiles(context: str | None, timeouts=None):
    """Reads TauCluster/cluster only when the pipeline needs the live profiles."""
    from .core.cluster.profile_reader import read_profile_set

    def read():
        return read_profile_set(api_client(context, timeouts))

    return read


def _print_diagnostics(err: DiagnosticError) -> None:
    # Bounded: at most MAX_MESSAGES, each escaped and clipped (diagnostics.report_lines).
    for line in report_lines(err.diagnostics):
        print(line, file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    from .core.runconfig.pipeline import render_run, snapshot_path
    from .core.runconfig.profiles import load_snapshot

    problems: list = []
    loaded = load_config(args.file, rule_errors=problems)  # shape errors raise, with the rule errors beside them
    snapshot = snapshot_path(loaded, args.profiles)
    if snapshot is not None:  # profile errors in the same run as the rule errors
        try:
            render_run(loaded, load_snapshot(snapshot), RenderOptions(None, None, None))
        except DiagnosticError as err:
            problems += err.diagnostics
    if problems:
        raise DiagnosticError(problems)
    for line in report_lines(loaded.warnings):
        print(line, file=sys.stderr)
    print(f"{escape_control(args.file)}: valid ({loaded.engine}, config hash {loaded.config_hash[:12]})", file=sys.stderr)
    return EXIT_OK


def cmd_render(args: argparse.Namespace) -> int:
    from .core.runconfig.pipeline import load_profiles, render_run

    loaded = load_config(args.file)
    profile_set = load_profiles(loaded, args.profiles, _live_profiles(args.context, request_timeouts(args)), client_dry_run=True)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    sys.stdout.write(to_yaml(run.manifests))
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    from .core.cluster.profile_reader import read_profile_set
    from .core.cluster.real import KubernetesBackend
    from .core.operations.admission_fit import request_totals, server_quota_warnings, summary_line
    from .core.operations.audit import AuditLog, AuditWhere
    from .core.runconfig.pipeline import load_profiles, render_run

    loaded = load_config(args.file)
    timeouts = request_timeouts(args)
    # The backend is used for its mutations only: no watches are started for a one-shot submit.
    backend = functools.cache(lambda: KubernetesBackend(context=args.context, namespace=args.namespace, timeouts=timeouts))
    profile_set = load_profiles(loaded, None, lambda: read_profile_set(backend().http.api_client), client_dry_run=False)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    dry_run = args.dry_run == "server"
    main = run.manifests[-1] if run.manifests else {}
    meta = main.get("metadata") or {}
    target = f"{main.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}"
    totals = request_totals(run.manifests)
    print(f"{target}: {summary_line(totals)}", file=sys.stderr)
    for warning in server_quota_warnings(backend(), totals):
        print(f"{args.file}: warning: {warning}\n  fix: ask for less, or pick a profile/queue with more quota",
              file=sys.stderr)
    audit = AuditLog(source="cli")
    identity = backend().who_am_i()
    where: AuditWhere = {"context": backend().current_context, "namespace": meta.get("namespace"), "identity": identity}
    # The intent is on disk before the call; no trace, no change.
    audit.append("submit", target, ok=None, message=f"submission id {run.submission_id}", dry_run=dry_run,
                 phase="preview" if dry_run else "intent", **where)
    outcomes = backend().submit(run.manifests, dry_run=dry_run)
    audit.append("submit", target, ok=all(o.ok for o in outcomes), dry_run=dry_run,
                 message="\n".join(o.message for o in outcomes), phase="preview" if dry_run else "outcome", **where)
    for outcome in outcomes:
        stream = sys.stdout if outcome.ok else sys.stderr
        print(outcome.message, file=stream)
    if all(o.ok for o in outcomes):
        print(f"submission id {run.submission_id}", file=sys.stdout)
        return EXIT_OK
    return EXIT_FAILED


def cmd_profiles(args: argparse.Namespace) -> int:
    from .core.cluster.profile_reader import read_profile_set
    from .core.runconfig.profiles import load_snapshot

    profile_set = load_snapshot(args.profiles) if args.profiles else read_profile_set(api_client(args.context, request_timeouts(args)))
    # Profile names and reasons come from a file or a cluster: escaped, never printed raw.
    print(escape_control(f"profiles from {profile_set.source}"))
    for problem in profile_set.gate_problems:
        print(escape_control(f"  gate closed: {problem}"))
    for item in explain(profile_set, Caller(args.namespace, args.team, args.lane)):
        mark = "✓ selectable" if item.selectable else "✗ not selectable"
        print(escape_control(f"{item.name}: {mark}"))
        for reason in item.reasons:
            print(escape_control(f"    - {reason}"))
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from importlib import resources

    target = Path(args.dir)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DiagnosticError([Diagnostic(str(target), f"cannot create the directory: {err.strerror}", hint="pick a directory you can write to")]) from None
    examples = resources.files("tau_tui") / "examples"
    wrote = []
    for name in ("tau.yaml", "train.py"):
        path = target / name
        try:
            _create_new(path, (examples / name).read_text())
        except FileExistsError:
            what = "is a symbolic link" if path.is_symlink() else "exists"
            print(escape_control(f"{path} {what}; left unchanged"), file=sys.stderr)
            continue
        except OSError as err:
            raise DiagnosticError([Diagnostic(str(path), f"cannot write the file: {err.strerror}", hint="pick a directory you can write to")]) from None
        wrote.append(str(path))
    if wrote:
        print("wrote " + ", ".join(wrote))
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    from .core.operations.audit import default_audit_path, verify

    path = Path(args.file) if args.file else default_audit_path()
    try:
        result = verify(path)
    except OSError as err:
        print(f"tau-tui: cannot read audit log {path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    print(result.summary(), file=sys.stdout if result.ok else sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED


#: With --demo --watch the simulated clock moves instead of the wall clock; a run still
#: starting after this much simulated time is reported as such.
DEMO_WATCH_LIMIT_SECONDS = 3600.0


def _read_backend(args: argparse.Namespace):
    """A backend for one-shot reads: the simulated cluster, or the real one with no watch started."""
    if args.demo is not None:
        from .core.cluster.sim.backend import SimulatedBackend
        from .core.cluster.sim.scenario import build_world

        return SimulatedBackend(build_world(args.demo), namespace=args.namespace)
    from .core.cluster.real import KubernetesBackend

    return KubernetesBackend(context=args.context, namespace=args.namespace, timeouts=request_timeouts(args))


def _namespace_of(args: argparse.Namespace, backend) -> str:
    return args.namespace or backend.namespace or "default"


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

    from .core.operations.rundocument import read_gpu_faults, read_run, status_document, status_lines
    from .core.operations.runstatus import compute_run_status

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    last = None
    waited = 0.0
    while True:
        now = backend.world.now() if args.demo is not None else datetime.now(UTC)
        objs = read_run(backend, namespace, args.run, read_gpu_faults(backend, now))
        status = compute_run_status(objs)
        doc = status_document(status, objs)
        if doc != last:
            if last is not None and args.output == "table":
                print()
            _print_document(doc, args.output, status_lines(status), stream_json=args.watch)
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

    from .core.operations.rundocument import list_document, list_lines, list_statuses, read_run_owners

    backend = _read_backend(args)
    # Without -n the list covers every namespace, as the Runs pane does.
    owners = read_run_owners(backend, args.namespace)
    statuses = list_statuses(backend, args.namespace, owners)
    now = backend.world.now() if args.demo is not None else datetime.now(UTC)
    doc = list_document(args.namespace, owners, now, statuses)
    _print_document(doc, args.output, list_lines(doc))
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    import time

    from .core.cluster.kinds import ResourceKind
    from .core.operations.audit import AuditLog
    from .core.operations.rundocument import read_run
    from .core.operations.runstatus import compute_run_status

    backend = _read_backend(args)
    namespace = _namespace_of(args, backend)
    objs = read_run(backend, namespace, args.run)
    if objs.job is None and objs.ray_job is None:
        print(escape_control(f"tau-tui: no Job or RayJob {namespace}/{args.run}; tau-tui runs -n {namespace} lists them"),
              file=sys.stderr)
        return EXIT_FAILED
    kind = ResourceKind.JOB if objs.job is not None else ResourceKind.RAY_JOB
    dry_run = args.dry_run == "server"
    target = f"{kind.type.kind} {namespace}/{args.run}"
    audit = AuditLog(source="cli")
    where = {"context": backend.current_context, "namespace": namespace, "identity": backend.who_am_i()}
    audit.append("cancel", target, ok=None, message=f"delete {target} and its headless Service", dry_run=dry_run, phase="preview" if dry_run else "intent", **where)
    result = backend.cancel(kind, namespace, args.run, dry_run=dry_run)
    audit.append("cancel", target, ok=result.ok, dry_run=dry_run, message=result.message,
                 phase="preview" if dry_run else "outcome", **where)
    print(escape_control(result.message), file=sys.stdout if result.ok else sys.stderr)
    if not result.ok:
        return EXIT_FAILED
    if not args.wait or dry_run:
        return EXIT_OK
    last = ""
    while True:
        status = compute_run_status(read_run(backend, namespace, args.run))
        if status.state == "not_found":
            print(f"{namespace}/{args.run}: cancelled; compute released")
            return EXIT_OK
        release = status.phase("Compute release")
        line = f"{namespace}/{args.run}: {status.display_state}" + (f": {release.detail}" if release and release.detail else "")
        if line != last:
            print(escape_control(line))
            sys.stdout.flush()
            last = line
        if args.demo is not None:
            backend.world.advance(args.interval)
        else:
            time.sleep(args.interval)


def _create_new(path: Path, text: str) -> None:
    """Create `path` only if nothing is there: O_EXCL fails on any existing name, a dangling symbolic
    link included, so init never writes through a link to somewhere else."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def multikueue_environment(args: argparse.Namespace):
    """(manager backend, worker connector, wait) for a real cluster; tests replace this."""
    import time

    from .core.cluster.real import KubernetesBackend
    from .core.operations.multikueue_steps.credentials import KubeconfigConnector

    backend = KubernetesBackend(args.kubeconfig, context=args.context)
    return backend, KubeconfigConnector(args.kubeconfig), time.sleep


def _print_and_apply(preview) -> bool:
    print(preview.text())
    return True


def _ask(preview) -> bool:
    print(preview.text())
    if not sys.stdin.isatty():
        print("not confirmed: no terminal to ask on; pass --yes to apply without asking", file=sys.stderr)
        return False
    answer = input(f"apply '{preview.step.title}'? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def cmd_multikueue(args: argparse.Namespace) -> int:
    import json

    from .core.operations.multikueue_steps import open_exercise
    from .core.operations.multikueue_steps.engine import Outcome
    from .core.operations.multikueue_steps.plan import load_plan
    from .core.operations.multikueue_steps.records import list_records
    from .core.operations.multikueue_steps.rotate import CredentialVault

    if args.action == "records":
        records = list_records()
        for rec in records:
            if args.json:
                print(json.dumps({"path": str(rec.path), "flow": rec.flow, "cluster": rec.cluster, "started": rec.started,
                                  "outcome": rec.outcome, "steps": rec.steps, "identity": rec.identity}))
            else:
                print(f"{rec.started}  {rec.flow:<8} {rec.cluster:<20} {rec.outcome:<13} {rec.steps:>3} steps  {rec.path}")
        if not records and not args.json:
            print("no exercise records yet", file=sys.stderr)
        return EXIT_OK
    if not args.plan:
        print(f"tau-tui: multikueue {args.action} needs --plan FILE (see docs/multikueue.md)", file=sys.stderr)
        return EXIT_INVALID
    plan = load_plan(args.plan)
    backend, connector, wait = multikueue_environment(args)
    if args.action == "status":
        for flow in ("setup", "drain"):
            exercise = open_exercise(flow, backend, connector, plan, wait=wait, record=False)
            print(f"{exercise.flow.title}:")
            for status in exercise.survey():
                print(f"  {status.mark} {status.step.title}" + (f"\n      {status.check.reason}" if status.check.reason else ""))
        return EXIT_OK
    inputs: dict = {}
    vault = None
    if args.action == "drain":
        inputs["cancel"] = "all-pending" if args.cancel_pending else list(args.cancel)
    if args.action == "rotate":
        vault = CredentialVault(backend.current_context or "cluster")
        if not vault.usable():
            try:
                vault.require()
            except Exception as err:
                print(f"tau-tui: {getattr(err, 'message', err)}", file=sys.stderr)
            return EXIT_NO_KEYRING
        inputs.update(worker=args.worker, new_kubeconfig=args.new_kubeconfig, new_context=args.new_context)
    exercise = open_exercise(args.action, backend, connector, plan, wait=wait, inputs=inputs, vault=vault)
    outcome = exercise.run(_print_and_apply if args.yes else _ask, timeout=args.timeout)
    for status in exercise.survey():
        print(f"{status.mark} {status.step.title}" + (f"\n    {status.check.reason}" if status.check.reason else ""))
    print(f"{exercise.flow.title}: {outcome.value}; record {exercise.recorder.path if exercise.recorder else '-'}")
    return {Outcome.VERIFIED: EXIT_OK, Outcome.REFUSED: EXIT_REFUSED, Outcome.NOT_VERIFIED: EXIT_NOT_VERIFIED,
            Outcome.DECLINED: EXIT_DECLINED, Outcome.FAILED: EXIT_FAILED}[outcome]


HANDLERS = {"validate": cmd_validate, "render": cmd_render, "submit": cmd_submit, "profiles": cmd_profiles,
            "init": cmd_init, "audit": cmd_audit, "multikueue": cmd_multikueue, "status": cmd_status,
            "runs": cmd_runs, "cancel": cmd_cancel}


def run_command(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return EXIT_OK
    try:
        return HANDLERS[args.command](args)
    except DiagnosticError as err:
        _print_diagnostics(err)
        return EXIT_INVALID
    except ClusterError as err:
        print(f"tau-tui: {err.message}", file=sys.stderr)
        return EXIT_FAILED
    except ProfileReadError as err:
        print(f"tau-tui: {err}", file=sys.stderr)
        return EXIT_FAILED
    except OperationError as err:
        print(f"tau-tui: {err.message}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return _interrupted()
    except OSError as err:  # the audit log or an output file could not be written
        print(f"tau-tui: {err.filename or ''}: {err.strerror or err}".replace(": : ", ": "), file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:  # the last line of defence: a message, never a traceback
        print(escape_control(f"tau-tui: unexpected error: {type(err).__name__}: {str(err)[:500]}"), file=sys.stderr)
        return EXIT_FAILED


# --------------------------------------------------------------------------
# The interactive app
# --------------------------------------------------------------------------


def build_app_parser() -> argparse.ArgumentParser:
    # Imported here: the headless commands never load Textual.
    from .widgets.header_bar import PANES

    parser = argparse.ArgumentParser(
        prog="tau-tui",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="app keys: : command mode, / filter, ? help, esc back, 1-7 panes, ctrl+p palette, ctrl+q quit",
    )
    parser.add_argument("--context", help="kubeconfig context (default: current)")
    parser.add_argument("-n", "--namespace", help="namespace scope (default: all namespaces)")
    parser.add_argument("--readonly", action="store_true", help="hide and refuse every mutating action")
    parser.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO",
                        help="use the embedded simulated cluster (scenario: demo, faults, large)")
    parser.add_argument("--theme", help="tau-dark, tau-light or tau-high-contrast (or a theme file's name)")
    parser.add_argument("--pane", choices=[m for _, m, _ in PANES], help="pane to open first (default: queue)")
    parser.add_argument("--file", help="tau.yaml to open in the compose pane")
    parser.add_argument("--request-timeout", metavar="DURATION",
                        help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; "
                             "default: request_timeout in config.yaml, else 30s)")
    return parser


def run_app(argv: list[str]) -> int:
    parser = build_app_parser()
    args = parser.parse_args(argv)
    timeouts = None
    if args.request_timeout is not None:
        from .core.cluster.kubeconfig import RequestTimeouts, parse_duration

        try:
            timeouts = RequestTimeouts.from_read(parse_duration(args.request_timeout))
        except ValueError as err:
            parser.error(f"--request-timeout: {err}")
    try:  # spools of earlier runs that were killed before they could remove them
        from .core.cluster.logspool import clean_stale_spools
        from .core.operations.audit import state_dir

        clean_stale_spools(state_dir() / "spool")
    except OSError:
        pass
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("tau-tui: the app needs a terminal; use a sub-command (tau-tui --help) for scripts", file=sys.stderr)
        return 2
    from .app import TauApp

    app = TauApp(
        demo=args.demo,
        context=args.context,
        namespace=args.namespace,
        readonly=args.readonly,
        theme=args.theme,
        start_pane=args.pane,
        compose_file=args.file,
        request_timeouts=timeouts,
    )
    app.run()
    return 0 if app.return_code in (None, 0) else int(app.return_code)


def _interrupted() -> int:
    print("tau-tui: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    from .core.cluster.credentials import install_exit_on_signals

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        install_exit_on_signals()  # SIGTERM/SIGHUP run the exit clean-up (spools, private files)
        if not argv or argv[0] not in COMMANDS:
            # No sub-command (or only app flags such as --demo): the interactive app.
            return run_app(argv)
        return run_command(argv)
    except KeyboardInterrupt:  # Ctrl-C anywhere, imports included: one line, no traceback
        return _interrupted()


if __name__ == "__main__":
    sys.exit(main())
