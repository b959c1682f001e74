"""What ``tau-tui --version`` prints: the distribution's version and the commit it was built from.

From a git checkout (an editable install, ``python -m tau_tui`` in the repository) the commit is
the checkout's, with ``+changes`` when tracked files differ from it; from a wheel it is the one
``setup.py`` recorded in ``tau_tui/build_commit.txt`` when the wheel was built; else ``unknown``.
Standard library only: ``setup.py`` loads this file by path, before any dependency is installed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DISTRIBUTION = "tau-tui"
#: Written into the wheel's ``tau_tui/`` by setup.py (never into the source tree).
BUILD_COMMIT_FILE = "build_commit.txt"
UNKNOWN = "unknown"
_GIT_TIMEOUT_S = 5.0
_PACKAGE = Path(__file__).resolve().parent


def checkout_commit(root: Path) -> str | None:
    """``<12 hex>`` or ``<12 hex>+changes`` when ``root`` is the top of a git checkout, else None."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=_GIT_TIMEOUT_S)
        if head.returncode != 0 or not head.stdout.strip():
            return None
        changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+changes" if changed.returncode == 0 and changed.stdout.strip() else "")


def commit() -> str:
    """The commit of this code: the checkout's when it runs from one, else the one recorded at build time."""
    root = _PACKAGE.parent
    if (root / "pyproject.toml").is_file():
        found = checkout_commit(root)
        if found:
            return found
    try:
        recorded = (_PACKAGE / BUILD_COMMIT_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return UNKNOWN
    return recorded or UNKNOWN


def distribution_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN


def version_line() -> str:
    return f"tau-tui {distribution_version()} (commit {commit()})"
