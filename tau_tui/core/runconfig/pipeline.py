"""The one pipeline the CLI and the compose pane share: load → profiles → resolve → render."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError, shown
from tau_tui.core.runconfig.manifest_parts import submission_id_for
from tau_tui.core.runconfig.manifests import render
from tau_tui.core.runconfig.profiles import ProfileSet, load_snapshot
from tau_tui.core.runconfig.resolve import RenderOptions, Resolution, resolve
from tau_tui.core.runconfig.yamlsource import FileRefused, file_mode


@dataclass
class RenderedRun:
    loaded: LoadedConfig
    resolution: Resolution
    submission_id: str
    manifests: list[dict[str, Any]]


def snapshot_path(loaded: LoadedConfig, override: str | None) -> Path | None:
    if override:
        return Path(override)
    declared = loaded.config.policy.workload_profile_snapshot
    if declared:
        return (loaded.base_dir / declared) if not Path(declared).is_absolute() else Path(declared)
    return None


def load_profiles(loaded: LoadedConfig, snapshot_override: str | None, read_live: Callable[[], ProfileSet] | None, client_dry_run: bool) -> ProfileSet:
    """Offline snapshot (client dry-run only) or the live TauCluster; every failure is a Diagnostic."""
    snapshot = snapshot_path(loaded, snapshot_override)
    if snapshot is not None:
        if not client_dry_run:
            raise DiagnosticError([loaded.diagnostic(("policy", "workload_profile_snapshot"), "a profile snapshot is accepted only for a client dry-run", "use `tau-tui render` for offline checks; submit reads the live TauCluster")])
        if not snapshot_override:
            try:
                file_mode(snapshot)
            except FileRefused as refused:
                # Named in the config: point at the key that names it, not at a file that cannot be opened.
                declared = loaded.config.policy.workload_profile_snapshot
                raise DiagnosticError([loaded.diagnostic(("policy", "workload_profile_snapshot"), f"snapshot {shown(declared)} cannot be used: {refused.message}", refused.hint)]) from None
        return load_snapshot(snapshot)
    if read_live is None:
        raise DiagnosticError([Diagnostic(loaded.file, "no workload profiles available: no cluster and no snapshot", hint="pass --profiles SNAPSHOT, set policy.workload_profile_snapshot, or use a kubeconfig context")])
    # A ProfileReadError is a cluster problem, not bad input: it propagates as such.
    return read_live()


def render_run(loaded: LoadedConfig, profile_set: ProfileSet, options: RenderOptions) -> RenderedRun:
    resolution = resolve(loaded, profile_set, options)
    sid = options.submission_id or submission_id_for(loaded, resolution)
    return RenderedRun(loaded, resolution, sid, render(loaded, resolution, sid))
