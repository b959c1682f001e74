"""`tau-tui` entry point: the headless commands, or the Textual app when no command is given.

Exit codes: 0 success, 2 invalid input (messages on stderr), 1 cluster/runtime failure.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

from .core.config import load_config
from .core.diagnostics import Diagnostic, DiagnosticError, escape_control, report_lines
from .core.cluster.api import ClusterError
from .core.cluster.kubeconfig import KubeconfigSource
from .core.profiles import Caller, ProfileReadError, explain
from .core.render import to_yaml
from .core.resolve import RenderOptions

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
COMMANDS = ("validate", "render", "submit", "profiles", "init")

DESCRIPTION = """\
tau-tui: a terminal UI for AI workloads on Kubernetes with Kueue, KubeRay and MultiKueue.

Without a command, starts the interactive app (current kubeconfig context; --demo for the
embedded simulated cluster). The headless commands use the same core and rules as the app:

  tau-tui validate FILE                 check a tau.yaml; exit 0 if valid, 2 if not (messages on stderr)
  tau-tui render FILE [--profiles SNAPSHOT] [-n NS] [--team T] [--lane L] [--context C]
                                        client dry-run: print the Job/RayJob manifests as YAML
  tau-tui submit FILE [--dry-run=server] [--context C] [-n NS] [--submission-id ID]
                                        server dry-run (dryRun=All) or create the objects; re-submitting
                                        the same file with the same submission id creates no duplicate
  tau-tui profiles [--profiles SNAPSHOT] [-n NS] [--team T] [--lane L]
                                        every workload profile and why it is or is not selectable
  tau-tui init [DIR]                    write an example tau.yaml and train.py (never overwrites)

Profiles come from TauCluster/cluster (tau.azure.com/v1alpha1) status.workloadProfiles, behind
the fail-closed readiness gate; an offline TauWorkloadProfileSnapshot (--profiles or
policy.workload_profile_snapshot) serves client dry-run only.
"""


def _common(parser: argparse.ArgumentParser, file: bool = True) -> None:
    if file:
        parser.add_argument("file", help="path to tau.yaml")
    parser.add_argument("-n", "--namespace", help="target namespace (must agree with policy.namespace if both are set)")
    parser.add_argument("--context", help="kubeconfig context (default: current)")
    parser.add_argument("--team", help="team for profile applicability (default: policy.team or $TAU_TEAM)")
    parser.add_argument("--lane", help="lane for profile applicability (default: policy.lane)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tau-tui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    validate = sub.add_parser("validate", help="check a tau.yaml")
    validate.add_argument("file", help="path to tau.yaml")
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
    return parser


def api_client(context: str | None):
    return KubeconfigSource().api_client(context)


def _client_factory(context: str | None):
    def factory():
        return api_client(context)

    return factory


def _print_diagnostics(err: DiagnosticError) -> None:
    # Bounded: at most MAX_MESSAGES, each escaped and clipped (diagnostics.report_lines).
    for line in report_lines(err.diagnostics):
        print(line, file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = load_config(args.file)
    for line in report_lines(loaded.warnings):
        print(line, file=sys.stderr)
    print(f"{escape_control(args.file)}: valid ({loaded.engine}, config hash {loaded.config_hash[:12]})", file=sys.stderr)
    return EXIT_OK


def cmd_render(args: argparse.Namespace) -> int:
    from .core.workload import load_profiles, render_run

    loaded = load_config(args.file)
    profile_set = load_profiles(loaded, args.profiles, _client_factory(args.context), client_dry_run=True)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    sys.stdout.write(to_yaml(run.manifests))
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    from .core.cluster.real import KubernetesBackend
    from .core.workload import load_profiles, render_run

    loaded = load_config(args.file)
    # The backend is used for its mutations only: no watches are started for a one-shot submit.
    backend = functools.cache(lambda: KubernetesBackend(context=args.context, namespace=args.namespace))
    profile_set = load_profiles(loaded, None, lambda: backend().http.api_client, client_dry_run=False)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    outcomes = backend().submit(run.manifests, dry_run=args.dry_run == "server")
    for outcome in outcomes:
        stream = sys.stdout if outcome.ok else sys.stderr
        print(outcome.message, file=stream)
    if all(o.ok for o in outcomes):
        print(f"submission id {run.submission_id}", file=sys.stdout)
        return EXIT_OK
    return EXIT_FAILED


def cmd_profiles(args: argparse.Namespace) -> int:
    from .core.profiles import load_snapshot, read_profile_set

    profile_set = load_snapshot(args.profiles) if args.profiles else read_profile_set(api_client(args.context))
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


def _create_new(path: Path, text: str) -> None:
    """Create `path` only if nothing is there: O_EXCL fails on any existing name, a dangling symbolic
    link included, so init never writes through a link to somewhere else."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


HANDLERS = {"validate": cmd_validate, "render": cmd_render, "submit": cmd_submit, "profiles": cmd_profiles, "init": cmd_init}


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
    except Exception as err:  # the last line of defence: a message, never a traceback
        print(escape_control(f"tau-tui: unexpected error: {type(err).__name__}: {str(err)[:500]}"), file=sys.stderr)
        return EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        # No sub-command (or only app flags such as --demo): the interactive app.
        from .app import main as app_main

        return app_main(argv)
    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main())
