"""The agent's HTTP listeners: what each serves, and that clients cannot grow threads or hold sockets.

Bounded by counts (threads, connections, bytes sent), never by elapsed time: the only waits are
`wait_for` polls with a generous cap, so a busy machine slows these tests down but cannot fail them.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tau_agent.config import ConfigError, Server, load_config
from tau_agent.server import LOCAL_BIND, make_server, make_servers, serve_in_background
from tests.harness.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
AGENT_MANIFESTS = REPO / "manifests" / "agent"
WORKERS = 4
MAX_PENDING = 8
IDLE_CLIENTS = 300
# The accept loop's own thread, plus room for a thread some library starts lazily meanwhile.
THREAD_SLACK = 3


def _started(servers):
    for server in servers:
        serve_in_background(server)
    return servers


def _stop(servers):
    for server in servers:
        server.shutdown()
        server.server_close()


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _read_to_eof(sock: socket.socket, limit: int = 4096) -> bytes:
    """What the server sent before closing; an RST counts as closed as well."""
    data = b""
    try:
        while len(data) < limit:
            chunk = sock.recv(limit)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_public_listener_serves_healthz_and_metrics_but_not_status(node):
    config = Server(bind="127.0.0.1", port=0, status_port=0, probe_port=0)
    public, probe, local = _started(make_servers(node.agent, config, clock=node.clock))
    try:
        assert local.server_address[0] == LOCAL_BIND
        public_port, local_port = public.server_address[1], local.server_address[1]
        uuid = node.nvml.gpus[0].uuid

        code, body = _get(public_port, "/healthz")
        assert code == 200 and body == b"ok\n"
        code, body = _get(public_port, "/metrics")
        assert code == 200 and b'tau_agent_node_health{verdict="healthy"} 1.0' in body
        for path in ("/status", "/status?x=1", "/", "/../status"):
            code, body = _get(public_port, path)
            assert code == 404, path
            assert uuid.encode() not in body and b"/status" not in body

        code, body = _get(local_port, "/status")
        assert code == 200
        status = json.loads(body)
        assert status["health"]["verdict"] == "healthy" and uuid in body.decode()
        assert _get(local_port, "/healthz")[0] == 200 and _get(local_port, "/metrics")[0] == 200
        code, body = _get(public_port, "/metrics")
        assert b'tau_agent_http_connections_total{listener="public",result="404"} 4.0' in body
    finally:
        _stop([public, probe, local])


def test_status_listener_is_loopback_whatever_the_public_bind_and_can_be_turned_off(node):
    config = Server(bind="127.0.0.1", port=0, status_port=None, probe_port=0)
    servers = make_servers(node.agent, config, clock=node.clock)
    try:
        assert [s.name for s in servers] == ["public", "probe"]
    finally:
        for server in servers:  # never started: close only (shutdown() waits for serve_forever)
            server.server_close()
    with pytest.raises(ValueError, match="status_port must differ"):
        Server(port=9464, status_port=9464)


def test_idle_connections_do_not_grow_threads_and_are_closed_after_the_timeout(node):
    before = threading.active_count()
    server = make_server(node.agent, "127.0.0.1", 0, clock=node.clock,
                         workers=WORKERS, max_pending=MAX_PENDING, timeout_s=0.5)
    serve_in_background(server)
    address = server.server_address
    clients: list[socket.socket] = []
    peak = threading.active_count()
    try:
        for _ in range(IDLE_CLIENTS):  # connect and say nothing
            clients.append(socket.create_connection(address, timeout=60))
            peak = max(peak, threading.active_count())
        wait_for(lambda: server.counts["accepted"] == IDLE_CLIENTS, "the server to accept every connection")
        peak = max(peak, threading.active_count())
        assert peak <= before + WORKERS + THREAD_SLACK, (before, peak)

        # Every idle client is dropped: at once with a 503 when the pool and queue were full,
        # otherwise when its request has not arrived within the (shortened) timeout.
        replies = [_read_to_eof(sock) for sock in clients]
        wait_for(lambda: server.open_connections == 0, "every connection to be closed by the server")
        counts = dict(server.counts)
        busy = sum(reply.startswith(b"HTTP/1.0 503") for reply in replies)
        silent = sum(reply == b"" for reply in replies)
        assert busy + silent == IDLE_CLIENTS, replies
        assert busy == counts["refused"] and silent == counts["timed_out"]
        # Never more sockets held than the pool plus its queue (a refused one is closed at once).
        assert counts["peak_open"] <= WORKERS + MAX_PENDING + 1, counts
        assert counts["timed_out"] >= WORKERS  # the pool was filled by idle clients
        assert threading.active_count() <= before + WORKERS + THREAD_SLACK

        # Still answering afterwards.
        assert _get(address[1], "/healthz")[0] == 200
    finally:
        for sock in clients:
            sock.close()
        _stop([server])


def test_a_trickling_client_is_cut_off_by_the_request_deadline(node):
    server = make_server(node.agent, "127.0.0.1", 0, clock=node.clock, workers=1, max_pending=1, timeout_s=0.5)
    serve_in_background(server)
    sent = 0
    try:
        with socket.create_connection(server.server_address, timeout=60) as sock:
            sock.sendall(b"GET /metrics HTTP/1.0\r\n")
            closed = threading.Event()

            def trickle() -> bool:  # one header byte per poll; a per-read timeout alone never fires
                nonlocal sent
                try:
                    sock.sendall(b"X")
                    sent += 1
                except OSError:
                    closed.set()
                return closed.is_set() or server.counts["timed_out"] == 1

            wait_for(trickle, "the server to drop a client that never finishes its request", interval=0.05)
            assert server.counts["timed_out"] == 1
            wait_for(lambda: server.open_connections == 0, "the connection to be closed")
            assert _read_to_eof(sock) == b""
    finally:
        _stop([server])
    assert sent < 64 * 1024  # cut off long before the request-line limit would have stopped it


def test_shipped_server_settings_bound_the_pool(tmp_path):
    for path in (AGENT_MANIFESTS / "config.yaml", AGENT_MANIFESTS / "node-actions" / "config.yaml"):
        server = load_config(path).server
        assert (server.port, server.status_port) == (9464, 9465)
        assert server.workers == WORKERS and server.max_pending == MAX_PENDING and server.connection_timeout_s == 5
    bad = tmp_path / "agent.yaml"
    bad.write_text("server:\n  workers: 0\n  connection_timeout_s: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert "key 'server.workers'" in str(info.value) and "key 'server.connection_timeout_s'" in str(info.value)


def test_network_policy_admits_only_monitoring_namespaces_to_the_metrics_port():
    kustomization = yaml.safe_load((AGENT_MANIFESTS / "kustomization.yaml").read_text())
    assert "networkpolicy.yaml" in kustomization["resources"]
    policy = yaml.safe_load((AGENT_MANIFESTS / "networkpolicy.yaml").read_text())
    daemonset = yaml.safe_load((AGENT_MANIFESTS / "daemonset.yaml").read_text())
    pod = daemonset["spec"]["template"]
    assert policy["kind"] == "NetworkPolicy"
    assert policy["metadata"]["namespace"] == daemonset["metadata"]["namespace"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # selected for ingress: unlisted traffic is denied
    [rule] = policy["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"tau-tui.io/monitoring": "true"}}}]
    [container] = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert rule["ports"] == [{"protocol": "TCP", "port": "metrics"}] and ports == {"metrics": 9464, "healthz": 9466}
    # /status is not reachable through any pod port at all.
    assert 9465 not in ports.values()
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
