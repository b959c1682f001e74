"""Options of the commands that cover the rest of TauGrid's `tau` researcher job (issue 45): `profiles`
and `profiles export`, `schema`, `explain-config` and `workspace`.  Imports nothing heavy: the app
reads the command names through the parser at start."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

AddCommon = Callable[..., None]


def add_profiles_parser(sub: Any, add_common: AddCommon) -> None:
    profiles = sub.add_parser("profiles", help="explain every workload profile; export a snapshot of them")
    add_common(profiles, file=False)
    profiles.add_argument("--profiles", metavar="SNAPSHOT", help="offline TauWorkloadProfileSnapshot file")
    profiles.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO",
                          help="read the embedded simulated cluster instead (scenario: demo, faults, large, xl)")
    actions = profiles.add_subparsers(dest="profiles_command", metavar="ACTION")
    export = actions.add_parser("export", help="write a TauWorkloadProfileSnapshot of the live TauCluster (fails closed)")
    export.add_argument("-o", "--output", dest="output_file", metavar="FILE", help="where to write it (default: stdout)")
    export.add_argument("--force", action="store_true", help="replace an existing FILE")
    # Given before or after `export`, both work: SUPPRESS keeps what the parent parsed.
    export.add_argument("--context", default=argparse.SUPPRESS, help="kubeconfig context (default: current)")
    export.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO", default=argparse.SUPPRESS,
                        help="export from the embedded simulated cluster")


def add_schema_parsers(sub: Any, add_common: AddCommon, add_workspace: Callable[..., None]) -> None:
    schema = sub.add_parser("schema", help="the JSON Schema of tau.yaml")
    schema.add_argument("-o", "--output", choices=["json", "yaml"], default="json", help="output format (default json)")
    explain = sub.add_parser("explain-config", help="every effective value of a tau.yaml and where it came from")
    add_common(explain)
    explain.add_argument("--profiles", metavar="SNAPSHOT", help="offline TauWorkloadProfileSnapshot (no workspace is read then)")
    explain.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO", help="resolve against the embedded simulated cluster")
    add_workspace(explain, "the TauWorkspace whose defaults apply (default: the cluster's primary workspace)")
    explain.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table", help="output format")


def add_workspace_parser(sub: Any, add_connection: Callable[[argparse.ArgumentParser], None]) -> None:
    workspace = sub.add_parser("workspace", help="TauWorkspaces: list, status, check, quota show")
    actions = workspace.add_subparsers(dest="workspace_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every TauWorkspace, its phase, namespace and queue")
    status = actions.add_parser("status", help="one workspace: phase, conditions, defaults")
    check = actions.add_parser("check", help="exit 0 if the workspace is Ready, 3 if not (or stale), 1 if not found")
    quota = actions.add_parser("quota", help="the quota behind a workspace")
    quota_actions = quota.add_subparsers(dest="quota_command", metavar="ACTION", required=True)
    show = quota_actions.add_parser("show", help="the workspace's LocalQueue, ClusterQueue quota and use, team Cohort")
    for cmd in (status, check, show):
        cmd.add_argument("name", nargs="?", help="the workspace (default: the primary one)")
    show.add_argument("--team", help="team for the Cohort tau-team-<team> (default: $TAU_TEAM)")
    for cmd in (listing, status, check, show):
        add_connection(cmd)
        cmd.add_argument("--system-namespace", metavar="NS",
                         help="where TauWorkspaces live (default: tau-system, then the legacy tau-platform)")
