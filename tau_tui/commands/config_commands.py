"""`validate`, `render`, `submit`, `profiles` and `init`: the commands that read or write a tau.yaml."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from dataclasses import replace
from pathlib import Path

from ..core.runconfig.diagnostics import Diagnostic, DiagnosticError, escape_control, report_lines
from ..core.runconfig.loader import load_config
from ..core.runconfig.manifests import to_yaml
from ..core.runconfig.resolve import RenderOptions
from .connection import live_profiles, request_timeouts
from .parser import EXIT_FAILED, EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from ..core.runconfig.pipeline import render_run, snapshot_path
    from ..core.runconfig.profiles import load_snapshot

    problems: list = []
    loaded = load_config(args.file, rule_errors=problems)  # shape errors raise, with the rule errors beside them
    snapshot = snapshot_path(loaded, args.profiles)
    warnings = list(loaded.warnings)
    if snapshot is not None:  # profile errors in the same run as the rule errors
        try:
            warnings += render_run(loaded, load_snapshot(snapshot), RenderOptions(None, None, None)).resolution.warnings
        except DiagnosticError as err:
            problems += err.diagnostics
    if problems:
        raise DiagnosticError(problems)
    report_warnings(warnings, args.strict)
    print(f"{escape_control(args.file)}: valid ({loaded.engine}, config hash {loaded.config_hash[:12]})", file=sys.stderr)
    return EXIT_OK


def cmd_render(args: argparse.Namespace) -> int:
    from ..core.runconfig.pipeline import load_profiles, render_run

    loaded = load_config(args.file)
    profile_set = load_profiles(loaded, args.profiles, live_profiles(args.context, request_timeouts(args)), client_dry_run=True)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id))
    report_warnings([*loaded.warnings, *run.resolution.warnings], args.strict)
    sys.stdout.write(to_yaml(run.manifests))
    return EXIT_OK


def report_warnings(warnings: list[Diagnostic], strict: bool) -> None:
    """Warnings on stderr, each with its fix; with ``--strict`` they are errors (exit 2, nothing rendered)."""
    if strict and warnings:
        raise DiagnosticError([replace(w, severity="error") for w in warnings])
    for line in report_lines(warnings):
        print(line, file=sys.stderr)


def cmd_submit(args: argparse.Namespace) -> int:
    from ..core.cluster.profile_reader import read_profile_set
    from ..core.cluster.real import KubernetesBackend
    from ..core.operations.admission_fit import request_totals, server_quota_warnings, summary_line
    from ..core.operations.audit import AuditLog, AuditWhere
    from ..core.runconfig.pipeline import load_profiles, render_run

    loaded = load_config(args.file)
    timeouts = request_timeouts(args)
    def checked_backend() -> KubernetesBackend:
        from ..core.cluster.kueue_api_support import refuse_unsupported_kueue

        made = KubernetesBackend(context=args.context, namespace=args.namespace, timeouts=timeouts)
        refuse_unsupported_kueue(made)  # a Kueue without v1beta2: one line and exit 7 before anything is sent
        return made

    # The backend is used for its mutations only: no watches are started for a one-shot submit.
    backend = functools.cache(checked_backend)
    profile_set = load_profiles(loaded, None, lambda: read_profile_set(backend().http.api_client), client_dry_run=False)
    # Not a client dry-run: the workspace's defaults apply (taugrid.md §2.3), the primary one's when none is named.
    from .workspace_command import workspace_for_run

    workspace = workspace_for_run(backend(), args)
    if workspace is not None:
        print(escape_control(f"{args.file}: workspace {workspace.name}" + (" (primary)" if not args.workspace else "")
                             + f": namespace {workspace.namespace}, queue {workspace.queue or '-'} as defaults"), file=sys.stderr)
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, args.submission_id, workspace=workspace))
    report_warnings([*loaded.warnings, *run.resolution.warnings], args.strict)
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
        if not dry_run:
            _keep_submission(args.file, run)
        return EXIT_OK
    return EXIT_FAILED


def _keep_submission(file: str, run) -> None:
    """The cluster keeps no tau.yaml: keep it, and the render, for the run's evidence record."""
    import sqlite3
    from datetime import UTC, datetime

    from ..core.operations.evidence.store import EvidenceStore
    from ..core.operations.evidence.submission import keep_submission

    try:
        keep_submission(EvidenceStore(), run.manifests, run.submission_id, Path(file).read_text(encoding="utf-8"),
                        str(Path(file).resolve()), source="cli", now=datetime.now(UTC))
    except (OSError, UnicodeDecodeError, sqlite3.Error) as err:
        print(f"{file}: warning: submitted, but the tau.yaml was not kept for the run's evidence record: {err}",
              file=sys.stderr)


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
