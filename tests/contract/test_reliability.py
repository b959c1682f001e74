"""Reliability on a real control plane: API server killed mid-watch, a forced
410 relist, a log stream broken mid-follow.  Tier fixtures come from
tests/harness; the broken log stream runs on the simulated backend too, in
tests/sim/test_logs.py."""

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
        assert wait_real(lambda: _cache_names(backend, prefix) == _server_names(env, prefix))
        rec = h.Recorder(backend, WPC)  # a reader of the change feed, from here on

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
        # the feed names every change the cache made: a reader sees them as soon as the cache does
        assert rec.of(f"{prefix}new") and rec.of(f"{prefix}1")[-1].type is ChangeType.DELETED

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
        env.create(WPC.type, h.priority_class(f"{prefix}a", 1))
        assert wait_real(lambda: backend.get(WPC, f"{prefix}a") is not None)
        # The informer notes an event's resourceVersion just after the cache shows the object: wait
        # for that, or it overwrites the forgotten one set below (seen once on a loaded machine).
        seen = backend.cache.raw(WPC, f"{prefix}a")["metadata"]["resourceVersion"]
        assert wait_real(lambda: informer.resource_version == seen)

        def resume_from_a_forgotten_version() -> None:
            # a resourceVersion the server has long forgotten: it answers 410 Gone
            informer.resource_version = "1"
            resp = informer._resp
            if resp is not None:
                resp.shutdown()

        resume_from_a_forgotten_version()
        env.create(WPC.type, h.priority_class(f"{prefix}b", 2))
        for _ in range(3):  # a bookmark landing between the two lines above moves it on again
            if wait_real(lambda: informer.relists > relists_before, timeout=30):
                break
            resume_from_a_forgotten_version()
        assert informer.relists > relists_before
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


@pytest.mark.harness
@pytest.mark.t1
def test_the_queue_kinds_are_listed_before_the_others(t1, monkeypatch):
    """The first screen waits on Workloads: the other kinds' informers start only once every Kueue
    kind has synced, so 20,000 Workloads do not share the server with pods, nodes and events."""
    from tau_tui.core.cluster import real

    started: list[tuple[ResourceKind, bool, bool]] = []  # (kind, node pods, every first kind synced then)
    backend_box: list = []
    original_start = real._Informer.start

    def recording_start(informer):
        first = [i for i in backend_box[0]._informers if i.kind in real.FIRST_LISTED and not i.node_pods]
        started.append((informer.kind, informer.node_pods, all(i.synced.is_set() for i in first)))
        original_start(informer)

    monkeypatch.setattr(real._Informer, "start", recording_start)
    backend = real.KubernetesBackend(t1.kubeconfig, all_namespaces=True)
    backend_box.append(backend)
    try:
        backend.start()
        assert backend.wait_synced(timeout=60)
    finally:
        backend.close()
    first = [entry for entry in started if entry[0] in real.FIRST_LISTED and not entry[1]]
    later = [entry for entry in started if entry not in first]
    assert {kind for kind, _, _ in first} == set(real.FIRST_LISTED)
    assert later and len(first) + len(later) == len(ResourceKind) + 1  # every kind and the node pods
    assert started[:len(first)] == first  # the Kueue kinds start first ...
    assert all(synced for _, _, synced in later)  # ... and every other kind after they synced


@pytest.mark.harness
@pytest.mark.t1
def test_a_queue_kinds_first_list_is_shown_page_by_page(t1, monkeypatch):
    """The first screen shows the first page of Workloads, not the 20,000th: each page of a Kueue
    kind's first list is in the cache while the view still says it is syncing (and how many are
    listed), and the list's end makes the view ready with exactly what the server holds."""
    from tau_tui.core.cluster import real
    from tau_tui.core.cluster.cache import ObjectCache
    from tau_tui.core.cluster.changes import ViewStatus

    env = RealEnv(t1, "t1")
    try:
        prefix = f"pages-{env.unique_namespace('p')}-"
        for i in range(5):
            env.create(WPC.type, h.priority_class(f"{prefix}{i}", i))
        monkeypatch.setattr(real, "LIST_PAGE", 2)
        pages: list[tuple[int, ViewStatus, str, int]] = []  # (listed, view status, message, objects cached)
        add_listed_page = ObjectCache.add_listed_page

        def recording(cache, kind, items, listed):
            add_listed_page(cache, kind, items, listed)
            if kind is WPC:
                state = cache.view_state(kind)
                pages.append((listed, state.status, state.message, len(cache.list(kind))))

        monkeypatch.setattr(ObjectCache, "add_listed_page", recording)
        backend = env.backend()
        assert wait_real(lambda: _cache_names(backend, prefix) == _server_names(env, prefix))
        assert backend.view_state(WPC).status is ViewStatus.READY
        total = len(env.admin.request("GET", resource_path(WPC.type))["items"])
        assert len(pages) == (total - 1) // 2  # every page but the last, which ends the list
        assert [listed for listed, _, _, _ in pages] == [2 * (n + 1) for n in range(len(pages))]
        assert all(status is ViewStatus.SYNCING and message == f"{listed:,} listed so far" and cached == listed
                   for listed, status, message, cached in pages)
    finally:
        env.close()


