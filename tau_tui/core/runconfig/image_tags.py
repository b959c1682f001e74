"""Mutable image tags: `latest`, or no tag at all, runs whatever the registry holds that day.  The
overview asks for pinned tags or digests; a warning here, an error with `--strict`."""

from __future__ import annotations

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic, shown


def mutable_tag(image: str) -> str | None:
    """Why ``image`` is not pinned ("untagged", "tagged latest"), or None for a version tag or a digest."""
    if "@" in image:
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "untagged (Docker reads it as latest)"
    if last.rsplit(":", 1)[1] == "latest":
        return "tagged latest"
    return None


def image_tag_warnings(loaded: LoadedConfig) -> list[Diagnostic]:
    image = loaded.config.runtime.image
    why = mutable_tag(image) if image else None
    if why is None:
        return []
    return [loaded.diagnostic(("runtime", "image"), f"{shown(image)} is {why}: the run gets whatever the registry holds when "
                              "a pod starts, and a retry may run other code", "pin a version tag (python:3.12-slim) or a digest "
                              "(image@sha256:...); --strict makes this an error", severity="warning")]
