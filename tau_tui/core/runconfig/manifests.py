"""Render a resolved run to `batch/v1` Job (+ headless Service) or `ray.io/v1` RayJob (taugrid.md §5).

Output is plain dicts in a fixed key order, so the same input gives byte-identical YAML.  The parts
live by idea: `manifest_parts.py` (what both share), `job_manifest.py`, `rayjob_manifest.py`,
`payload.py` (the script or project carried inside the object).
"""

from __future__ import annotations

from typing import Any

import yaml

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.job_manifest import render_job
from tau_tui.core.runconfig.manifest_parts import submission_id_for
from tau_tui.core.runconfig.rayjob_manifest import render_rayjob
from tau_tui.core.runconfig.resolve import Resolution


def render(loaded: LoadedConfig, resolution: Resolution, submission_id: str | None = None) -> list[dict[str, Any]]:
    sid = submission_id or submission_id_for(loaded, resolution)
    if loaded.engine == "job":
        return render_job(loaded, resolution, sid)
    return render_rayjob(loaded, resolution, sid)


class _PlainDumper(yaml.SafeDumper):
    """Never writes &anchors/*aliases: manifests are read by people and by kubectl."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(manifests: list[dict[str, Any]]) -> str:
    return yaml.dump_all(manifests, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, width=120, explicit_start=True)