def _list_until_stopped(informer, *_args):
    """An informer's list that hangs until the informer is stopped (the first kinds never sync)."""
    from tau_tui.core.cluster import real

    informer.stop_event.wait(30)
    raise real.ApiFailure(0, "stopped", "stopped")


@pytest.mark.harness
@pytest.mark.t1
def test_a_backend_closed_before_the_queue_kinds_synced_starts_no_other_informer(t1, monkeypatch):
    from tau_tui.core.cluster import real

    monkeypatch.setattr(real, "FIRST_LIST_WAIT_S", 120.0)  # it ends on the first kinds being stopped
    monkeypatch.setattr(real._Informer, "_list", _list_until_stopped)
    backend = real.KubernetesBackend(t1.kubeconfig, all_namespaces=True)
    before = set(threading.enumerate())
    backend.start()
    starter = next(t for t in set(threading.enumerate()) - before if t.name == "tau-informer-later")
    later = [i for i in backend._informers if i.kind not in real.FIRST_LISTED or i.node_pods]
    backend.close()
    starter.join(60)  # the first informers stopped: it ends, and finds every later one stopped
    assert not starter.is_alive()
    assert later and all(informer.ident is None for informer in later)


@pytest.mark.harness
@pytest.mark.t1
def test_a_namespace_chosen_before_the_queue_kinds_synced_is_used_at_once(t1, monkeypatch):
    """``:ns`` while the other kinds still wait: the namespaced informers are replaced (none of the
    waiting ones was started, none is joined), and the new ones start at once."""
    from tau_tui.core.cluster import real

    monkeypatch.setattr(real, "FIRST_LIST_WAIT_S", 120.0)
    monkeypatch.setattr(real._Informer, "_list", _list_until_stopped)
    backend = real.KubernetesBackend(t1.kubeconfig, all_namespaces=True)
    backend.start()
    try:
        backend.use_namespace("team-x")
        namespaced = [i for i in backend._informers if i.kind.type.namespaced and not i.node_pods]
        assert backend.namespace == "team-x"
        # TauWorkspaces live in the system namespace whichever one the session reads (taugrid.md §4.2)
        wanted = {i: "tau-system" if i.kind is ResourceKind.TAU_WORKSPACE else "team-x" for i in namespaced}
        assert namespaced and all(i.namespace == wanted[i] and i.is_alive() for i in namespaced)
        backend.use_namespace(None)  # and again: nothing left over from the first switch
        assert all(i.namespace is None for i in backend._informers if i.kind.type.namespaced)
    finally:
        backend.close()


@pytest.mark.harness
@pytest.mark.t1
def test_objects_listed_and_watched_share_their_short_strings(t1):
    """Every object decoded from the server held its own copy of each string value (20,000
    Workloads: 1.6 KB each, 0.23 KB of it distinct); listed and watched objects share them."""
    env = RealEnv(t1, "t1")
    try:
        prefix = f"share-{env.unique_namespace('s')}-"
        listed = [f"{prefix}listed-{i}" for i in range(2)]
        for name in listed:
            env.create(WPC.type, {**h.priority_class(name, 7), "description": "shared description"})
        backend = env.backend()
        watched = f"{prefix}watched"
        env.create(WPC.type, {**h.priority_class(watched, 7), "description": "shared description"})
        assert wait_real(lambda: backend.cache.raw(WPC, watched) is not None)
        raws = [backend.cache.raw(WPC, name) for name in [*listed, watched]]
        assert all(raw is not None for raw in raws)
        descriptions = [raw["description"] for raw in raws]
        assert descriptions == ["shared description"] * 3
        assert descriptions[0] is descriptions[1] is descriptions[2]  # one string, not three
    finally:
        env.close()
