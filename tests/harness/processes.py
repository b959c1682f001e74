"""Child processes of the harness: started with a log file, stopped by their own PID only."""

from __future__ import annotations

import atexit
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class HarnessStartError(RuntimeError):
    """A control plane component did not come up; the message carries its log tail."""


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


_FALLBACK_EPHEMERAL_LOW = 32768
_LOWEST_PORT = 10000
_ports_handed_out: set[int] = set()
# Its own generator: a test that seeds the module's random must not make every plane pick the same ports.
_port_choice = random.SystemRandom()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _FALLBACK_EPHEMERAL_LOW


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing is bound to right now, below the kernel's ephemeral range.

    Components start seconds after their ports are chosen. A port from the ephemeral range can be
    taken meanwhile as the local end of some outgoing connection (CI saw KWOK fail with "bind:
    address already in use"); ports below that range are only ever taken by an explicit bind.
    """
    low, high = worker_port_range(_LOWEST_PORT, _ephemeral_low() - 1)
    for _ in range(200):
        port = _port_choice.randint(low, high)
        if port in _ports_handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_handed_out.add(port)
        return port
    raise HarnessStartError(f"no free TCP port on 127.0.0.1 between {low} and {high}")


def worker_port_range(low: int, high: int) -> tuple[int, int]:
    """The part of ``low..high`` this pytest-xdist worker picks ports from (all of it outside xdist).

    Two workers start planes at once, each remembering only its own ports; a port one of them
    chose is still free until its component binds it seconds later, so the other could choose it
    too (a suite run saw Kueue's webhook fail with "bind: address already in use"). Disjoint slices
    cannot. Not covered: a worker xdist starts in place of a crashed one (gw2 of 2 takes gw0's slice),
    and two pytest runs on one host."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    try:
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        index = int(worker.removeprefix("gw"))
    except ValueError:
        return low, high
    if count <= 1 or not worker.startswith("gw"):
        return low, high
    span = (high - low + 1) // count
    if span < 1:
        return low, high
    start = low + (index % count) * span
    return start, start + span - 1


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


_live: dict[int, ManagedProcess] = {}


class ManagedProcess:
    """One long-running component (etcd, kube-apiserver, kueue ...)."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        if self.running():
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(self.env or {})},
                start_new_session=True,
            )
        finally:
            log.close()
        _live[self._proc.pid] = self

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, kill: bool = False, timeout: float = 15.0) -> None:
        """SIGKILL when `kill`, else SIGTERM with a SIGKILL fallback after `timeout` seconds."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        _live.pop(proc.pid, None)
        self._proc = None

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float) -> None:
        """Poll `check` until true; fail with the log tail if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise HarnessStartError(
                    f"{self.name} exited (code {self._proc.returncode if self._proc else '?'}) "
                    f"before {what}. Log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                if check():
                    return
            except Exception:  # noqa: BLE001 - any failure means "not ready yet"
                pass
            time.sleep(0.25)
        raise HarnessStartError(
            f"{self.name} did not reach '{what}' within {timeout:.0f}s. "
            f"Log {self.log_path}:\n{log_tail(self.log_path)}"
        )


@atexit.register
def _stop_leftovers() -> None:
    # Backstop for interpreter exit without fixture teardown; only our own children.
    for proc in list(_live.values()):
        proc.stop(kill=True, timeout=5)
