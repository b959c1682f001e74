"""The headless commands' argument parser: options, help text and exit codes."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .logs_options import USAGE as LOGS_USAGE
from .logs_options import add_logs_parser
from .parity_parsers import add_profiles_parser, add_schema_parsers, add_workspace_parser

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
#: The one line a Ctrl-C prints (on stderr), in the app and in every command.
INTERRUPTED = "tau-tui: interrupted"
COMMANDS = ("validate", "render", "submit", "profiles", "init", "audit", "multikueue", "status", "runs", "cancel", "evidence",
            "schema", "explain-config", "workspace", "logs", "completion")
#: `tau-tui multikueue` outcomes beyond 0/1/2 (docs/multikueue.md).
EXIT_REFUSED, EXIT_NOT_VERIFIED, EXIT_DECLINED, EXIT_NO_KEYRING = 3, 4, 5, 6
#: The server's Kueue serves no kueue.x-k8s.io/v1beta2 (v0.14 or older): every command that reads it.
EXIT_UNSUPPORTED_KUEUE = 7
#: `tau-tui workspace check`: the workspace exists but is not proven Ready.
EXIT_NOT_READY = 3
MULTIKUEUE_ACTIONS = ("setup", "drain", "rotate", "status", "records")

DESCRIPTION = """\
tau-tui: a terminal UI for AI workloads on Kubernetes with Kueue, KubeRay and MultiKueue.

