"""Directories the app keeps private state in (the audit log, the key files, the evidence store):
every directory it has to create on the way is made 0700, not just the last one (``Path.mkdir``'s
``parents=True`` gives the intermediate ones the umask's mode, 0755 under the usual 022)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700


def private_directory(path: Path) -> Path:
    """Create ``path`` and each missing parent with mode 0700 (existing ones are left as they are)."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(directory, PRIVATE_DIR_MODE)  # mkdir's mode is narrowed by the umask, never widened
    return path
