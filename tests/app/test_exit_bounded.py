"""Quitting never waits on the API server (#33): ctrl+q, ``:q``, SIGTERM, SIGHUP and SIGINT end
the real app, started in a pseudo-terminal, with its terminal restored and no traceback, whether
the server's address is dead, it accepts and never answers, it holds a watch mid-stream, or it
stalls in the middle of a page of a 20,000-object list.  A closed terminal ends it too.

The app is this test's child: its exit is waited for (waitpid) with HANG_GUARD_S as a guard
against a hang only; no test asserts how long the exit took."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.stub_servers import StallServer, kubeconfig

#: How long a test waits for the app to end before calling it a hang (not a limit on the exit).
HANG_GUARD_S = 30.0
#: How long a test waits for the app's first screen and for a server state to be reached.
READY_S = 60.0
LIST_TOTAL = 20_000
PAGE = 500
#: The stalled list sends this many whole pages, then half of the next.
WHOLE_PAGES = 4
ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _workload(index: int) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{index:05d}", "namespace": "team-a", "uid": f"uid-{index}",
                         "resourceVersion": str(100 + index), "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1}]}}


class ApiStub:
    """A plain-HTTP stand-in for kube-apiserver on 127.0.0.1: every list is empty, every watch is
    held open after one bookmark (a watch mid-stream), and with ``stall_list`` the Workloads list
    is 20,000 objects in pages of 500 that stops in the middle of page WHOLE_PAGES + 1."""

    def __init__(self, stall_list: bool = False) -> None:
        self.stall_list = stall_list
        self.closing = threading.Event()
        self.watches_held = 0
        self.watch_held = threading.Event()
        self.stalled_mid_page = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802  (http.server's name)
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if query.get("watch") == "true":
                    stub._hold_watch(self)
                elif stub.stall_list and url.path.endswith("/workloads"):
                    stub._workloads_page(self, int(query.get("continue") or 0))
                else:
                    self._send_json({"kind": "List", "apiVersion": "v1", "items": [],
                                     "metadata": {"resourceVersion": "1"}})

            def _send_json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="api-stub", daemon=True).start()

    def _hold_watch(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        event = json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "2"}}}).encode() + b"\n"
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        handler.wfile.flush()
        self.watches_held += 1
        self.watch_held.set()
        self.closing.wait()

    def _workloads_page(self, handler: BaseHTTPRequestHandler, start: int) -> None:
        end = min(LIST_TOTAL, start + PAGE)
        meta = {"resourceVersion": "1", "remainingItemCount": LIST_TOTAL - end}
        if end < LIST_TOTAL:
            meta["continue"] = str(end)
        data = json.dumps({"kind": "WorkloadList", "apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": meta,
                           "items": [_workload(i) for i in range(start, end)]}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if start < WHOLE_PAGES * PAGE:
            handler.wfile.write(data)
            return
        handler.wfile.write(data[: len(data) // 2])
        handler.wfile.flush()
        self.stalled_mid_page.set()
        self.closing.wait()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


def _take_terminal() -> None:
    """In the child, after setsid: the pseudo-terminal becomes its controlling terminal, and SIGINT
    is not ignored, as a shell with job control starts a foreground job (a suite started in the
    background of a shell without job control inherits SIGINT ignored)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class AppInPty:
    """``tau-tui`` (the app) in a pseudo-terminal of 160x48; everything it writes is kept."""

    def __init__(self, tmp_path: Path, kubeconfig_path: str, args: tuple[str, ...] = ()) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        self.attrs_before = termios.tcgetattr(self.slave)
        env = dict(os.environ, KUBECONFIG=kubeconfig_path, TERM="xterm-256color",
                   XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "tau_tui.cli", *args], stdin=self.slave, stdout=self.slave,
                                     stderr=self.slave, env=env, start_new_session=True, preexec_fn=_take_terminal)
        self._output = bytearray()
        self._lock = threading.Lock()
        self._stop_reading = threading.Event()
        self._reader = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # select first: a read blocked on the master would keep the terminal open after hang_up closed it
        while not self._stop_reading.is_set():
            if not select.select([self.master], [], [], 0.05)[0]:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._output += data

    @property
    def output(self) -> bytes:
        with self._lock:
            return bytes(self._output)

    def text(self) -> str:
        return ANSI.sub(b"", self.output).decode("utf-8", "replace")

    def wait_for_text(self, needle: str, timeout: float = READY_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{needle!r} never shown (exit {self.proc.poll()}); the app wrote:\n{self.text()[-3000:]}")

    def keys(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait_exit(self) -> int | None:
        try:
            return self.proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            return None

    def hang_up(self) -> None:
        """The terminal goes away (a closed window): the kernel sends SIGHUP to the app."""
        self._stop_reading.set()
        self._reader.join()
        os.close(self.slave)
        os.close(self.master)
        self.slave = self.master = -1

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._stop_reading.set()
        self._reader.join()
        for fd in (self.slave, self.master):
            if fd >= 0:
                os.close(fd)


@pytest.fixture
def dead_address(tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now: connection refused
    yield kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}", {"token": "t"}), lambda: None


@pytest.fixture
def never_answers(tmp_path):
    server = StallServer()
    yield (kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{server.port}", {"token": "t"}),
           lambda: server.accepted.wait(READY_S))
    server.close()


@pytest.fixture
def watch_mid_stream(tmp_path):
    stub = ApiStub()
    yield kubeconfig(tmp_path / "kubeconfig", stub.url, {"token": "t"}), lambda: stub.watch_held.wait(READY_S)
    stub.close()


@pytest.fixture
def list_mid_page(tmp_path):
    stub = ApiStub(stall_list=True)
    yield kubeconfig(tmp_path / "kubeconfig", stub.url, {"token": "t"}), lambda: stub.stalled_mid_page.wait(READY_S)
    stub.close()


STATES = ["dead_address", "never_answers", "watch_mid_stream", "list_mid_page"]
#: How each quit is asked for, and the exit code it gives.
QUITS = {"ctrl+q": 0, ":q": 0, "SIGTERM": 128 + signal.SIGTERM, "SIGHUP": 128 + signal.SIGHUP,
         "SIGINT": 128 + signal.SIGINT}


def _started(request, tmp_path, state: str) -> AppInPty:
    kubeconfig_path, reached = request.getfixturevalue(state)
    app = AppInPty(tmp_path, kubeconfig_path)
    request.addfinalizer(app.close)
    # The header names the kubeconfig's context once the app holds the backend (its threads run).
    app.wait_for_text("ctx test")
    assert reached() is not False, f"the server never reached the state {state}"
    return app


def _ask_to_quit(app: AppInPty, how: str) -> None:
    if how == "ctrl+q":
        app.keys(b"\x11")
    elif how == ":q":
        app.keys(b":")
        app.wait_for_text("queue · runs · nodes")  # the command line is open
        app.keys(b"q\r")
    else:
        app.proc.send_signal(getattr(signal, how))


def _assert_terminal_restored(app: AppInPty) -> None:
    out = app.output
    assert termios.tcgetattr(app.slave) == app.attrs_before, "the terminal's modes were not restored"
    assert out.count(b"\x1b[?1049h") >= 1 and out.rfind(b"\x1b[?1049l") > out.rfind(b"\x1b[?1049h"), \
        "the alternate screen was not left"
    assert out.rfind(b"\x1b[?25h") > out.rfind(b"\x1b[?25l"), "the cursor was left hidden"


@pytest.mark.parametrize("how", list(QUITS))
@pytest.mark.parametrize("state", STATES)
def test_quit_ends_the_app_whatever_the_server_does(request, tmp_path, state, how):
    app = _started(request, tmp_path, state)
    _ask_to_quit(app, how)
    code = app.wait_exit()
    assert code is not None, f"the app was still running {HANG_GUARD_S:.0f} s after {how} ({state})"
    assert code == QUITS[how]
    text = app.text()
    assert text.count("Traceback") == 0, text[-3000:]
    assert text.count("tau-tui: interrupted") == (1 if how == "SIGINT" else 0), text[-3000:]
    _assert_terminal_restored(app)


@pytest.mark.parametrize("state", ["never_answers", "watch_mid_stream"])
def test_a_closed_terminal_ends_the_app(request, tmp_path, state):
    app = _started(request, tmp_path, state)
    app.hang_up()
    code = app.wait_exit()
    assert code is not None, f"the app was still running {HANG_GUARD_S:.0f} s after its terminal closed ({state})"
    assert code == 128 + signal.SIGHUP


def test_ctrl_c_key_in_the_app_quits_as_in_k9s(request, tmp_path):
    """In the app, ctrl+c is a key (the terminal is raw): it quits as ctrl+q does (exit 0, not the
    128 + SIGINT of a signal), through the unsaved-work guard (tests/app/panes/compose/test_unsaved_guard.py)."""
    app = _started(request, tmp_path, "never_answers")
    app.keys(b"\x03")
    assert app.wait_exit() == 0
    assert app.text().count("Traceback") == 0 and "tau-tui: interrupted" not in app.text()