Without a command, starts the interactive app (current kubeconfig context; --demo for the
embedded simulated cluster; --record FILE records the session, --replay FILE plays a recording
back read-only). The headless commands use the same core and rules as the app:

  tau-tui validate FILE [--profiles SNAPSHOT] [--strict]
                                        check a tau.yaml; exit 0 if valid, 2 if not (every problem found,
                                        on stderr); with a snapshot, also whether its profile resolves;
                                        warnings (a latest or untagged image, ...) are errors with --strict
  tau-tui render FILE [--profiles SNAPSHOT] [-n NS] [--team T] [--lane L] [--context C] [--strict]
                                        client dry-run: print the Job/RayJob manifests as YAML (no
                                        workspace defaults, as TauGrid's client dry-run)
  tau-tui submit FILE [--dry-run=server] [--context C] [-n NS] [--workspace WS] [--submission-id ID] [--strict]
                                        server dry-run (dryRun=All) or create the objects, with the
                                        workspace's defaults (namespace, queue, priority, output root, TTL;
                                        the primary workspace when none is named); re-submitting the same
                                        file with the same submission id creates no duplicate
  tau-tui profiles [--profiles SNAPSHOT | --demo] [-n NS] [--team T] [--lane L]
                                        every workload profile and why it is or is not selectable
  tau-tui profiles export [-o FILE] [--force] [--context C | --demo]
                                        a TauWorkloadProfileSnapshot of the live TauCluster (for --profiles);
                                        refused (exit 1, every reason) when its status is stale, not ready or
                                        its profileSetHash does not match
  tau-tui schema [-o json|yaml]         the JSON Schema (draft 2020-12) of tau.yaml, x-tau-status per field
  tau-tui explain-config FILE [--profiles SNAPSHOT | --context C | --demo] [-n NS] [--workspace WS] [-o table|json|yaml]
                                        every effective value and where it came from (file, profile,
                                        workspace, flag, default)
  tau-tui workspace list | status [WS] | check [WS] | quota show [WS]  [--context C | --demo] [-o ...]
                                        TauWorkspaces (the primary one when WS is left out); check exits
                                        0 Ready, 3 not Ready (or stale), 1 not found or unreadable
  tau-tui init [DIR]                    write an example tau.yaml and train.py (never overwrites)
  tau-tui multikueue setup|drain|rotate|status|records --plan PLAN [--yes] [--context C] [--demo]
                                        platform owners, headless (docs/multikueue.md): setup (the seed's
                                        "Platform-owner configuration" 1-5; after a drain it re-enables),
                                        drain (the seed's "Drain and rollback" 1-5), rotate (a worker
                                        credential); exit 0 verified, 3 refused, 4 not verified in time,
                                        5 not confirmed (use --yes), 6 no OS keyring (rotate), 1 failure,
                                        2 bad input, 7 Kueue too old. status [--flow setup|drain|rotate]: the
                                        flow in force (default: the flow of this cluster's latest setup or
                                        drain record, else setup; rotate: the last rotation of --worker);
                                        exit 0 only if every step of it verifies, 3 if one is refused, 4 if
                                        not verified, 1 if the cluster could not be asked. --demo: the
                                        simulated demo cluster with two simulated workers and the built-in
                                        lab plan (--plan optional); it lives only in that process
  tau-tui audit verify [FILE]           check the audit log's signed hash chain and the head kept in the
                                        OS keyring; exit 0 if intact, 1 naming the first bad line, a cut
                                        end, or an unsigned log ("unsigned: cannot prove")
  tau-tui audit key | rotate-key [FILE] | start-over [FILE]
                                        the signing key's fingerprint and public key | a new key (the
                                        rotation is an audit entry; old entries still verify) | a new
                                        log after the old one was moved aside
  tau-tui status RUN [-n NS | --workspace WS] [-o json|yaml|table] [--watch] [--events] [--demo [SCENARIO]]
                                        the run's state, its place in its queue and why it waits, phases,
                                        diagnostics with codes and next actions (the document the Runs pane
                                        draws); exit 1 if there is no such run; --watch prints each change
                                        until startup completes (0) or fails (1); --events adds the Events
                                        about the run, its pods, Workloads and RayCluster
  tau-tui runs [-n NS | -A | --workspace WS] [--queue LQ] [--include-external] [-o json|yaml|table] [--demo [SCENARIO]]
                                        every Tau-managed Job and RayJob, as `tau run list` (without -n:
                                        the context's namespace, else every namespace); --include-external
                                        adds the Jobs and RayJobs tau did not submit
  tau-tui cancel RUN [-n NS] [--no-wait] [--teardown-timeout D] [--dry-run=server] [--demo [SCENARIO]]
                                        delete the Job or RayJob and its <name>-headless Service (audited),
                                        then wait (as TauGrid's cancel) showing "releasing compute" until its
                                        pods are gone, then "cancelled" (--no-wait: return after the delete;
                                        exit 1 when still releasing after --teardown-timeout, default 15m);
                                        a MultiKueue run's pods are read on every worker that
                                        may hold them (worker_contexts in config.yaml): a worker that cannot
                                        be read leaves the release unknown (exit 1)
""" + LOGS_USAGE + """\
  tau-tui evidence list [-n NS] [-o table|json]
                                        evidence records of finished runs kept on this machine
  tau-tui evidence export RUN [-n NS] [-o FILE|DIR] [--force] [--demo [SCENARIO]]
                                        a .tar.gz bundle with a manifest and a SHA-256 per file (captured
                                        first if the run is finished and has no record); nothing is uploaded
  tau-tui evidence verify BUNDLE [--key FINGERPRINT|PUBKEY]
                                        exit 0 if the manifest is signed by your key (or the one named)
                                        and every file matches it; 1 naming each edited, missing or extra
                                        file, another signer, an unsigned bundle, or why it was refused
  tau-tui runs retry RUN [-n NS] [--wait] [--dry-run=server] [--yes]
                                        retry a failed run as its resilience.* allows (retry_on,
                                        max_retries, backoff); exit 3 with the reason when it may not
  tau-tui runs resume RUN [-n NS] [--force] [--from PATH] [-c tau.yaml] [--dry-run=server] [--yes]
                                        resubmit from the last checkpoint (TAU_RESUME_FROM) under a new
                                        submission, away from a node whose GPU fault hit the run;
                                        --force after OOMKilled; warns on config drift with -c
  tau-tui completion bash|zsh|fish      the shell completion script (sub-commands, flags, and the names of
                                        runs, namespaces and contexts read when you press tab)
  tau-tui --version                     the version and the commit it was built from

Commands that talk to the cluster take --request-timeout DURATION (as kubectl: 30s, 1m, 0 = no
limit; default request_timeout in the app's config.yaml, else 30s; connecting, TLS included,
gets at most 5s). A timeout names the server and what timed out, and exits 1; Ctrl-C exits 130.
A server whose Kueue serves no kueue.x-k8s.io/v1beta2 (Kueue v0.14 or older) is refused: exit 7.

Profiles come from TauCluster/cluster (tau.azure.com/v1alpha1) status.workloadProfiles, behind
the fail-closed readiness gate; an offline TauWorkloadProfileSnapshot (--profiles or
policy.workload_profile_snapshot) serves client dry-run only.
"""


def add_session_recording_options(parser: argparse.ArgumentParser) -> None:
    """The app's ``--record FILE`` and ``--replay FILE`` (docs/architecture.md, Record and replay)."""
    parser.add_argument("--record", metavar="FILE",
                        help="record every cluster snapshot and change of this session into FILE "
                             "(gzip-compressed, 0600; secrets redacted; never overwrites). Works with --demo and a kubeconfig")
    parser.add_argument("--record-while-readonly", action="store_true",
                        help="with --readonly, record anyway (--readonly alone writes nothing outside the app's state "
                             "directory, so it refuses --record); the header then reads READ-ONLY · RECORDING")
    parser.add_argument("--replay", metavar="FILE",
                        help="play a recording back in the same panes, read-only: space play/pause, . and , step, "
                             "+ and - speed, :seek HH:MM[:SS] or +90s")


def duration_arg(text: str) -> float:
    """argparse type for kubectl-style durations (a bad one exits 2 with the reason)."""
    from ..core.cluster.kubeconfig import parse_duration

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
    _workspace_options(submit, "the TauWorkspace whose defaults apply (default: the cluster's primary workspace)")
    for cmd in (validate, render, submit):
        cmd.add_argument("--strict", action="store_true",
                         help="treat warnings (a latest or untagged image, a MultiKueue profile with a PVC, ...) as errors")
    submit.add_argument("--dry-run", choices=["server", "none"], default="none", help="server: send with dryRun=All, create nothing")
    submit.add_argument("--submission-id", help="override the submission id (default: derived from the config hash, namespace and name)")
    add_profiles_parser(sub, _common)
    init = sub.add_parser("init", help="write an example tau.yaml")
    init.add_argument("dir", nargs="?", default=".", help="directory to write into")
    mk = sub.add_parser("multikueue", help="MultiKueue setup, drain, rotation, status, records")
    # No argparse choices: the removed `rollback` gets a one-line answer (exit 2) naming what replaced it.
    mk.add_argument("action", metavar="{" + ",".join(MULTIKUEUE_ACTIONS) + "}",
                    help="setup: the seed's 'Platform-owner configuration' 1-5 (after a drain it re-enables); "
                         "drain: the seed's 'Drain and rollback' 1-5; rotate: a worker credential; "
                         "status: the flow in force, exit 0 verified, 3 refused, 4 not verified; "
                         "records: the exercise records")
    mk.add_argument("--plan", help="the MultiKueue plan (YAML): workers, namespaces, queue and profile names "
                                   "(optional with --demo: the built-in lab plan)")
    mk.add_argument("--demo", action="store_true",
                    help="the simulated demo cluster: two lab workers to set up (lab-worker-1, lab-worker-2) and "
                         "its own MultiKueue workers (westus3-worker, eastus2-worker) to drain or rotate, "
                         "started in this process: its state lives only for that process and no record is written")
    mk.add_argument("--flow", choices=["setup", "drain", "rotate"],
                    help="status: the flow to report and take the exit code from (default: the flow of this "
                         "cluster's latest setup or drain record, else setup); rotate: the last rotation of "
                         "--worker (exit 4 while its old credential is not proven revoked)")
    mk.add_argument("--context", help="the manager's kubeconfig context (default: current)")
    mk.add_argument("--kubeconfig", help="kubeconfig file(s) for the manager and worker contexts (default: $KUBECONFIG)")
    mk.add_argument("--yes", action="store_true", help="apply every step without asking (scripts, CI)")
    mk.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each step's verification (default 300)")
    mk.add_argument("--cancel", action="append", default=[], metavar="NS/KIND/NAME",
                    help="drain: a pending owner to cancel (repeatable)")
    mk.add_argument("--cancel-pending", action="store_true", help="drain: cancel every pending owner of the dedicated queue")
    mk.add_argument("--worker", help="rotate, status --flow rotate: which worker (default: the plan's first)")
    mk.add_argument("--new-kubeconfig", help="rotate: the new credential's kubeconfig file")
    mk.add_argument("--new-context", help="rotate: the new credential as a kubeconfig context")
    mk.add_argument("--json", action="store_true", help="records: JSON lines instead of a table")
    audit = sub.add_parser("audit", help="check the audit log")
    audit_sub = audit.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    verify = audit_sub.add_parser("verify", help="check the signed hash chain and the recorded head; name the first bad line "
                                                 "(exit 0 verified, 1 not, 4 only against key files)")
    verify.add_argument("file", nargs="?", help="audit log (default: $XDG_STATE_HOME/tau-tui/audit.jsonl)")
    audit_sub.add_parser("key", help="show the signing key's fingerprint and public key (created on first use)")
    rotate = audit_sub.add_parser("rotate-key", help="replace the signing key; the rotation is an audit entry")
    rotate.add_argument("file", nargs="?", help="audit log to record it in (default: $XDG_STATE_HOME/tau-tui/audit.jsonl)")
    rotate.add_argument("--compromised", action="store_true",
                        help="the old key may have been read: nothing it signed verifies any more")
    start_over = audit_sub.add_parser("start-over", help="begin a new log after moving the old one aside")
    start_over.add_argument("file", nargs="?", help="audit log (default: $XDG_STATE_HOME/tau-tui/audit.jsonl)")
    for name, text in (("status", "one run's state, phases, diagnostics and next actions"),
                       ("runs", "list the Tau-managed Jobs and RayJobs"),
                       ("cancel", "delete a run and its headless Service")):
        cmd = sub.add_parser(name, help=text)
        if name == "cancel":
            cmd.add_argument("run", help="name of the Job or RayJob")
            cmd.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                             help="wait until the run's pods are gone (compute released), on the MultiKueue workers too "
                                  "(the default, as TauGrid's cancel: RayCluster pods drain through a 600 s grace); "
                                  "--no-wait returns after the delete")
            cmd.add_argument("--teardown-timeout", metavar="DURATION", type=duration_arg, default=900.0,
                             help="how long to wait for the release before exiting 1 (default 15m; 0 = no limit)")
            cmd.add_argument("--dry-run", choices=["server", "none"], default="none", help="server: send with dryRun=All")
            cmd.add_argument("--interval", metavar="DURATION", type=duration_arg, default=2.0,
                             help="time between reads with --wait (default 2s)")
        if name == "status":
            cmd.add_argument("run", help="name of the Job or RayJob")
            cmd.add_argument("--watch", action="store_true", help="print every change until startup completes or fails")
            cmd.add_argument("--events", action="store_true",
                             help="also list the Events about the run, its Workloads, pods and RayCluster (oldest first)")
            cmd.add_argument("--interval", metavar="DURATION", type=duration_arg, default=2.0,
                             help="time between reads with --watch (default 2s)")
        _run_connection_options(cmd)
        if name == "runs":
            cmd.add_argument("-A", "--all-namespaces", action="store_true",
                             help="every namespace, even when the kubeconfig context names one")
            cmd.add_argument("--queue", metavar="LQ", help="only the runs of this LocalQueue (kueue.x-k8s.io/queue-name)")
            cmd.add_argument("--include-external", action="store_true",
                             help="also the Jobs and RayJobs tau did not submit (never KubeRay's submitter Jobs)")
            # The actions' own options must not reset what was given before the action (argparse
            # lets a subparser's defaults overwrite the parent's values): SUPPRESS leaves them alone.
            add_recovery_parsers(cmd, lambda action: _run_connection_options(action, suppress=True))
    add_evidence_parser(sub)
    add_schema_parsers(sub, _common, _workspace_options)
    add_workspace_parser(sub, lambda cmd: _run_connection_options(cmd, workspace=False))
    add_logs_parser(sub, duration_arg)
    completion = sub.add_parser("completion", help="print the shell completion script")
    completion.add_argument("shell", choices=["bash", "zsh", "fish"],
                            help="bash: source it or save it as ~/.local/share/bash-completion/completions/tau-tui; "
                                 "zsh: save it as _tau-tui in a folder on $fpath; fish: save it as "
                                 "~/.config/fish/completions/tau-tui.fish")
    return parser


def _workspace_options(cmd: argparse.ArgumentParser, text: str, suppress: bool = False) -> None:
    unset: Any = argparse.SUPPRESS if suppress else None
    cmd.add_argument("--workspace", metavar="WS", default=unset, help=text)
    cmd.add_argument("--system-namespace", metavar="NS", default=unset,
                     help="where TauWorkspaces live (default: tau-system, then the legacy tau-platform)")


def _run_connection_options(cmd: argparse.ArgumentParser, suppress: bool = False, workspace: bool = True) -> None:
    """-n, -o, --context, --demo, --workspace and --request-timeout of the run commands; ``suppress`` for
    an action under `runs`, so what was given before the action is kept."""
    unset: Any = argparse.SUPPRESS if suppress else None
    if workspace:
        _workspace_options(cmd, "take the namespace from this TauWorkspace (when -n is not given)", suppress)
    cmd.add_argument("-n", "--namespace", default=unset, help="namespace (default: the context's, else default)")
    cmd.add_argument("-o", "--output", choices=["table", "json", "yaml"], default=unset if suppress else "table",
                     help="output format")
    cmd.add_argument("--context", default=unset, help="kubeconfig context (default: current)")
    cmd.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO", default=unset,
                     help="read the embedded simulated cluster instead (scenario: demo, faults, large, xl)")
    cmd.add_argument("--request-timeout", metavar="DURATION", type=duration_arg, default=unset,
                     help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; default 30s)")


