"""Scenario runs submitted as tau-tui submits them.

A scenario job with ``tau:`` holds a tau.yaml as a mapping; it is rendered by the same pipeline as
``tau-tui submit`` (``core/runconfig``), with the packaged example ``train.py`` as its script and the
config's own queue (no profile), so the objects carry what the renderer writes: the
``tau.azure.com/workloadspec-execution`` policy (``resilience.*``), the config hash, ``TAU_RESUME_FROM``
and the data volume.  The simulator's knobs (how long it runs, how it ends) are added as annotations
of its own prefix, which the app never reads."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceType
from tau_tui.core.cluster.submission_kinds import resource_type_from_table
from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions


def examples_dir() -> Path:
    """The packaged examples (``train.py``), where a scenario's tau.yaml finds its script."""
    return Path(str(resources.files("tau_tui") / "examples"))


def rendered_run(config: Mapping[str, Any], namespace: str, sim_annotations: Mapping[str, str],
                 where: str) -> list[tuple[ResourceType, dict[str, Any]]]:
    """The objects ``tau-tui submit`` would create for ``config`` in ``namespace``, in creation order,
    with ``sim_annotations`` on the Job or RayJob."""
    try:
        loaded = load_config_text(yaml.safe_dump(dict(config), sort_keys=False), where, examples_dir())
        run = render_run(loaded, ProfileSet("none", None, "", []), RenderOptions(namespace))
    except DiagnosticError as err:
        raise ClusterError(f"{where}: the tau.yaml does not render: {err}") from None
    out = []
    for manifest in run.manifests:
        rt = resource_type_from_table(str(manifest.get("apiVersion")), str(manifest.get("kind")))
        if rt is None:
            raise ClusterError(f"{where}: the renderer made a {manifest.get('kind')} the simulation cannot hold")
        if manifest.get("kind") in ("Job", "RayJob"):
            manifest.setdefault("metadata", {}).setdefault("annotations", {}).update(sim_annotations)
        out.append((rt, manifest))
    return out
