"""The real backend's informers against a server that stalls or answers 401.

Bounded by counts of waits, never asserting how long anything took."""

from __future__ import annotations

from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.kubeconfig import RequestTimeouts
from tau_tui.core.cluster.real import KubernetesBackend
from tests.stub_servers import StallServer, answering_server, api_status, kubeconfig

BOUND = 60  # seconds a wait may take before the test fails: far above the 1 s limits below


def test_an_informer_on_a_stalled_server_reports_the_read_timeout_naming_the_server(tmp_path):
    server = StallServer()
    path = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{server.port}", {"token": "t0ken"})
    backend = KubernetesBackend(path, kinds=[ResourceKind.CLUSTER_QUEUE], timeouts=RequestTimeouts(1, 1, 1))
    try:
        backend.start()
        assert backend.cache.wait_for(lambda: "read timeout" in backend.connection_state().message, BOUND)
        state = backend.connection_state()
        assert state.status is not ConnectionStatus.CONNECTED
        assert f"127.0.0.1:{server.port}" in state.message
    finally:
        backend.close()
        server.close()


def test_an_informer_answered_401_says_log_in_again_not_no_access(tmp_path):
    server = answering_server(lambda _path: (401, "application/json", api_status(401, "Unauthorized", "Unauthorized")))
    path = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{server.server_port}", {"token": "expired"})
    backend = KubernetesBackend(path, kinds=[ResourceKind.CLUSTER_QUEUE], timeouts=RequestTimeouts(1, 1, 1))
    try:
        backend.start()
        assert backend.cache.wait_for(
            lambda: backend.view_state(ResourceKind.CLUSTER_QUEUE).status is ViewStatus.FORBIDDEN, BOUND)
        message = backend.view_state(ResourceKind.CLUSTER_QUEUE).message
        assert "log in again" in message and "no access" not in message, message
        assert backend.who_am_i() is None  # SelfSubjectReview answered 401: identity unknown
    finally:
        backend.close()
        server.shutdown()
