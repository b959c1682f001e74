"""`tau-tui` entry point: the headless commands, or the Textual app when no command is given.

Exit codes: 0 success, 2 invalid input (messages on stderr), 1 cluster/runtime failure.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from .core.runconfig.loader import load_config
from .core.runconfig.diagnostics import DiagnosticError
from .core.cluster.errors import ClusterError
from .core.cluster.kubeconfig import KubeconfigSource
from .core.runconfig.profiles import Caller, ProfileReadError, explain
from .core.runconfig.manifests import to_yaml
from .core.runconfig.resolve import RenderOptions

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
COMMANDS = ("validate", "render", "submit", "profiles", "init", "audit")

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
  tau-tui audit verify [FILE]           check the audit log's hash chain; exit 0 if intact, 1 naming
                                        the first bad line

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
    audit = sub.add_parser("audit", help="check the audit log")
    audit_sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    verify = audit_sub.add_parser("verify", help="check the hash chain; name the first bad line")
    verify.add_argument("file", nargs="?", help="audit log (default: $XDG_STATE_HOME/tau-tui/audit.jsonl)")
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


def _client_factory(context: str | None, timeouts=None):
    def factory():
        return api_client(context, timeouts)

    return factory


def _print_diagnostics(err: DiagnosticError) -> None:
    for diagnostic in err.diagnostics:
        print(str(diagnostic), file=sys.stderr)


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
    for warning in loaded.warnings:
        print(str(warning), file=sys.stderr)
    print(f"{args.file}: valid ({loaded.engine}, config hash {loaded.config_hash[:12]})", file=sys.stderr)
    return EXIT_OK


def cmd_render(args: argparse.Namespace) -> int:
    from .core.runconfig.pipeline import load_profiles, render_run

    loaded = load_config(args.file)
    profile_set = load_profiles(loaded, args.profiles, _client_factory(args.context, request_timeouts(args)), client_dry_run=True)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    sys.stdout.write(to_yaml(run.manifests))
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    from .core.cluster.real import KubernetesBackend
    from .core.runconfig.pipeline import load_profiles, render_run

    from .core.operations.admission_fit import request_totals, server_quota_warnings, summary_line
    from .core.operations.audit import AuditLog

    loaded = load_config(args.file)
    timeouts = request_timeouts(args)
    # The backend is used for its mutations only: no watches are started for a one-shot submit.
    backend = functools.cache(lambda: KubernetesBackend(context=args.context, namespace=args.namespace, timeouts=timeouts))
    profile_set = load_profiles(loaded, None, lambda: backend().http.api_client, client_dry_run=False)
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
    where = {"context": backend().current_context, "namespace": meta.get("namespace"), "identity": identity}
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
    from .core.runconfig.profiles import load_snapshot, read_profile_set

    profile_set = load_snapshot(args.profiles) if args.profiles else read_profile_set(api_client(args.context, request_timeouts(args)))
    print(f"profiles from {profile_set.source}")
    for problem in profile_set.gate_problems:
        print(f"  gate closed: {problem}")
    for item in explain(profile_set, Caller(args.namespace, args.team, args.lane)):
        mark = "✓ selectable" if item.selectable else "✗ not selectable"
        print(f"{item.name}: {mark}")
        for reason in item.reasons:
            print(f"    - {reason}")
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from importlib import resources

    target = Path(args.dir)
    target.mkdir(parents=True, exist_ok=True)
    examples = resources.files("tau_tui") / "examples"
    wrote = []
    for name in ("tau.yaml", "train.py"):
        path = target / name
        if path.exists():
            print(f"{path} exists; left unchanged", file=sys.stderr)
            continue
        path.write_text((examples / name).read_text())
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


HANDLERS = {"validate": cmd_validate, "render": cmd_render, "submit": cmd_submit, "profiles": cmd_profiles,
            "init": cmd_init, "audit": cmd_audit}


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
    except KeyboardInterrupt:
        return _interrupted()
    except OSError as err:  # the audit log or an output file could not be written
        print(f"tau-tui: {err.filename or ''}: {err.strerror or err}".replace(": : ", ": "), file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:  # the last line of defence: a message, never a traceback
        print(f"tau-tui: unexpected error: {type(err).__name__}: {err}", file=sys.stderr)
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
        from .core.operations.audit import state_dir
        from .core.cluster.logspool import clean_stale_spools

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
