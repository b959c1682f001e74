"""Each process's spool directory, removed when it exits, and the clean-up of spools of processes that are gone."""

from __future__ import annotations

import atexit
import os
import shutil
import threading

_process_dirs: dict[str, str] = {}  # spool base -> this process's directory in it
_process_dirs_lock = threading.Lock()


def _process_tag(pid: int) -> str | None:
    """``pid-starttime``: a PID reused by a later process does not look alive to us.
    None when the process does not exist (or /proc is missing: then only the PID)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return f"{pid}-{int(fields[19])}"  # field 22 of stat: start time in clock ticks
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else _pid_alive_tag(pid)
    except (OSError, IndexError, ValueError):
        return _pid_alive_tag(pid)


def _pid_alive_tag(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return str(pid)


def clean_stale_spools(base: str | os.PathLike[str]) -> list[str]:
    """Remove the spool directories of processes that are gone (or whose PID was reused),
    and loose spool files of the old one-directory layout.  Returns what was removed."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return removed
    for entry in entries:
        path = entry.path
        if entry.is_dir(follow_symlinks=False):
            pid_text = entry.name.split("-", 1)[0]
            if not pid_text.isdigit():
                continue
            tag = _process_tag(int(pid_text))
            if tag is not None and (tag == entry.name or "-" not in entry.name or "-" not in tag):
                continue  # its owner is alive
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif entry.name.startswith("tau-log-") and entry.name.endswith(".log"):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def process_spool_dir(base: str | os.PathLike[str]) -> str:
    """This process's spool directory under ``base`` (0700, named ``pid-starttime``):
    created on first use after removing stale ones, and removed when the process exits
    (atexit; SIGTERM/SIGHUP reach it through :func:`tau_tui.core.exit_signals.install_exit_on_signals`).
    Whatever escapes (SIGKILL, a crash) is removed by the next start's :func:`clean_stale_spools`."""
    key = os.path.abspath(base)
    with _process_dirs_lock:
        existing = _process_dirs.get(key)
        if existing is not None and os.path.isdir(existing):
            return existing
        os.makedirs(key, mode=0o700, exist_ok=True)
        clean_stale_spools(key)
        directory = os.path.join(key, _process_tag(os.getpid()) or str(os.getpid()))
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        if not _process_dirs:
            atexit.register(remove_process_spool_dirs)
        _process_dirs[key] = directory
        return directory


def remove_process_spool_dirs() -> None:
    """Remove every spool directory this process made (its spools with them)."""
    with _process_dirs_lock:
        directories = list(_process_dirs.values())
        _process_dirs.clear()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