def add_recovery_parsers(runs: argparse.ArgumentParser,
                         add_connection_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """`runs retry RUN` and `runs resume RUN` under `runs` (which alone still lists the runs)."""
    actions = runs.add_subparsers(dest="runs_command", metavar="ACTION")
    retry = actions.add_parser("retry", help="retry a failed run as its resilience.* allows")
    resume = actions.add_parser("resume", help="resubmit a finished run from its last checkpoint")
    for cmd in (retry, resume):
        cmd.add_argument("run", help="name of the failed Job or RayJob")
        cmd.add_argument("--dry-run", choices=["server", "none"], default="none",
                         help="server: show the plan and send it with dryRun=All; change nothing")
        cmd.add_argument("--yes", action="store_true", help="apply without asking (scripts)")
        add_connection_options(cmd)
    retry.add_argument("--wait", action="store_true", help="sleep out the backoff instead of refusing")
    resume.add_argument("--force", action="store_true", help="resume even though the last failure was OOMKilled")
    resume.add_argument("--from", dest="from_path", metavar="PATH", help="checkpoint directory (default: the run's TAU_RESUME_FROM)")
    resume.add_argument("-c", "--config", metavar="FILE",
                        help="resume with this tau.yaml (warns when its config hash differs from the run's)")


def add_evidence_parser(sub) -> None:
    evidence = sub.add_parser("evidence", help="evidence records of finished runs: list, export, verify")
    actions = evidence.add_subparsers(dest="evidence_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the records kept on this machine")
    listing.add_argument("-n", "--namespace", help="only this namespace")
    listing.add_argument("-o", "--output", choices=["table", "json"], default="table")
    listing.add_argument("--demo", action="store_true", help="the simulated cluster's records (kept apart)")
    export = actions.add_parser("export", help="write a run's evidence as a .tar.gz bundle (captured first if needed)")
    export.add_argument("run", help="the Job or RayJob name")
    export.add_argument("-n", "--namespace", help="its namespace (default: the context's)")
    export.add_argument("-o", "--output", dest="output_file", metavar="FILE",
                        help="bundle path or directory (default: ./evidence-NS-NAME-SUBMISSION.tar.gz)")
    export.add_argument("--force", action="store_true", help="replace an existing file")
    export.add_argument("--context", help="kubeconfig context (default: current)")
    export.add_argument("--request-timeout", metavar="DURATION", type=duration_arg,
                        help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; default 30s)")
    export.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO", help="the embedded simulated cluster")
    verify = actions.add_parser("verify", help="check a bundle's signature and files against its manifest "
                                               "(exit 0 verified, 1 not, 4 only against key files or the demo's key)")
    verify.add_argument("bundle", help="the .tar.gz bundle")
    verify.add_argument("--demo", action="store_true",
                        help="a bundle of the simulated cluster, checked against the demo's own key")
    verify.add_argument("--key", metavar="FINGERPRINT|PUBKEY",
                        help="the signer to expect: SHA256:... fingerprint or base64 public key "
                             "(default: one of your own keys)")
