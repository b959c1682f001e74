"""A first connection that never succeeded reads "connecting" / "cannot connect: <reason>", never
"stale since ?": nothing was read, so nothing is stale since any time."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.kubeconfig import RequestTimeouts
from tau_tui.core.cluster.real import KubernetesBackend
from tests.stub_servers import kubeconfig

BOUND = 60  # seconds a wait may take before the test fails


def test_a_fresh_cache_reads_connecting():
    assert ObjectCache().connection_state().label == "connecting"


def test_a_failure_before_any_success_is_cannot_connect_and_after_one_stale_since_it():
    cache = ObjectCache()
    cache.set_connection(ConnectionState(ConnectionStatus.RECONNECTING, "ctx", None, "connecting"))
    cache.set_connection(ConnectionState(ConnectionStatus.RECONNECTING, "ctx", datetime.now(UTC), "connection refused"))
    label = cache.connection_state().label
    assert label == "cannot connect: connection refused", label
    assert "stale" not in label
    cache.set_connection(ConnectionState(ConnectionStatus.CONNECTED, "ctx"))
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    cache.set_connection(ConnectionState(ConnectionStatus.RECONNECTING, "ctx", since, "connection refused"))
    assert cache.connection_state().label == "reconnecting (stale since 03:04:05)"


def test_a_first_page_of_a_long_list_is_a_connection():
    cache = ObjectCache()
    cache.add_listed_page(ResourceKind.WORKLOAD, [], 0)
    assert cache.connection_state().status is ConnectionStatus.CONNECTED


def test_the_real_backend_on_a_dead_address_says_cannot_connect(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on: every connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}", {"token": "t0ken"})
    backend = KubernetesBackend(path, kinds=[ResourceKind.CLUSTER_QUEUE], timeouts=RequestTimeouts(1, 1, 1))
    try:
        assert backend.connection_state().label == "connecting"
        backend.start()
        assert backend.cache.wait_for(lambda: backend.connection_state().message not in ("", "connecting"), BOUND)
        label = backend.connection_state().label
        assert label.startswith("cannot connect") and label.count("cannot connect") == 1, label
        assert f"127.0.0.1:{port}" in label and "stale" not in label
    finally:
        backend.close()
