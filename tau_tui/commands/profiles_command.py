"""`tau-tui profiles` (every workload profile and why it is or is not selectable) and
`tau-tui profiles export` (a TauWorkloadProfileSnapshot of the live TauCluster, failing closed)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_FAILED, EXIT_INVALID, EXIT_OK

ALPHA_MARK = "MultiKueue, Alpha"


def cmd_profiles(args: argparse.Namespace) -> int:
    if getattr(args, "profiles_command", None) == "export":
        return cmd_profiles_export(args)
    from ..core.runconfig.profiles import MULTIKUEUE_TARGET, Caller, explain

    profile_set = _profile_set(args)
    # Profile names and reasons come from a file or a cluster: escaped, never printed raw.
    print(escape_control(f"profiles from {profile_set.source}"))
    for problem in profile_set.gate_problems:
        print(escape_control(f"  gate closed: {problem}"))
    for item in explain(profile_set, Caller(args.namespace, args.team, args.lane)):
        mark = "✓ selectable" if item.selectable else "✗ not selectable"
        alpha = f" ({ALPHA_MARK})" if item.profile.execution_target == MULTIKUEUE_TARGET else ""
        print(escape_control(f"{item.name}{alpha}: {mark}"))
        for reason in item.reasons:
            print(escape_control(f"    - {reason}"))
    return EXIT_OK


def _profile_set(args: argparse.Namespace):
    from ..core.runconfig.profiles import load_snapshot

    if args.profiles:
        return load_snapshot(args.profiles)
    from .run_commands import _read_backend

    return live_profile_set(args, _read_backend(args))


def live_profile_set(args: argparse.Namespace, backend):
    """TauCluster/cluster's profiles: the simulated cluster's with --demo, else read with the advice of
    `profile_reader` for each way the read can fail."""
    from ..core.runconfig.profiles import profile_set_from_taucluster

    if args.demo is not None:
        return profile_set_from_taucluster(tau_cluster_object(backend) or {})
    from ..core.cluster.profile_reader import read_profile_set

    return read_profile_set(backend.http.api_client)


def tau_cluster_object(backend) -> dict | None:
    """TauCluster/cluster as served, through one list request (None: not there, or not installed)."""
    from ..core.cluster.kinds import ResourceKind

    found = [v for v in backend.fetch(ResourceKind.TAU_CLUSTER) if v.name == "cluster"]
    return dict(found[0].raw) if found else None


def cmd_profiles_export(args: argparse.Namespace) -> int:
    import yaml

    from ..core.operations.profile_export import ExportRefused, export_snapshot

    target = Path(args.output_file) if args.output_file else None
    if target is not None and target.exists() and not args.force:
        print(escape_control(f"tau-tui: {target} exists; left unchanged (--force replaces it)"), file=sys.stderr)
        return EXIT_INVALID
    from .run_commands import _read_backend

    try:
        export = export_snapshot(tau_cluster_object(_read_backend(args)))
    except ExportRefused as refused:
        print("tau-tui: profiles export refused: the TauCluster's workload profile status cannot be trusted", file=sys.stderr)
        for problem in refused.problems:
            print(escape_control(f"  - {problem}"), file=sys.stderr)
        print("  fix: wait for the tau-core controller to reconcile, then export again; nothing was written", file=sys.stderr)
        return EXIT_FAILED
    document = export.document
    if export.not_ready:
        print(escape_control(f"tau-tui: warning: {export.set_condition or 'some profiles are not Ready'}: "
                             f"{', '.join(export.not_ready)} exported with Ready=False; they are not selectable offline"),
              file=sys.stderr)
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    if target is None:
        sys.stdout.write(text)
        return EXIT_OK
    _write_atomically(target, text)
    print(escape_control(f"wrote {target}: {len(document['profiles'])} profile(s), TauCluster generation "
                         f"{document['tauClusterGeneration']}, profileSetHash {document['profileSetHash'][:12]}"), file=sys.stderr)
    return EXIT_OK


def _write_atomically(target: Path, text: str) -> None:
    """A whole file or none: written beside the target (0666 less the umask), then renamed over it."""
    temp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
