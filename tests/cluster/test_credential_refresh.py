"""Credentials that expire or are revoked while the app runs (#33, item 5), against a local stub
server that accepts one bearer token at a time: an exec plugin's 60 s token is not fetched again
before every request, a token the server refuses is loaded again once and the request retried, and
a credential refused even then reads "unauthorised: re-login" (not "stale") until it works again.

Bounded by counts and generous waits, never asserting how long anything took."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client as k8s

from tau_tui.core.cluster import credential_refresh, unauthorised
from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.credential_refresh import MIN_REFRESH_INTERVAL_S, CredentialRefresher
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.kubeconfig import KubeconfigSource, RequestTimeouts
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.screens.freshness import Freshness
from tests.harness.exec_credential import ExecCredentialPlugin
from tests.stub_servers import api_status, kubeconfig, scripted_server

BOUND = 60  # seconds a wait may take before the test fails
QUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


class TokenServer:
    """A plain-HTTP API stand-in that accepts only ``Bearer <accepted>``: one ClusterQueue listed,
    watches that stay quiet a moment and end (so the informer asks again)."""

    def __init__(self, accepted: str):
        self.accepted = accepted
        self.seen: list[int] = []  # status of each request, in order
        self.httpd = scripted_server(self._answer)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def _answer(self, path: str, headers) -> tuple[int, bytes]:
        ok = headers.get("Authorization") == f"Bearer {self.accepted}"
        self.seen.append(200 if ok else 401)
        if not ok:
            return 401, api_status(401, "Unauthorized", "Unauthorized").encode()
        if "watch=true" in path:
            time.sleep(0.2)
            return 200, b""
        items = [{"metadata": {"name": "cq-1", "resourceVersion": "7", "uid": "u1"}, "spec": {}}]
        return 200, json.dumps({"items": items, "metadata": {"resourceVersion": "7"}}).encode()

    def close(self) -> None:
        self.httpd.shutdown()


def _token_file(path, token: str) -> str:
    path.write_text(token)
    path.chmod(0o600)
    return str(path)


def test_a_60s_exec_credential_runs_its_plugin_once_while_it_is_valid(tmp_path):
    plugin = ExecCredentialPlugin(tmp_path / "plugin", "tok-a", lifetime_s=60)
    path = plugin.kubeconfig(tmp_path / "kc", "https://127.0.0.1:1")
    configuration = KubeconfigSource(path).api_client("plugin").configuration
    for _ in range(20):  # what every request does before it is sent
        assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer tok-a"
    assert plugin.runs == 1  # the client's own hook counts a 60 s token expired at once and runs the plugin each time


class TuiStream:
    """What a Textual app puts in sys.stdout and sys.stderr: says it is a tty, has no descriptor."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return -1


def test_an_exec_plugin_runs_again_under_the_tui_without_taking_its_terminal(tmp_path, monkeypatch):
    plugin = ExecCredentialPlugin(tmp_path / "plugin", "tok-a", lifetime_s=60)
    path = plugin.kubeconfig(tmp_path / "kc", "https://127.0.0.1:1")
    monkeypatch.setattr("sys.stdout", TuiStream())
    monkeypatch.setattr("sys.stderr", TuiStream())
    configuration = KubeconfigSource(path).api_client("plugin").configuration
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer tok-a"
    assert plugin.runs == 1


def test_an_expiring_token_is_loaded_again_before_use_and_at_most_once_per_interval():
    configuration = k8s.Configuration()
    configuration.api_key["BearerToken"] = "Bearer t0"
    wall = [datetime(2026, 1, 1, tzinfo=UTC)]
    mono = [100.0]
    expiries = [wall[0] + timedelta(seconds=60)]
    loads: list[str] = []

    def reload():
        loads.append("load")
        configuration.api_key["BearerToken"] = f"Bearer t{len(loads)}"
        return expiries[-1]

    CredentialRefresher(configuration, reload, expiries[0], clock=lambda: mono[0], now=lambda: wall[0])
    for _ in range(10):
        configuration.get_api_key_with_prefix("BearerToken")
    assert loads == []
    wall[0] += timedelta(seconds=58)  # within the margin before expiry: load before the request goes out
    expiries.append(wall[0] - timedelta(seconds=1))  # a plugin whose clock is behind: still expired
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t1"
    for _ in range(10):
        configuration.get_api_key_with_prefix("BearerToken")
    assert len(loads) == 1  # bounded: no second load inside the interval however many requests
    mono[0] += MIN_REFRESH_INTERVAL_S
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t2"
    assert len(loads) == 2


def test_a_refused_token_file_is_read_again_and_the_request_retried_once(tmp_path):
    server = TokenServer(accepted="new")
    token = tmp_path / "token"
    path = kubeconfig(tmp_path / "kc", server.url, {"tokenFile": _token_file(token, "old")})
    backend = KubernetesBackend(path, kinds=[ResourceKind.CLUSTER_QUEUE], timeouts=RequestTimeouts(2, 5, 5))
    try:
        _token_file(token, "new")  # rotated on disk while the app runs
        body = backend.http.request("GET", QUEUES)
        assert [item["metadata"]["name"] for item in body["items"]] == ["cq-1"]
        assert server.seen == [401, 200]
    finally:
        backend.close()
        server.close()


@pytest.fixture
def quick_retries(monkeypatch):
    monkeypatch.setattr(credential_refresh, "MIN_REFRESH_INTERVAL_S", 0.2)
    monkeypatch.setattr(unauthorised, "UNAUTHORISED_RETRY_S", 0.2)


def test_a_revoked_credential_reads_unauthorised_relogin_keeps_the_data_and_recovers(tmp_path, quick_retries):
    server = TokenServer(accepted="first")
    token = tmp_path / "token"
    path = kubeconfig(tmp_path / "kc", server.url, {"tokenFile": _token_file(token, "first")})
    backend = KubernetesBackend(path, kinds=[ResourceKind.CLUSTER_QUEUE], timeouts=RequestTimeouts(2, 5, 5))
    kind = ResourceKind.CLUSTER_QUEUE
    try:
        backend.start()
        assert backend.wait_synced(BOUND)
        server.accepted = "second"  # the first token is revoked; the file still holds it
        assert backend.cache.wait_for(lambda: backend.connection_state().status is ConnectionStatus.UNAUTHORISED, BOUND), \
            backend.connection_state()
        state = backend.connection_state()
        assert state.label == "unauthorised: re-login"
        assert "log in again" in state.message and "first" not in state.message  # no token on screen
        assert [q.name for q in backend.list(kind)] == ["cq-1"]  # what was read stays, marked old
        assert backend.view_state(kind).status is ViewStatus.ERROR
        banner = Freshness.read(backend, (kind,)).banner()
        assert banner is not None and "unauthorised: re-login" in banner.plain and "stale" not in banner.plain
        relists = backend.informer_stats()["clusterqueues"]["relists"]

        _token_file(token, "second")  # a new login
        assert backend.cache.wait_for(lambda: backend.connection_state().status is ConnectionStatus.CONNECTED, BOUND), \
            backend.connection_state()
        assert backend.cache.wait_for(lambda: backend.view_state(kind).status is ViewStatus.READY, BOUND)
        assert backend.informer_stats()["clusterqueues"]["relists"] == relists  # the watch resumed from its resourceVersion
    finally:
        backend.close()
        server.close()
