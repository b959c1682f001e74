"""HTTP endpoints of the agent, on three listeners.

- public (`server.bind`:`server.port`, 9464; the pod IP): `/healthz` (loop alive) and `/metrics`
  (Prometheus) only. The NetworkPolicy in manifests/agent admits only the monitoring namespaces.
- probe (`server.bind`:`server.probe_port`, 9466): `/healthz` only, for the kubelet's liveness
  probe, which connects to the pod IP. Its own pool, so clients holding the public (or local)
  listener's workers cannot make the kubelet restart the agent. No NetworkPolicy rule admits it:
  only the node itself reaches it, which a NetworkPolicy cannot block.
- local (127.0.0.1:`server.status_port`, 9465; never another address): `/status` (JSON verdict and
  per-GPU detail with GPU UUIDs) plus `/healthz` and `/metrics`. Reach it with `kubectl
  port-forward`, which needs `pods/portforward` in the agent's namespace.

Each listener answers HTTP/1.0 (one request per connection) from a fixed pool of worker threads
fed by a bounded queue of accepted connections. A connection that finds the queue full gets a
503 and is closed at once, so the thread count never grows with the number of clients. A request
must have arrived in full within `connection_timeout_s` of being accepted (idle and trickling
clients alike) and every write is bounded by the same timeout.
"""

from __future__ import annotations

import io
import json
import logging
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any, TypeAlias

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .agent import Agent
from .config import Server as ServerConfig

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

# What socketserver hands a server: a socket for TCP (always, here), a (data, socket) pair for UDP.
_Request: TypeAlias = "socket.socket | tuple[bytes, socket.socket]"

PUBLIC_PATHS = ("/healthz", "/metrics")
PROBE_PATHS = ("/healthz",)
LOCAL_PATHS = ("/healthz", "/metrics", "/status")
# One probe at a time per kubelet period; a spare worker and a short queue absorb a late one.
PROBE_WORKERS = 2
PROBE_MAX_PENDING = 4
LOCAL_BIND = "127.0.0.1"
log = logging.getLogger(__name__)
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n"


class _DeadlineSocketIO(socket.SocketIO):
    """Reads that fail once the connection's deadline has passed, however the bytes trickle in."""

    def __init__(self, sock: socket.socket, deadline: float, on_timeout: Callable[[], None]):
        super().__init__(sock, "rb")
        self._socket = sock
        self._deadline = deadline
        self._on_timeout = on_timeout

    def readinto(self, b: WriteableBuffer) -> int | None:
        remaining = self._deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError("request not complete within the connection timeout")
            self._socket.settimeout(remaining)
            return super().readinto(b)
        except TimeoutError:
            self._on_timeout()
            raise


