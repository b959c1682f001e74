"""`tau-tui schema` (the JSON Schema of tau.yaml) and `tau-tui explain-config FILE` (each effective value
and where it came from), as TauGrid's `tau run schema -o json` and `tau run explain-config`."""

from __future__ import annotations

import argparse
import json
import sys

from ..core.runconfig.diagnostics import escape_control
from .parser import EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from ..core.runconfig.json_schema import config_json_schema

    schema = config_json_schema()
    if args.output == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(schema, sort_keys=False, allow_unicode=True))
    else:
        print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK


def cmd_explain_config(args: argparse.Namespace) -> int:
    from ..core.runconfig.explain import explain_config, explain_document
    from ..core.runconfig.loader import load_config
    from ..core.runconfig.pipeline import load_profiles, render_run, snapshot_path
    from ..core.runconfig.resolve import RenderOptions

    loaded = load_config(args.file)
    workspace = None
    if args.profiles or snapshot_path(loaded, None) is not None:
        profile_set = load_profiles(loaded, args.profiles, None, client_dry_run=True)
        basis = f"profiles from {profile_set.source}; offline, so no workspace is read (as a client dry-run)"
    else:
        from .profiles_command import live_profile_set
        from .run_commands import _read_backend
        from .workspace_command import workspace_for_run

        backend = _read_backend(args)
        workspace = workspace_for_run(backend, args)
        profile_set = live_profile_set(args, backend)
        basis = (f"profiles from {profile_set.source}; "
                 + (f"workspace {workspace.name} ({'named' if args.workspace else 'primary'})" if workspace else "no workspace"))
    run = render_run(loaded, profile_set, RenderOptions(args.namespace, args.team, args.lane, workspace=workspace))
    rows = explain_config(loaded, run.resolution)
    if args.output != "table":
        from .run_commands import _print_document

        _print_document({"file": loaded.file, "basis": basis, **explain_document(rows)}, args.output, [])
        return EXIT_OK
    print(escape_control(f"{loaded.file}: {basis}"))
    width = max(len(r.key) for r in rows)
    for row in rows:
        value = json.dumps(row.value, ensure_ascii=False) if not isinstance(row.value, str) else row.value
        line = f"{row.key:<{width}}  {value}  ← {row.source}" + (f"  ({row.note})" if row.note else "")
        print(escape_control(line))
    return EXIT_OK
