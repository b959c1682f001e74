"""benchmarks/watch_source.py against the official kubernetes client (CustomObjectsApi lists with
limit/continue, kubernetes.watch.Watch), then the product's KubernetesBackend syncing from it.
Counts only: no wall-clock assertion."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from benchmarks.watch_source import HOT_NAMESPACE, WatchSource, WorldShape

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
HISTORY = 60


@pytest.fixture
def source(tmp_path) -> Iterator[tuple[WatchSource, str]]:
    served = WatchSource(WorldShape(workloads=492, local_queues=5, cluster_queues=2, namespaces=3, hot_rows=8),
                         history=HISTORY, bookmark_interval=0.2)
    served.start()
    try:
        yield served, str(served.write_kubeconfig(tmp_path / "kubeconfig"))
    finally:
        served.stop()


def custom_api(kubeconfig: str) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(k8s_config.new_client_from_config(config_file=kubeconfig))


def listed_version(api: k8s.CustomObjectsApi) -> str:
    return api.list_cluster_custom_object(GROUP, VERSION, "workloads", limit=1)["metadata"]["resourceVersion"]


def test_paging_returns_every_object_once_at_one_version(source) -> None:
    served, kubeconfig = source
    api = custom_api(kubeconfig)
    names, versions, token, pages = [], set(), None, 0
    while True:
        page = api.list_cluster_custom_object(GROUP, VERSION, "workloads", limit=37, _continue=token)
        pages += 1
        names += [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in page["items"]]
        versions.add(page["metadata"]["resourceVersion"])
        served.change_now(5)  # the world moves between pages; the list is a snapshot
        token = page["metadata"].get("continue")
        if not token:
            break
    assert served.count("workloads") == 500
    assert len(names) == len(set(names)) == 500
    assert pages == 14  # ceil(500 / 37)
    assert len(versions) == 1
    hot = api.list_namespaced_custom_object(GROUP, VERSION, HOT_NAMESPACE, "workloads")["items"]
    assert sorted(w["metadata"]["name"] for w in hot) == [f"bench-{i:02d}" for i in range(8)]
    assert len(api.list_cluster_custom_object(GROUP, VERSION, "localqueues")["items"]) == 5
    assert len(api.list_cluster_custom_object(GROUP, VERSION, "clusterqueues")["items"]) == 2


def test_a_watch_sees_the_changes_made_after_the_lists_version(source) -> None:
    served, kubeconfig = source
    api = custom_api(kubeconfig)
    version = listed_version(api)
    made = served.change_now(20)
    seen = []
    for event in k8s_watch.Watch().stream(api.list_cluster_custom_object, GROUP, VERSION, "workloads",
                                          resource_version=version, timeout_seconds=3):
        assert event["type"] == "MODIFIED"
        seen.append(event["raw_object"])
        if len(seen) == len(made):
            break
    assert [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in seen] == [m["row"] for m in made]
    for obj, change in zip(seen, made, strict=True):
        assert int(obj["metadata"]["resourceVersion"]) > int(version)
        if change["hot"]:
            assert obj["spec"]["queueName"] == change["value"]
        else:
            reserved = next(c for c in obj["status"]["conditions"] if c["type"] == "QuotaReserved")
            assert reserved["message"].endswith(f"({change['value']})")
    assert sum(1 for m in made if m["hot"]) == 10


def test_bookmarks_arrive_when_asked(source) -> None:
    _, kubeconfig = source
    api = custom_api(kubeconfig)
    version = listed_version(api)
    events = list(k8s_watch.Watch().stream(api.list_namespaced_custom_object, GROUP, VERSION, HOT_NAMESPACE, "workloads",
                                           resource_version=version, allow_watch_bookmarks=True, timeout_seconds=1))
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks
    assert all(int(b["raw_object"]["metadata"]["resourceVersion"]) >= int(version) for b in bookmarks)


def test_a_too_old_resource_version_gets_410(source) -> None:
    served, kubeconfig = source
    api = custom_api(kubeconfig)
    version = listed_version(api)
    served.change_now(HISTORY * 2)
    with pytest.raises(k8s.ApiException) as gone:
        for _ in k8s_watch.Watch().stream(api.list_cluster_custom_object, GROUP, VERSION, "workloads",
                                          resource_version=version, timeout_seconds=3):
            pass
    assert gone.value.status == 410


def test_the_products_backend_syncs_every_workload_and_follows_a_change(source) -> None:
    from tau_tui.core.cluster.kinds import ResourceKind
    from tau_tui.core.cluster.real import KubernetesBackend

    served, kubeconfig = source
    backend = KubernetesBackend(kubeconfig=kubeconfig, all_namespaces=True)
    backend.start()
    try:
        assert backend.wait_synced(60, kinds=[ResourceKind.WORKLOAD, ResourceKind.LOCAL_QUEUE, ResourceKind.CLUSTER_QUEUE])
        assert len(backend.workloads()) == served.count("workloads") == 500
        assert len(backend.local_queues()) == 5 and len(backend.cluster_queues()) == 2
        last = [m for m in served.change_now(40, hot_share=1.0) if m["name"] == "bench-03"][-1]
        deadline = time.monotonic() + 30  # a bound on the wait, not a measurement
        while time.monotonic() < deadline:
            shown = backend.get(ResourceKind.WORKLOAD, "bench-03", HOT_NAMESPACE)
            if shown is not None and shown.queue_name == last["value"]:
                break
            time.sleep(0.05)
        assert shown is not None and shown.queue_name == last["value"]
        assert len(backend.workloads()) == 500
    finally:
        backend.close()
