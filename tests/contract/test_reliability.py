"""Reliability on a real control plane: API server killed mid-watch, a forced
410 relist, a log stream broken mid-follow.  Tier fixtures come from
tests/harness; the same scenarios run on the simulated backend in
tests/cluster/test_sim_reliability.py."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from tau_tui.core.cluster.changes import ChangeType, ConnectionStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.real import resource_path
from tests.contract import helpers as h
from tests.contract.envs import wait_real
from tests.contract.real_env import RealEnv

R = ResourceKind
WPC = R.WORKLOAD_PRIORITY_CLASS


def _server_names(env, prefix):
    body = env.admin.request("GET", resource_path(WPC.type))
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in body["items"] if i["metadata"]["name"].startswith(prefix)}


def _cache_names(backend, prefix):
    return {v.name: v.resource_version for v in backend.list(WPC) if v.name.startswith(prefix)}


@pytest.mark.harness
@pytest.mark.t1
def test_apiserver_killed_during_watch_cache_converges(t1):
    env = RealEnv(t1, "t1")
    try:
        prefix = f"rel-{env.unique_namespace('kill')}-"
        for i in range(5):
            env.create(WPC.type, h.priority_class(f"{prefix}{i}", i))
        backend = env.backend()
        rec = h.Recorder()
        backend.subscribe(rec, kinds=[WPC])
        states = []
        backend.subscribe(lambda b: None, kinds=[], on_state=states.append)
        assert wait_real(lambda: _cache_names(backend, prefix) == _server_names(env, prefix))

        t1.stop_apiserver(kill=True)
        assert wait_real(lambda: backend.connection_state().status is not ConnectionStatus.CONNECTED, timeout=120)
        # While the server is down, reads keep serving the last data and say it is stale.
        assert len(_cache_names(backend, prefix)) == 5
        assert backend.connection_state().stale_since is not None
        t1.start_apiserver()

        env.create(WPC.type, h.priority_class(f"{prefix}new", 99))
        env.patch(WPC.type, f"{prefix}0", None, {"value": 1000})
        env.delete(WPC.type, f"{prefix}1", None)
        assert wait_real(lambda: _cache_names(backend, prefix) == _server_names(env, prefix), timeout=120)
        assert wait_real(lambda: backend.connection_state().status is ConnectionStatus.CONNECTED, timeout=60)
        assert backend.get(WPC, f"{prefix}0").value == 1000
        assert any(s.status is not ConnectionStatus.CONNECTED for s in states)

        with rec.lock:
            mine = [e for e in rec.events if e.obj.name.startswith(prefix)]
        seen = Counter((e.obj.name, e.obj.resource_version, e.type) for e in mine)
        assert all(count == 1 for count in seen.values()), "duplicate change events"
        by_name = {}
        for e in mine:
            by_name.setdefault(e.obj.name, []).append(e.type)
        assert by_name[f"{prefix}new"][0] is ChangeType.ADDED
        assert by_name[f"{prefix}1"][-1] is ChangeType.DELETED
    finally:
        env.close()


@pytest.mark.harness
@pytest.mark.t1
def test_expired_resource_version_forces_relist(t1):
    env = RealEnv(t1, "t1")
    try:
        prefix = f"gone-{env.unique_namespace('gone')}-"
        backend = env.backend()
        informer = next(i for i in backend._informers if i.kind is WPC and not i.node_pods)
        relists_before = informer.relists
        relisted = threading.Event()
        backend.subscribe(lambda b: relisted.set() if WPC in b.relisted else None, kinds=[WPC])
        env.create(WPC.type, h.priority_class(f"{prefix}a", 1))
        assert wait_real(lambda: backend.get(WPC, f"{prefix}a") is not None)
        # Resume from a resourceVersion the server has long forgotten: it answers 410 Gone.
        informer.resource_version = "1"
        informer.stop_event.clear()
        resp = informer._resp
        if resp is not None:
            resp.shutdown()
        env.create(WPC.type, h.priority_class(f"{prefix}b", 2))
        assert wait_real(lambda: informer.relists > relists_before, timeout=60)
        assert relisted.wait(30)
        assert wait_real(lambda: _cache_names(backend, prefix) == _server_names(env, prefix))
    finally:
        env.close()


@pytest.mark.harness
@pytest.mark.t2
def test_log_stream_broken_mid_follow_has_every_line_once(t2, tmp_path):
    from tests.harness.kwok import FAKE_LOG_LINES

    env = RealEnv(t2, "t2")
    try:
        ns = env.unique_namespace("logbreak")
        env.create(R.RESOURCE_FLAVOR.type, h.flavor(f"rf-{ns}"))
        env.create(R.CLUSTER_QUEUE.type, h.cluster_queue(f"cq-{ns}", f"rf-{ns}", 8))
        env.create(R.LOCAL_QUEUE.type, h.local_queue(ns, "lq", f"cq-{ns}"))
        backend = env.backend(namespace=ns)
        assert backend.submit([h.job(ns, "follow-me", "lq", gpus=1)])[0].ok
        assert wait_real(lambda: any(p.phase == "Running" for p in backend.pods(ns)), timeout=120)
        stream = backend.open_logs(LogRequest(namespace=ns, job="follow-me", follow=True), spool_dir=str(tmp_path))
        try:
            assert stream.spool.wait_for_lines(len(FAKE_LOG_LINES), 60)
            env.break_log_streams()  # kill -9 and restart the API server mid-follow
            assert wait_real(lambda: stream.reconnects >= 1, timeout=120)
            assert wait_real(lambda: stream.state == "streaming", timeout=120)
            assert stream.spool.lines() == FAKE_LOG_LINES
        finally:
            stream.close()
        assert stream.spool.lines() == FAKE_LOG_LINES
    finally:
        env.close()