class AgentHTTPServer(HTTPServer):
    """HTTPServer with a fixed worker pool, a bounded accept queue and per-connection deadlines."""

    # The kernel's queue of connections not yet accepted (no thread, no file descriptor of ours):
    # long enough that a burst is accepted and answered 503 rather than left retrying SYNs.
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        name: str,
        workers: int,
        max_pending: int,
        timeout_s: float,
        on_result: Callable[[str, str], None] = lambda _listener, _result: None,
    ):
        super().__init__(address, handler)
        self.name = name
        self.timeout_s = timeout_s
        self._on_result = on_result
        self._pending: queue.Queue[tuple[socket.socket, object, float] | None] = queue.Queue(
            maxsize=max(1, max_pending)
        )
        self._lock = threading.Lock()
        self._local = threading.local()
        self.counts = {"accepted": 0, "refused": 0, "timed_out": 0, "open": 0, "peak_open": 0}
        self._workers = [
            threading.Thread(target=self._work, name=f"tau-agent-http-{name}-{i}", daemon=True) for i in range(workers)
        ]
        for worker in self._workers:
            worker.start()

    def _count(self, key: str, delta: int = 1) -> None:
        with self._lock:
            self.counts[key] += delta
            self.counts["peak_open"] = max(self.counts["peak_open"], self.counts["open"])

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self.counts["open"]

    def process_request(self, request: _Request, client_address: Any) -> None:  # runs on the accept thread
        assert isinstance(request, socket.socket)  # a TCP server accepts sockets only
        self._count("accepted")
        self._count("open")
        try:
            self._pending.put_nowait((request, client_address, time.monotonic() + self.timeout_s))
        except queue.Full:
            self._count("refused")
            self._on_result(self.name, "refused")
            request.setblocking(False)  # a client that reads nothing must not stall the accept loop
            try:
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)

    def shutdown_request(self, request: _Request) -> None:
        super().shutdown_request(request)
        self._count("open", -1)

    def _work(self) -> None:
        while True:
            item = self._pending.get()
            if item is None:
                return
            request, client_address, deadline = item
            self._local.deadline = deadline
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def reader_for(self, sock: socket.socket) -> _DeadlineSocketIO:
        """The handler's read side: bounded by the deadline set when the connection was accepted."""

        def timed_out() -> None:
            self._count("timed_out")
            self._on_result(self.name, "timed_out")

        return _DeadlineSocketIO(sock, self._local.deadline, timed_out)

    def handle_error(self, request: _Request, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a client gone or too slow mid-reply is not news
        log.warning("%s listener: request from %s failed", self.name, client_address[0], exc_info=True)

    def server_close(self) -> None:
        super().server_close()
        while True:  # connections still queued: close them, then stop the workers
            try:
                item = self._pending.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self.shutdown_request(item[0])
        for _worker in self._workers:
            self._pending.put(None)


def make_server(
    agent: Agent,
    bind: str,
    port: int,
    clock: Callable[[], float] = time.time,
    *,
    paths: tuple[str, ...] = PUBLIC_PATHS,
    name: str = "public",
    workers: int = 4,
    max_pending: int = 8,
    timeout_s: float = 5.0,
) -> AgentHTTPServer:
    stale_after = 3 * agent.config.intervals.fast_poll_s + agent.config.intervals.call_timeout_s
    not_found = f"not found: try {', '.join(paths)}\n".encode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "tau-agent"
        server: AgentHTTPServer

        def setup(self) -> None:
            self.connection = self.request
            self.rfile = io.BufferedReader(self.server.reader_for(self.connection))
            self.wfile = self.connection.makefile("wb")  # bounded by the socket timeout set in _send

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.connection.settimeout(self.server.timeout_s)  # the reads left only what remained
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            agent.metrics.http_connections.labels(self.server.name, str(code)).inc()

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            path = self.path.split("?", 1)[0]
            if path not in paths:
                self._send(404, not_found, "text/plain; charset=utf-8")
            elif path == "/healthz":
                last = agent.last_tick
                if last is not None and clock() - last <= stale_after:
                    self._send(200, b"ok\n", "text/plain; charset=utf-8")
                else:
                    self._send(503, b"agent loop is not running\n", "text/plain; charset=utf-8")
            elif path == "/metrics":
                self._send(200, generate_latest(agent.metrics.registry), CONTENT_TYPE_LATEST)
            else:  # /status
                body = json.dumps(agent.status(), indent=2, sort_keys=True).encode()
                self._send(200, body + b"\n", "application/json")

        def log_message(self, format: str, *args: object) -> None:  # keep probes out of the logs
            return

    server = AgentHTTPServer(
        (bind, port), Handler, name=name, workers=workers, max_pending=max_pending, timeout_s=timeout_s,
        on_result=lambda listener, result: agent.metrics.http_connections.labels(listener, result).inc(),
    )
    return server


def make_servers(agent: Agent, config: ServerConfig, clock: Callable[[], float] = time.time) -> list[AgentHTTPServer]:
    """The public listener (healthz, metrics), the probe one (healthz) and, unless disabled, the
    localhost one (plus status)."""
    servers = [
        make_server(agent, config.bind, config.port, clock, paths=PUBLIC_PATHS, name="public",
                    workers=config.workers, max_pending=config.max_pending, timeout_s=config.connection_timeout_s),
        # Same bind as the public one: the kubelet probes the pod IP. Its own pool and queue.
        make_server(agent, config.bind, config.probe_port, clock, paths=PROBE_PATHS, name="probe",
                    workers=PROBE_WORKERS, max_pending=PROBE_MAX_PENDING, timeout_s=config.connection_timeout_s),
    ]
    if config.status_port is not None:  # its own small pool: a busy public listener cannot starve it
        servers.append(
            make_server(agent, LOCAL_BIND, config.status_port, clock, paths=LOCAL_PATHS, name="local",
                        workers=1, max_pending=2, timeout_s=config.connection_timeout_s)
        )
    return servers


def serve_in_background(server: AgentHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name=f"tau-agent-http-{server.name}", daemon=True)
    thread.start()
    return thread
