"""Saving a spool to a file the user named, and saying when the file is more private than their umask asks."""

from __future__ import annotations

import os

from .spool import LogSpool


def save_spool(spool: LogSpool, path: str) -> int:
    """Save a spool to ``path`` (atomic replace); returns the line count."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    return spool.save(path)


def _current_umask() -> int | None:
    """Read without os.umask(), which would change it for every thread meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def save_narrowed(path: str) -> str | None:
    """If the user's umask alone would have let more people read a saved file than
    its mode now does, say so (``"mode 0600 (umask 022 allows 0644)"``); else None."""
    umask = _current_umask()
    if umask is None:
        return None
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return None
    wanted = 0o666 & ~umask
    if wanted & ~mode:
        return f"mode {mode:04o}, as private as the log spool (your umask {umask:03o} allows {wanted:04o})"
    return None
