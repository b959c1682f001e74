"""The API server upgraded while the app runs (#33, item 6), on the shared tier-1 plane: kube-apiserver
stops and another release's binary (UPGRADE_K8S_VERSION of harness/versions.env, built by
`bash harness/build.sh k8s-upgrade`) starts on the same port, certificates and etcd.  The backend and the
Textual app must reconnect, list again, and show what a fresh list with the kubernetes client shows (the
oracle), with no stale banner, and ``:version`` must name the new release.  The default cell's binary is
always put back (other tests share the plane).  Waits are bounded generously; no duration is asserted."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.found_versions import read_found_versions
from tau_tui.screens.freshness import Freshness
from tests.app.helpers import record_notifications
from tests.harness.waiting import wait_for
from tests.integration.test_credentials_and_restart_t1 import app_banner, app_rows, tau_app, until

pytestmark = [pytest.mark.harness, pytest.mark.t1]

NAMESPACE = "apiserver-upgrade"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
BOUND = 180  # seconds before a wait fails: a hang guard, far above a slow machine's restart
KINDS = (ResourceKind.WORKLOAD, ResourceKind.LOCAL_QUEUE)
PLURALS = {ResourceKind.WORKLOAD: "workloads", ResourceKind.LOCAL_QUEUE: "localqueues"}


@pytest.fixture(scope="module")
def plane(t1):
    """t1 with a namespace for these tests; the upgrade binary must have been built."""
    t1.binaries.require("upgrade_kube_apiserver")
    try:
        k8s.CoreV1Api(t1.api_client()).create_namespace({"metadata": {"name": NAMESPACE}})
    except ApiException as err:
        assert err.status == 409
    return t1


def server_version(plane) -> str:
    """What the running kube-apiserver says it is, through the kubernetes client."""
    return k8s.VersionApi(plane.api_client()).get_code().git_version


@pytest.fixture
def default_apiserver_afterwards(plane) -> Iterator[None]:
    """Whatever the test did (a failure included), the plane runs the default cell's kube-apiserver again afterwards."""
    yield
    if plane.apiserver.argv[0] != str(plane.binaries.kube_apiserver) or not plane.apiserver.running():
        plane.stop_apiserver()
        plane.start_apiserver()
    assert server_version(plane) == plane.binaries.k8s_version


def stop_apiserver_while_etcd_moves_on(plane) -> None:
    """Stop kube-apiserver, then write a key outside /registry straight to etcd: the cluster moved on
    while no API server ran (as under another API server of an HA pair), so a watch from a
    resourceVersion seen before the stop is too old for the next server's watch cache, which must
    answer 410 Gone and the informers must list again."""
    plane.stop_apiserver()
    key, value = (base64.b64encode(text.encode()).decode() for text in ("/tau-harness/upgrade-test", "moved on"))
    request = urllib.request.Request(f"http://127.0.0.1:{plane.ports['etcd_client']}/v3/kv/put", method="POST",
                                     data=json.dumps({"key": key, "value": value}).encode())
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert "header" in json.load(answer)


def upgrade(plane) -> None:
    plane.start_apiserver(plane.binaries.upgrade_kube_apiserver)


