"""The simulated cluster's own process (``process_server.py``), started and owned by the app's.

It listens on a Unix socket in a private temporary folder (mode 0700), behind a random
authentication key that only its standard input carries; it writes what it prints to a log file in
that folder, never to the app's terminal, and ends when its standard input closes (this process
ended, crashed or called :meth:`stop`)."""

from __future__ import annotations

import atexit
import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from multiprocessing.connection import Client, Connection
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.sim.process_wire import CALL, CONTROL, decode_error

#: How long building the world may take (the ``large`` scenario: about 10 s on a busy 2-core VM).
START_TIMEOUT_S = 300.0
#: How long a call may take (the heaviest, positions of a 2,000-Workload queue, takes about 0.2 s).
CALL_TIMEOUT_S = 60.0


class SimulatedClusterProcess:
    """``factory`` ("module:function") builds the world(s) in the new process from ``args``;
    ``realtime``: the worlds tick with the wall clock there (otherwise only when told to)."""

    def __init__(self, factory: str, args: Sequence[Any] = (), *, realtime: bool, tick_seconds: float = 1.0,
                 start_timeout: float = START_TIMEOUT_S) -> None:
        self._stopped = False
        self._folder = tempfile.mkdtemp(prefix="tau-sim-")
        atexit.register(self.stop)  # a process that leaves by os._exit still runs these (leave_now)
        self.address = os.path.join(self._folder, "cluster.sock")
        self._log_path = os.path.join(self._folder, "cluster.log")
        self._authkey = secrets.token_bytes(32)
        self._idle_calls: list[Connection] = []
        self._lock = threading.Lock()
        self._control: Connection | None = None
        spec = {"factory": factory, "args": list(args), "realtime": realtime, "tick_seconds": tick_seconds,
                "socket": self.address, "authkey": self._authkey.hex(), "sys_path": sys.path}
        try:
            with open(self._log_path, "wb") as log:
                # -P: the working folder is not put on the path (a checkout's secrets.py is not run)
                self.process = subprocess.Popen(
                    [sys.executable, "-P", "-m", "tau_tui.core.sim.process_server"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        except OSError:
            atexit.unregister(self.stop)
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        try:
            self._handshake(spec, start_timeout)
            self._control = self.connect(CONTROL)  # here, so a note never waits for a connect
        except BaseException:
            self.stop()
            raise

    def _handshake(self, spec: dict[str, Any], timeout: float) -> None:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write((json.dumps(spec) + "\n").encode())
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], timeout)
        line = stdout.readline() if ready else b""  # the server writes its one line whole, then closes
        if not line:
            raise ClusterError(f"the simulated cluster did not start: {self.gone_reason() if ready else f'no answer in {timeout:.0f} s'}")
        try:
            answer = json.loads(line)
        except ValueError:
            raise ClusterError(f"the simulated cluster did not start: it answered {line[:200]!r}") from None
        if "error" in answer:
            raise ClusterError(answer["error"]) if answer.get("cluster_error") else ClusterError(
                f"the simulated cluster failed to start: {answer['error']}")

    # -- connections -------------------------------------------------------------

    def connect(self, *hello: Any) -> Connection:
        """A new connection that opens with ``hello`` (its role and the role's arguments)."""
        try:
            conn = Client(self.address, family="AF_UNIX", authkey=self._authkey)
            conn.send(hello)
        except (OSError, EOFError):
            raise self.gone() from None
        return conn

    def call(self, session: int | None, name: str, *args: Any,
             timeout: float = CALL_TIMEOUT_S) -> tuple[Any, dict[int, int]]:
        """One call on a connection of the pool: ``(result, each session's last marked batch)``."""
        with self._lock:
            conn = self._idle_calls.pop() if self._idle_calls else None
        if conn is None:
            conn = self.connect(CALL)
        try:
            conn.send((session, name, args))
            if not conn.poll(timeout):
                conn.close()  # its answer may still come: this connection is not used again
                raise ApiFailure(0, "", f"the simulated cluster did not answer {name} in {timeout:.0f} s")
            status, value, marks = conn.recv()
        except (OSError, EOFError):
            conn.close()
            raise self.gone() from None
        with self._lock:
            self._idle_calls.append(conn)
        if status == "err":
            raise decode_error(value)
        return value, marks

    def note_foreground_busy(self, until_monotonic: float) -> None:
        """The app's foreground is busy until then: the simulated cluster's ticks wait."""
        self._note("foreground_busy", until_monotonic)

    def note_synced(self) -> None:
        """The app's cache holds its first list: the simulated cluster may start ticking."""
        self._note("synced", None)

    def _note(self, verb: str, value: Any) -> None:
        """A one-way note on the control connection, made at the start (no answer; dropped once the
        process is gone: a note never waits for a new connection)."""
        with self._lock:
            control = self._control
            if control is None:
                return
            try:
                control.send((verb, value))
            except OSError:
                self._control = None

    # -- the end -------------------------------------------------------------------

    def gone_reason(self, wait_s: float = 0.0) -> str:
        """Why the process does not answer (``wait_s``: give an ending process that long to end)."""
        try:
            code = self.process.wait(timeout=wait_s) if wait_s > 0 else self.process.poll()
        except subprocess.TimeoutExpired:
            code = None
        try:
            with open(self._log_path, "rb") as log:
                lines = log.read()[-4000:].decode("utf-8", "replace").strip().splitlines()
        except OSError:
            lines = []
        reason = "its process is not answering" if code is None else f"its process ended (exit code {code})"
        return f"{reason}: {lines[-1]}" if lines else reason

    def gone(self) -> ApiFailure:
        return ApiFailure(0, "", f"the simulated cluster is unreachable: {self.gone_reason()}")

    def stop(self) -> None:
        atexit.unregister(self.stop)
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            conns, self._idle_calls = self._idle_calls, []
            if self._control is not None:
                conns.append(self._control)
        for conn in conns:
            conn.close()
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()  # the server ends when its standard input closes
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self._folder, ignore_errors=True)
