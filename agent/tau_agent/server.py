"""HTTP endpoints: /healthz (loop alive), /metrics (Prometheus), /status (JSON verdict and detail)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .agent import Agent


def make_server(agent: Agent, bind: str, port: int, clock: Callable[[], float] = time.time) -> ThreadingHTTPServer:
    stale_after = 3 * agent.config.intervals.fast_poll_s + agent.config.intervals.call_timeout_s

    class Handler(BaseHTTPRequestHandler):
        server_version = "tau-agent"

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                last = agent.last_tick
                if last is not None and clock() - last <= stale_after:
                    self._send(200, b"ok\n", "text/plain; charset=utf-8")
                else:
                    self._send(503, b"agent loop is not running\n", "text/plain; charset=utf-8")
            elif path == "/metrics":
                self._send(200, generate_latest(agent.metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/status":
                body = json.dumps(agent.status(), indent=2, sort_keys=True).encode()
                self._send(200, body + b"\n", "application/json")
            else:
                self._send(404, b"not found: try /healthz, /metrics or /status\n", "text/plain; charset=utf-8")

        def log_message(self, format: str, *args: object) -> None:  # keep probes out of the logs
            return

    server = ThreadingHTTPServer((bind, port), Handler)
    server.daemon_threads = True
    return server


def serve_in_background(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="tau-agent-http", daemon=True)
    thread.start()
    return thread
