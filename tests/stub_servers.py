"""Local stand-ins for a Kubernetes API server that misbehaves, and a kubeconfig pointing at one:
for the CLI and backend tests of timeouts and HTTP errors.  Servers listen on 127.0.0.1 only."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml


class StallServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte (no HTTP answer, no TLS ServerHello)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def answering_server(routes):
    """An HTTP server on 127.0.0.1 answering ``routes(path) -> (status, content_type, body)``."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            status, content_type, body = routes(self.path.split("?")[0])
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def kubeconfig(path: Path, server: str, user: dict) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "test", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
    }))
    return str(path)


def api_status(code: int, reason: str, message: str) -> str:
    """A Kubernetes Status body of a failed request."""
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                       "message": message, "code": code})


def scripted_server(answer):
    """An HTTP server on 127.0.0.1 answering each GET with ``answer(path, headers) -> (status, body)``
    as JSON, or closing the connection unanswered when it returns None (a stopped API server)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            answered = answer(self.path, self.headers)
            if answered is None:
                self.close_connection = True
                return
            status, body = answered
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
