"""The kubelet's liveness probe has a listener of its own (#34): clients holding the workers of the
public (metrics) or local (status) listener cannot fail it and get the agent restarted.

Bounded by counts (connections held, probes answered), never by elapsed time: the waits are
`wait_for` polls and socket timeouts with generous caps, so a busy machine slows these tests down
but cannot fail them.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tau_agent.config import Server, load_config
from tau_agent.server import AgentHTTPServer, make_servers, serve_in_background
from tests.harness.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
AGENT_MANIFESTS = REPO / "manifests" / "agent"
SHIPPED_CONFIGS = (AGENT_MANIFESTS / "config.yaml", AGENT_MANIFESTS / "node-actions" / "config.yaml")
# The listener that make_servers opens for each port key of the `server` config.
LISTENER_OF_PORT_KEY = {"port": "public", "status_port": "local", "probe_port": "probe"}
# More idle clients than any of the other listeners holds (pool + queue): some are refused at once.
IDLE_CLIENTS = 16
PROBES = 12  # the count: 10 of 12 probes failed with 503
# Longer than the test: idle clients keep their workers until the test lets go of them.
HOLD_S = 600.0


def _status(port: int, path: str, timeout: float = 60.0) -> tuple[int | None, bytes]:
    """One HTTP/1.0 request: the status code and body, or None when refused without a reply."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: agent\r\n\r\n".encode())
            reply = b""
            while chunk := sock.recv(4096):
                reply += chunk
    except OSError:  # reset, refused, or no answer within the timeout
        return None, b""
    head, _, body = reply.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None), body


def _liveness_probe_port_key() -> str:
    """The `server` key whose port the shipped DaemonSet's liveness probe connects to."""
    daemonset = yaml.safe_load((AGENT_MANIFESTS / "daemonset.yaml").read_text())
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    target = container["livenessProbe"]["httpGet"]["port"]
    number = {p["name"]: p["containerPort"] for p in container["ports"]}.get(target, target)
    shipped = load_config(AGENT_MANIFESTS / "config.yaml").server
    [key] = [key for key in LISTENER_OF_PORT_KEY if getattr(shipped, key, None) == number]
    return key


def _attack_config() -> Server:
    """The shipped server settings (pools, queues) on loopback, every port ephemeral, and a request
    deadline past the config's own maximum (hence no validation) so idle clients hold on."""
    shipped = load_config(AGENT_MANIFESTS / "config.yaml").server
    ports = {key: 0 for key in type(shipped).model_fields if key.endswith("port")}
    return shipped.model_copy(update={"bind": "127.0.0.1", "connection_timeout_s": HOLD_S, **ports})


def _hold_idle(server: AgentHTTPServer, count: int, clients: list[socket.socket]) -> None:
    """Connect `count` clients that say nothing; return once the server has accepted them all."""
    accepted = server.counts["accepted"]
    for _ in range(count):
        clients.append(socket.create_connection(server.server_address, timeout=60))
    wait_for(lambda: server.counts["accepted"] == accepted + count, f"the {server.name} listener to accept {count}")


def test_the_liveness_probe_answers_while_idle_clients_hold_the_public_and_local_listeners(node):
    config = _attack_config()
    servers = make_servers(node.agent, config, clock=node.clock)
    for server in servers:
        serve_in_background(server)
    by_name = {server.name: server for server in servers}
    public, local = by_name["public"], by_name["local"]
    probed = by_name[LISTENER_OF_PORT_KEY[_liveness_probe_port_key()]]
    clients: list[socket.socket] = []
    try:
        assert _status(probed.server_address[1], "/healthz")[0] == 200  # healthy before the attack

        for attacked in (public, local):
            _hold_idle(attacked, IDLE_CLIENTS, clients)
            # Pool and queue full: every client past them was refused at once.
            assert attacked.counts["refused"] >= 1, attacked.counts
            assert attacked.counts["timed_out"] == 0, attacked.counts  # still holding its workers
        # Clients refused while the workers were still taking the first ones off the queue left
        # room in it: top up until the public listener holds its whole pool and queue.
        for _ in range(IDLE_CLIENTS):
            if public.open_connections >= config.workers + config.max_pending:
                break
            _hold_idle(public, 1, clients)

        # The attack is real: the public listener's own /healthz is refused or never answered.
        code, _ = _status(public.server_address[1], "/healthz", timeout=10)
        assert code in (503, None), code

        codes = [_status(probed.server_address[1], "/healthz")[0] for _ in range(PROBES)]
        failed = sum(code != 200 for code in codes)
        assert failed == 0, (
            f"{failed} of {PROBES} liveness probes to the {probed.name} listener failed "
            f"with {IDLE_CLIENTS} idle clients on the public and local ports: {codes}"
        )
        assert probed.counts["refused"] == 0 and probed.counts["timed_out"] == 0, probed.counts
    finally:
        for sock in clients:
            sock.close()
        for server in servers:
            server.shutdown()
            server.server_close()


def test_the_probe_listener_serves_healthz_only_on_the_public_bind(node):
    config = Server(bind="0.0.0.0", port=0, status_port=0, probe_port=0)
    servers = make_servers(node.agent, config, clock=node.clock)
    for server in servers:
        serve_in_background(server)
    [probe] = [server for server in servers if server.name == "probe"]
    port = probe.server_address[1]
    try:
        assert probe.server_address[0] == config.bind  # the kubelet probes the pod IP
        assert _status(port, "/healthz") == (200, b"ok\n")
        uuid = node.nvml.gpus[0].uuid.encode()
        for path in ("/metrics", "/status", "/", "/healthz/../status"):
            code, body = _status(port, path)
            assert code == 404 and uuid not in body and b"/status" not in body, path
        node.clock.now += 3600  # the loop stopped ticking: the probe must fail
        assert _status(port, "/healthz")[0] == 503
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_shipped_liveness_probe_targets_the_probe_port_which_no_pod_may_reach():
    daemonset = yaml.safe_load((AGENT_MANIFESTS / "daemonset.yaml").read_text())
    policy = yaml.safe_load((AGENT_MANIFESTS / "networkpolicy.yaml").read_text())
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz" and "host" not in probe  # the pod IP, where `bind` listens
    assert _liveness_probe_port_key() == "probe_port"
    for path in SHIPPED_CONFIGS:
        server = load_config(path).server
        assert ports[probe["port"]] == server.probe_port == 9466, path
        assert server.bind == "0.0.0.0" and server.probe_port not in (server.port, server.status_port), path
    # Only the node (the kubelet) reaches it: no ingress rule names it, by name or number.
    admitted = {port["port"] for rule in policy["spec"]["ingress"] for port in rule.get("ports", [])}
    assert admitted.isdisjoint({probe["port"], ports[probe["port"]]}), admitted
    with pytest.raises(ValueError, match="probe_port must differ"):
        Server(port=9464, probe_port=9464)
    with pytest.raises(ValueError, match="probe_port must differ"):
        Server(status_port=9466, probe_port=9466)
