"""`tau-tui workspace list | status | check | quota show` (TauGrid's `tau workspace`, taugrid.md §2.5), and
the workspace a run command uses (`--workspace`, else the primary one for submit)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_FAILED, EXIT_NOT_READY, EXIT_OK


def workspace_for_run(backend, args: argparse.Namespace):
    """The TauWorkspace whose defaults a run gets: ``--workspace`` (an error if it cannot be read), else
    the primary one (none when the cluster marks none, or when workspaces cannot be read: said on stderr)."""
    from ..core.cluster.errors import ClusterError
    from ..core.cluster.workspaces import find_workspace

    name = getattr(args, "workspace", None)
    try:
        found = find_workspace(backend, name, getattr(args, "system_namespace", None))
    except ClusterError as err:
        if name:
            raise
        print(escape_control(f"tau-tui: warning: no workspace defaults: {err.message}"), file=sys.stderr)
        return None
    if found is not None and (problems := found.readiness_problems()):
        print(escape_control(f"tau-tui: warning: workspace {found.name} is not Ready: {'; '.join(problems)}"), file=sys.stderr)
    return found


def cmd_workspace(args: argparse.Namespace) -> int:
    from .run_commands import _read_backend

    backend = _read_backend(args)
    if args.workspace_command == "list":
        return _list(args, backend)
    from ..core.cluster.errors import ClusterError
    from ..core.cluster.workspaces import find_workspace

    try:
        ws = find_workspace(backend, args.name, args.system_namespace)
    except ClusterError as err:
        print(escape_control(f"tau-tui: {err.message}"), file=sys.stderr)
        return EXIT_FAILED
    if ws is None:
        print("tau-tui: no TauWorkspace is marked primary (tau.azure.com/v0-primary-workspace); name one: "
              "tau-tui workspace list", file=sys.stderr)
        return EXIT_FAILED
    if args.workspace_command == "quota":
        return _quota(args, backend, ws)
    problems = ws.readiness_problems()
    if args.workspace_command == "check":
        if problems:
            print(escape_control(f"workspace {ws.name}: not Ready: {'; '.join(problems)}"), file=sys.stderr)
            return EXIT_NOT_READY
        print(escape_control(f"workspace {ws.name}: Ready (namespace {ws.namespace}, queue {ws.queue or '-'})"))
        return EXIT_OK
    _emit(args, _status_document(ws, problems), _status_lines(ws, problems))
    return EXIT_OK


def _emit(args: argparse.Namespace, doc: Any, lines: list[str]) -> None:
    from .run_commands import _print_document

    _print_document(doc, args.output, lines)


def _list(args: argparse.Namespace, backend) -> int:
    from ..core.cluster.workspaces import read_workspaces

    read = read_workspaces(backend, args.system_namespace)
    rows = [("NAME", "NAMESPACE", "PHASE", "QUEUE", "CLUSTERQUEUE", "PRIMARY", "READY")]
    for ws in read.workspaces:
        rows.append((ws.name, ws.namespace, ws.phase or "?", ws.queue or "-", ws.cluster_queue or "-",
                     "yes" if ws.primary else "", "✓" if not ws.readiness_problems() else "✗"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if not read.workspaces:
        lines = [f"no TauWorkspaces in {read.where}"]
    doc = {"searched": list(read.searched), "workspaces": [_status_document(w, w.readiness_problems()) for w in read.workspaces]}
    _emit(args, doc, lines)
    return EXIT_OK


def _status_document(ws, problems: list[str]) -> dict[str, Any]:
    return {
        "name": ws.name, "systemNamespace": ws.system_namespace, "primary": ws.primary, "phase": ws.phase,
        "ready": not problems, "problems": problems, "namespace": ws.namespace,
        "queue": {"localQueue": ws.queue, "clusterQueue": ws.cluster_queue},
        "defaults": {"priority": ws.priority_tier, "outputRoot": ws.output_root, "ttlSecondsAfterFinished": ws.ttl_seconds_after_finished},
        "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in ws.conditions],
    }


def _status_lines(ws, problems: list[str]) -> list[str]:
    lines = [f"TauWorkspace {ws.system_namespace}/{ws.name}" + ("  (primary)" if ws.primary else ""),
             f"  phase:      {ws.phase or 'not reported'}" + ("  ✓ Ready" if not problems else "  ✗ not Ready"),
             f"  namespace:  {ws.namespace}",
             f"  queue:      {ws.queue or '-'} → ClusterQueue {ws.cluster_queue or '?'}",
             f"  defaults:   priority {ws.priority_tier or '-'}, output root {ws.output_root or '-'}, "
             f"TTL {ws.ttl_seconds_after_finished if ws.ttl_seconds_after_finished is not None else '-'}s (Jobs)",
             "  conditions:"]
    from ..core.runconfig.workspace import CONDITION_TYPES

    for type_ in CONDITION_TYPES:
        cond = ws.condition(type_)
        state = "absent" if cond is None else cond.status
        detail = "" if cond is None else ": ".join(p for p in (cond.reason, cond.message) if p)
        lines.append(f"    {type_:<22} {state}" + (f"  {detail}" if detail else ""))
    lines += [f"  ✗ {p}" for p in problems]
    return lines


def _quota(args: argparse.Namespace, backend, ws) -> int:
    from ..core.operations.workspace_quota import read_workspace_quota
    from ..core.quantity_text import human_quantity

    quota = read_workspace_quota(backend, ws, args.team or os.environ.get("TAU_TEAM") or None)
    lines = [f"workspace {ws.name}: LocalQueue {ws.namespace}/{quota.local_queue or '?'} → ClusterQueue "
             f"{quota.cluster_queue or '?'}" + (f" (cohort {quota.cohort})" if quota.cohort else "")]
    if quota.team_cohort:
        found = {True: "exists", False: "not found", None: "unknown"}[quota.team_cohort_found]
        lines.append(f"  team Cohort {quota.team_cohort}: {found}")
    if quota.lines:
        lines.append(f"  {'FLAVOR':<24} {'RESOURCE':<16} {'USED':>8} {'NOMINAL':>8} {'BORROWING LIMIT':>16}")
        for q in quota.lines:
            used = human_quantity(q.used, q.resource) if q.used is not None else "?"
            limit = human_quantity(q.borrowing_limit, q.resource) if q.borrowing_limit is not None else "-"
            lines.append(f"  {q.flavor:<24} {q.resource:<16} {used:>8} {human_quantity(q.nominal, q.resource):>8} {limit:>16}")
    if quota.pending is not None:
        lines.append(f"  workloads: {quota.pending} pending, {quota.admitted} admitted")
    lines += [f"  ✗ {p}" for p in quota.problems]
    _emit(args, quota.document(), lines)
    return EXIT_FAILED if quota.problems and not quota.lines else EXIT_OK
