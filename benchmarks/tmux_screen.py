"""A terminal program in its own tmux server, read as a person reads it (`capture-pane -p`);
shared by the benchmarks that time what appears on screen."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid


def exit_on_termination() -> None:
    """A benchmark ended by SIGTERM or SIGHUP (``timeout``, a closed terminal) still runs its
    ``finally: screen.stop()``; without this the tool it started kept running (once for 90 minutes,
    beside every later measurement)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, lambda number, _frame: sys.exit(128 + number))


class Screen:
    """One tool in its own tmux server (default 160x48); stopped by PID, then that server is killed."""

    def __init__(self, name: str, command: list[str], env: dict, size: tuple[int, int] = (160, 48)):
        self.socket = f"tau-bench-{uuid.uuid4().hex[:8]}"
        self.name = name
        self.env = env
        self.command = command
        self.size = size
        self.pid: int | None = None

    def _tmux(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True, timeout=30)

    def tmux(self, *args: str) -> str:
        """A tmux command on this tool's server (``-t bench`` names its pane); its output."""
        return self._tmux(*args).stdout

    def start(self) -> float:
        exit_on_termination()
        started = time.monotonic()
        shell = "exec " + " ".join(_quote(a) for a in self.command)
        self._tmux("new-session", "-d", "-s", "bench", "-x", str(self.size[0]), "-y", str(self.size[1]), shell)
        pid = self._tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").stdout.strip()
        self.pid = int(pid) if pid.isdigit() else None
        return started

    def capture(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "bench").stdout

    def send(self, *keys: str, literal: bool = False) -> float:
        """tmux key names (``Escape``, ``Enter``), or text with ``literal``.  Returns the
        ``time.monotonic()`` read just before ``tmux send-keys`` ran: a key's time starts there
        (tmux's own round trip is part of what a person waits for, so nothing is subtracted)."""
        sent = time.monotonic()
        self._tmux("send-keys", "-t", "bench", *(["-l"] if literal else []), *keys)
        return sent

    def rss(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MB of the tool's process."""
        values = {"VmRSS": 0.0, "VmHWM": 0.0}
        try:
            for line in open(f"/proc/{self.pid}/status"):
                key = line.split(":")[0]
                if key in values:
                    values[key] = int(line.split()[1]) / 1024
        except (OSError, TypeError):
            pass
        return values["VmRSS"], values["VmHWM"]

    def stop(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 15)
                for _ in range(50):
                    os.kill(self.pid, 0)
                    time.sleep(0.1)
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
        self._tmux("kill-server")


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def header_lines(text: str) -> str:
    """The app's two header lines of a capture."""
    return "\n".join(text.splitlines()[:2])


def command_line(text: str) -> str:
    """The line above the footer: the ``:``/``/`` prompt and what was typed."""
    lines = text.splitlines()
    return lines[-2] if len(lines) >= 2 else ""


def rows_match(text: str, wanted: str, row: re.Pattern[str]) -> bool:
    """Every table row on screen (lines ``row`` finds) holds ``wanted``, as the filter matches: any case."""
    rows = [line for line in text.splitlines()[3:-3] if row.search(line)]
    return bool(rows) and all(wanted.lower() in line.lower() for line in rows)

