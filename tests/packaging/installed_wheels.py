"""A wheelhouse made offline from this virtual environment's installed distributions, so an install
test needs no package registry: each third-party distribution tau-tui needs is packed back into a
wheel from the files its RECORD lists, with its own dist-info and wheel tags.

Files outside site-packages (console scripts, data files) are left out: pip writes the console
scripts again from entry_points.txt.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import zipfile
from pathlib import Path

from packaging.utils import canonicalize_name

from tests.packaging.test_agent_package import LOCAL, requirement_closure

#: What pip writes at install time and a wheel does not carry.
INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _tags(dist: importlib.metadata.Distribution) -> str:
    """``py3-none-any``, or the compressed set ``cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64``."""
    tags = [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines() if line.startswith("Tag:")]
    if not tags:
        raise ValueError(f"{dist.metadata['Name']} has no wheel tags (installed from something else than a wheel)")
    parts = [tag.split("-") for tag in tags]
    return "-".join(".".join(sorted({p[i] for p in parts})) for i in range(3))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def pack(name: str, into: Path) -> Path:
    """The installed distribution ``name`` as a wheel in ``into``."""
    dist = importlib.metadata.distribution(name)
    dist_info = next(Path(str(f)).parts[0] for f in dist.files or () if Path(str(f)).parts[0].endswith(".dist-info"))
    version = dist.version
    wheel = into / f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{version}-{_tags(dist)}.whl"
    record: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in dist.files or ():
            path = str(file)
            parts = Path(path).parts
            if parts[0] == ".." or "__pycache__" in parts or path.endswith(".pyc"):
                continue
            if parts[0] == dist_info and parts[-1] in INSTALL_ONLY:
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            archive.writestr(path, data)
            record.append(_record_line(path, data))
        record.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


def wheelhouse_for_tau_tui(into: Path) -> list[Path]:
    """A wheel of every third-party distribution tau-tui's install needs (its requirement closure)."""
    into.mkdir(parents=True, exist_ok=True)
    local = {canonicalize_name(n) for n in LOCAL}
    return [pack(name, into) for name in sorted(set(requirement_closure("tau-tui")) - local)]
