"""After the API server comes back (#33, item 6), every view the backend marked "reconnecting" reads
ready again once its watch resumes, nodes included, against a local stub that drops connections
while it is "down".  Bounded by generous waits, never asserting how long anything took."""

from __future__ import annotations

import json
import time

import pytest

from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.kubeconfig import RequestTimeouts
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.screens.freshness import Freshness
from tests.stub_servers import kubeconfig, scripted_server

BOUND = 60


class RestartingServer:
    """Lists one object of any kind; watches stay quiet a moment and end.  While ``down`` every
    request's connection is closed without an answer, as a stopped API server's would be."""

    def __init__(self) -> None:
        self.down = False
        self.watches_after_up = 0
        self.httpd = scripted_server(self._answer)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def _answer(self, path: str, _headers) -> tuple[int, bytes] | None:
        if self.down:
            return None
        if "watch=true" in path:
            self.watches_after_up += 1
            time.sleep(0.2)
            return 200, b""
        items = [{"metadata": {"name": "one", "resourceVersion": "3", "uid": "u1"}}]
        return 200, json.dumps({"items": items, "metadata": {"resourceVersion": "3"}}).encode()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.mark.parametrize("kind", [ResourceKind.NODE, ResourceKind.CLUSTER_QUEUE])
def test_a_view_marked_reconnecting_reads_ready_once_its_watch_resumes(tmp_path, kind):
    server = RestartingServer()
    path = kubeconfig(tmp_path / "kc", server.url, {"token": "t"})
    backend = KubernetesBackend(path, kinds=[kind], timeouts=RequestTimeouts(2, 5, 5))
    try:
        backend.start()
        assert backend.wait_synced(BOUND)
        server.down = True
        assert backend.cache.wait_for(lambda: backend.view_state(kind).status is ViewStatus.ERROR, BOUND)
        relists = sum(s["relists"] for s in backend.informer_stats().values())
        server.watches_after_up = 0
        server.down = False
        assert backend.cache.wait_for(lambda: server.watches_after_up >= 2, BOUND)  # resumed, and resumed again
        assert backend.cache.wait_for(lambda: backend.connection_state().status is ConnectionStatus.CONNECTED, BOUND)
        assert sum(s["relists"] for s in backend.informer_stats().values()) == relists  # a resume, not a relist
        assert backend.view_state(kind).status is ViewStatus.READY, backend.view_state(kind)
        assert Freshness.read(backend, (kind,)).banner() is None
        assert [v.name for v in backend.list(kind)] == ["one"]
    finally:
        backend.close()
        server.close()
