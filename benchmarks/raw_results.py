"""Every benchmark's raw numbers, written as JSON beside the table it prints."""

from __future__ import annotations

import json
from pathlib import Path


def save_raw(path: str | Path, data: object, indent: int = 1) -> Path:
    """Write ``data`` to ``path`` as JSON, making its folder first; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=indent))
    return target