def body(kind: ResourceKind, name: str) -> dict:
    meta = {"name": name, "namespace": NAMESPACE}
    if kind is ResourceKind.LOCAL_QUEUE:
        return {"apiVersion": "/".join(KUEUE), "kind": "LocalQueue", "metadata": meta, "spec": {"clusterQueue": "upgrade-cq"}}
    return {"apiVersion": "/".join(KUEUE), "kind": "Workload", "metadata": meta,
            "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def create(plane, kind: ResourceKind, *names: str) -> None:
    custom = k8s.CustomObjectsApi(plane.api_client())
    for name in names:
        custom.create_namespaced_custom_object(*KUEUE, NAMESPACE, PLURALS[kind], body(kind, name))


def delete(plane, kind: ResourceKind, *names: str) -> None:
    custom = k8s.CustomObjectsApi(plane.api_client())
    for name in names:
        try:
            custom.delete_namespaced_custom_object(*KUEUE, NAMESPACE, PLURALS[kind], name)
        except ApiException as err:  # cleanup after a failed test: some were never made
            if err.status != 404:
                raise


def oracle(plane, kind: ResourceKind) -> set[str]:
    """The names of ``kind`` in the namespace as a fresh list with the admin client says."""
    items = k8s.CustomObjectsApi(plane.api_client()).list_namespaced_custom_object(
        *KUEUE, NAMESPACE, PLURALS[kind])["items"]
    return {item["metadata"]["name"] for item in items}


def shown(backend: KubernetesBackend, kind: ResourceKind) -> set[str]:
    return {view.name for view in backend.list(kind)}


def matches_oracle(plane, backend: KubernetesBackend):
    def check():
        return backend.connection_state().status is ConnectionStatus.CONNECTED and all(
            shown(backend, kind) == oracle(plane, kind) for kind in KINDS)
    return check


def relists(backend: KubernetesBackend) -> dict[str, int]:
    return {PLURALS[kind]: backend.informer_stats()[PLURALS[kind]]["relists"] for kind in KINDS}


def explain(backend: KubernetesBackend):
    return lambda: (f"shown {[sorted(shown(backend, kind)) for kind in KINDS]}, state {backend.connection_state()}, "
                    f"views {[str(backend.view_state(kind)) for kind in KINDS]}")


def test_the_backend_follows_an_apiserver_upgrade_and_the_way_back(plane, default_apiserver_afterwards):
    default, upgraded = plane.binaries.k8s_version, plane.binaries.versions["UPGRADE_K8S_VERSION"]
    create(plane, ResourceKind.WORKLOAD, "up-1", "up-2", "up-3")
    create(plane, ResourceKind.LOCAL_QUEUE, "lq-a")
    backend = KubernetesBackend(plane.kubeconfig, namespace=NAMESPACE, kinds=list(KINDS))
    backend.start()
    try:
        assert backend.wait_synced(BOUND)
        wait_for(matches_oracle(plane, backend), "the backend to show up-1..3 and lq-a", BOUND, explain=explain(backend))
        assert read_found_versions(backend).kubernetes == default
        before = relists(backend)

        stop_apiserver_while_etcd_moves_on(plane)
        wait_for(lambda: backend.connection_state().status is not ConnectionStatus.CONNECTED,
                 "the backend to notice the API server is gone", BOUND)
        assert shown(backend, ResourceKind.WORKLOAD) == {"up-1", "up-2", "up-3"}  # readable while it is down
        upgrade(plane)
        assert server_version(plane) == upgraded  # the oracle: the other release answers now
        # What changed right after the upgrade: the new server's watch must not miss it.
        delete(plane, ResourceKind.WORKLOAD, "up-1")
        create(plane, ResourceKind.WORKLOAD, "up-4", "up-5")
        create(plane, ResourceKind.LOCAL_QUEUE, "lq-b")
        delete(plane, ResourceKind.LOCAL_QUEUE, "lq-a")
        wait_for(matches_oracle(plane, backend), "the backend to reconnect and match a fresh list after the upgrade",
                 BOUND, explain=explain(backend))
        assert shown(backend, ResourceKind.WORKLOAD) == {"up-2", "up-3", "up-4", "up-5"}
        assert shown(backend, ResourceKind.LOCAL_QUEUE) == {"lq-b"}
        after = relists(backend)
        assert all(after[kind] > before[kind] for kind in before), (before, after)  # listed again from the new server
        for kind in KINDS:
            wait_for(lambda kind=kind: backend.view_state(kind).status is ViewStatus.READY, f"{kind} ready again", BOUND,
                     explain=explain(backend))
        assert Freshness.read(backend, KINDS).banner() is None
        assert read_found_versions(backend).kubernetes == upgraded

        # And back to the default cell's release (a rollback), with a change right after it.
        stop_apiserver_while_etcd_moves_on(plane)
        wait_for(lambda: backend.connection_state().status is not ConnectionStatus.CONNECTED,
                 "the backend to notice the upgraded API server is gone", BOUND)
        plane.start_apiserver()
        assert server_version(plane) == default
        create(plane, ResourceKind.WORKLOAD, "up-6")
        wait_for(lambda: matches_oracle(plane, backend)() and "up-6" in shown(backend, ResourceKind.WORKLOAD),
                 "the backend to match a fresh list after the rollback", BOUND, explain=explain(backend))
        assert shown(backend, ResourceKind.WORKLOAD) == {"up-2", "up-3", "up-4", "up-5", "up-6"}
        assert all(relists(backend)[kind] > after[kind] for kind in after)
        assert Freshness.read(backend, KINDS).banner() is None
        assert read_found_versions(backend).kubernetes == default
    finally:
        backend.close()
        delete(plane, ResourceKind.WORKLOAD, "up-1", "up-2", "up-3", "up-4", "up-5", "up-6")
        delete(plane, ResourceKind.LOCAL_QUEUE, "lq-a", "lq-b")


def counts_prefix(plane) -> str:
    """The queue pane's counts line as a fresh list says it must start: ClusterQueues (cluster-wide) and
    the namespace's LocalQueues."""
    cqs = k8s.CustomObjectsApi(plane.api_client()).list_cluster_custom_object(*KUEUE, "clusterqueues")["items"]
    return f"{len(cqs)} CQ · {len(oracle(plane, ResourceKind.LOCAL_QUEUE))} LQ · workloads: "


def pane_status(app) -> str:
    from textual.widgets import Static

    return str(app.screen.query_one("#pane-status", Static).render())


def header(app) -> str:
    return str(app.screen.query_one("#header").render())


def test_the_app_header_queue_pane_and_version_through_an_apiserver_upgrade(plane, default_apiserver_afterwards,
                                                                         tmp_path, monkeypatch):
    default, upgraded = plane.binaries.k8s_version, plane.binaries.versions["UPGRADE_K8S_VERSION"]
    create(plane, ResourceKind.WORKLOAD, "app-up-1", "app-up-2")
    create(plane, ResourceKind.LOCAL_QUEUE, "app-lq-1")
    backend = KubernetesBackend(plane.kubeconfig, namespace=NAMESPACE)  # every kind, as the app
    backend.start()
    app = tau_app(backend, tmp_path, monkeypatch)

    def pane_matches(rows: set[str]) -> bool:
        return (app.connection_label == "connected" and app_rows(app) == oracle(plane, ResourceKind.WORKLOAD) == rows
                and pane_status(app).startswith(counts_prefix(plane)))

    async def versions_said(said: list[str], version: str, pilot) -> None:
        said.clear()
        await app.command_mode.run_command_text("version")
        await until(pilot, lambda: any(f"Kubernetes {version}" in text for text in said), f":version to say {version}")

    async def drive():
        async with app.run_test(size=(200, 50)) as pilot:
            said = record_notifications(app)
            await until(pilot, lambda: pane_matches({"app-up-1", "app-up-2"}), "the queue pane to list app-up-1 and 2")
            await versions_said(said, default, pilot)
            before = backend.informer_stats()["workloads"]["relists"]

            stop_apiserver_while_etcd_moves_on(plane)
            await until(pilot, lambda: app.connection_label != "connected", "the header to notice the API server is gone")
            upgrade(plane)
            delete(plane, ResourceKind.WORKLOAD, "app-up-1")
            create(plane, ResourceKind.WORKLOAD, "app-up-3")
            create(plane, ResourceKind.LOCAL_QUEUE, "app-lq-2")
            await until(pilot, lambda: pane_matches({"app-up-2", "app-up-3"}), "the queue pane to match a fresh list")
            await until(pilot, lambda: not app_banner(app).strip(), "the pane banner to clear")
            assert "stale" not in header(app) and "reconnecting" not in header(app), header(app)
            assert backend.informer_stats()["workloads"]["relists"] > before
            await versions_said(said, upgraded, pilot)
            # The ? help's line, read again once the app is connected again, names the new release too.
            await until(pilot, lambda: f"Kubernetes {upgraded}" in (app.found_versions.line_for(backend) or ""),
                        f"the ? help's versions line to say {upgraded}")

    try:
        asyncio.run(drive())
    finally:
        backend.close()
        delete(plane, ResourceKind.WORKLOAD, "app-up-1", "app-up-2", "app-up-3")
        delete(plane, ResourceKind.LOCAL_QUEUE, "app-lq-1", "app-lq-2")
