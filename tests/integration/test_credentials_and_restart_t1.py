"""Credentials that expire or are revoked while the app runs, and the API server restarting under it
(#33, items 5 and 6), on a real kube-apiserver (tier 1).

The credential is an exec plugin (tests/harness/exec_credential.py) printing a TokenRequest token of
a ServiceAccount with a 60 s ``expirationTimestamp``; the token itself lives longer (the API server's
minimum is 10 minutes), so expiry is the client's own reckoning, and revocation is deleting the
Secret the token is bound to (tests/harness/multikueue.py).  The restart stops only kube-apiserver
and starts it again on the same port, certificates and etcd.  What the backend shows is compared
with a fresh list (the oracle); waits are bounded generously and no duration is asserted."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.cluster import real
from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.screens.freshness import Freshness
from tests.app.helpers import wait_until
from tests.harness.exec_credential import ExecCredentialPlugin
from tests.harness.multikueue import KUEUE_NAMESPACE, mint_worker_credential, revoke_worker_credential
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

NAMESPACE = "cred-restart"
IDENTITY = "tau-cred-test"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
WORKLOADS = ResourceKind.WORKLOAD
BOUND = 180  # seconds before a wait fails: a hang guard, far above a slow machine's restart
WATCH_ENDS_AFTER_S = 2  # the server ends each watch this soon, so the informer asks again with the credential


@pytest.fixture(scope="module")
def plane(t1):
    """t1 with a namespace for these tests and a ServiceAccount allowed to read it."""
    admin = t1.api_client()
    core = k8s.CoreV1Api(admin)
    try:
        core.create_namespace({"metadata": {"name": NAMESPACE}})
    except ApiException as err:
        assert err.status == 409
    try:
        k8s.RbacAuthorizationV1Api(admin).create_cluster_role_binding({
            "metadata": {"name": f"{IDENTITY}-crb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": IDENTITY, "namespace": KUEUE_NAMESPACE}],
        })
    except ApiException as err:
        assert err.status == 409
    return t1


def workload(name: str) -> dict:
    return {"apiVersion": "/".join(KUEUE), "kind": "Workload", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def create_workloads(plane, *names: str) -> None:
    custom = k8s.CustomObjectsApi(plane.api_client())
    for name in names:
        custom.create_namespaced_custom_object(*KUEUE, NAMESPACE, "workloads", workload(name))


def delete_workloads(plane, *names: str) -> None:
    custom = k8s.CustomObjectsApi(plane.api_client())
    for name in names:
        try:
            custom.delete_namespaced_custom_object(*KUEUE, NAMESPACE, "workloads", name)
        except ApiException as err:  # cleanup after a failed test: some were never made
            if err.status != 404:
                raise


def oracle(plane) -> set[str]:
    """The Workloads of the namespace as a fresh list with the admin client says."""
    items = k8s.CustomObjectsApi(plane.api_client()).list_namespaced_custom_object(*KUEUE, NAMESPACE, "workloads")["items"]
    return {item["metadata"]["name"] for item in items}


def shown(backend: KubernetesBackend) -> set[str]:
    return {w.name for w in backend.list(WORKLOADS)}


def matches_oracle(plane, backend: KubernetesBackend):
    def check():
        want = oracle(plane)
        return backend.connection_state().status is ConnectionStatus.CONNECTED and shown(backend) == want and want
    return check


def plugin_backend(plane, tmp_path, *workloads: str, kinds=(WORKLOADS,)):
    """``workloads`` made, and a started backend on ``plane`` whose credential is an exec plugin printing
    a fresh token (``kinds`` None: every kind, as the app).  Returns (the token's credential, plugin, backend)."""
    credential = mint_worker_credential(plane, service_account=IDENTITY, expiration_seconds=3600)
    plugin = ExecCredentialPlugin(tmp_path / "plugin", credential.token, lifetime_s=60)
    create_workloads(plane, *workloads)
    path = plugin.kubeconfig(tmp_path / "kubeconfig", plane.server, str(plane.ca.cert_path))
    backend = KubernetesBackend(path, namespace=NAMESPACE, kinds=kinds)
    backend.start()
    assert backend.wait_synced(BOUND)
    return credential, plugin, backend


@pytest.fixture
def short_watches(monkeypatch):
    monkeypatch.setattr(real, "WATCH_TIMEOUT_SECONDS", WATCH_ENDS_AFTER_S)


def test_an_expiring_exec_credential_is_refreshed_and_the_watch_resumes(plane, tmp_path, short_watches):
    first, plugin, backend = plugin_backend(plane, tmp_path, "exp-1")
    try:
        wait_for(matches_oracle(plane, backend), "the backend to show exp-1", BOUND)
        runs = plugin.runs
        for _ in range(10):
            backend.fetch(WORKLOADS, NAMESPACE)
        # A 60 s credential is not fetched again for each request (at most once, should it expire meanwhile).
        assert plugin.runs - runs <= 1, plugin.runs - runs

        second = mint_worker_credential(plane, service_account=IDENTITY, expiration_seconds=3600)
        plugin.use(second.token)  # a new login; then the old token stops working
        revoke_worker_credential(plane, first)
        relists = backend.informer_stats()["workloads"]["relists"]
        resumes = backend.informer_stats()["workloads"]["resumes"]
        create_workloads(plane, "exp-2")
        wait_for(matches_oracle(plane, backend), "the backend to show exp-2 with the refreshed credential", BOUND,
                 explain=lambda: f"shown {sorted(shown(backend))}, state {backend.connection_state()}")
        wait_for(lambda: backend.informer_stats()["workloads"]["resumes"] > resumes, "a watch resumed after the refresh", BOUND)
        assert backend.informer_stats()["workloads"]["relists"] == relists  # resumed from its resourceVersion
        assert backend.fetch(WORKLOADS, NAMESPACE)  # one-off requests use the new credential too
    finally:
        backend.close()
        delete_workloads(plane, "exp-1", "exp-2")


def test_a_revoked_exec_credential_reads_unauthorised_relogin_until_a_new_login(plane, tmp_path, short_watches):
    first, plugin, backend = plugin_backend(plane, tmp_path, "rev-1")
    try:
        wait_for(matches_oracle(plane, backend), "the backend to show rev-1", BOUND)
        revoke_worker_credential(plane, first)  # the plugin keeps printing the revoked token
        wait_for(lambda: backend.connection_state().status is ConnectionStatus.UNAUTHORISED,
                 "the connection to read unauthorised", BOUND, explain=lambda: str(backend.connection_state()))
        state = backend.connection_state()
        assert state.label == "unauthorised: re-login"
        banner = Freshness.read(backend, (WORKLOADS,)).banner()
        assert banner is not None and "unauthorised: re-login" in banner.plain and "stale" not in banner.plain
        assert first.token not in state.message + banner.plain + backend.view_state(WORKLOADS).message
        assert shown(backend) == {"rev-1"}  # the last data stays readable
        assert backend.view_state(WORKLOADS).status is ViewStatus.ERROR

        create_workloads(plane, "rev-2")
        second = mint_worker_credential(plane, service_account=IDENTITY, expiration_seconds=3600)
        plugin.use(second.token)  # the user logs in again; the app was not restarted
        wait_for(matches_oracle(plane, backend), "the backend to recover and show rev-2", BOUND,
                 explain=lambda: f"shown {sorted(shown(backend))}, state {backend.connection_state()}")
        assert backend.view_state(WORKLOADS).status is ViewStatus.READY
        assert Freshness.read(backend, (WORKLOADS,)).banner() is None
    finally:
        backend.close()
        delete_workloads(plane, "rev-1", "rev-2")


def test_the_apiserver_restarting_on_the_same_etcd_is_followed_and_the_view_matches_a_fresh_list(plane):
    create_workloads(plane, "rs-1", "rs-2", "rs-3")
    kinds = (WORKLOADS, ResourceKind.LOCAL_QUEUE, ResourceKind.NODE)
    backend = KubernetesBackend(plane.kubeconfig, namespace=NAMESPACE, kinds=list(kinds))
    backend.start()
    try:
        assert backend.wait_synced(BOUND)
        wait_for(matches_oracle(plane, backend), "the backend to show rs-1..3", BOUND)
        before = backend.informer_stats()["workloads"]
        plane.stop_apiserver()
        try:
            wait_for(lambda: backend.connection_state().status is not ConnectionStatus.CONNECTED,
                     "the backend to notice the API server is gone", BOUND)
            assert shown(backend) == {"rs-1", "rs-2", "rs-3"}  # readable while it is down
        finally:
            plane.start_apiserver()
        # What changed right after the restart: the watch must not miss it.
        delete_workloads(plane, "rs-1")
        create_workloads(plane, "rs-4", "rs-5")
        wait_for(matches_oracle(plane, backend), "the backend to reconnect and match a fresh list", BOUND,
                 explain=lambda: f"shown {sorted(shown(backend))}, state {backend.connection_state()}")
        assert shown(backend) == {"rs-2", "rs-3", "rs-4", "rs-5"}
        after = backend.informer_stats()["workloads"]
        assert after["relists"] + after["resumes"] > before["relists"] + before["resumes"]  # reconnected
        for kind in kinds:
            wait_for(lambda kind=kind: backend.view_state(kind).status is ViewStatus.READY, f"{kind} ready again", BOUND,
                     explain=lambda kind=kind: str(backend.view_state(kind)))
        assert Freshness.read(backend, kinds).banner() is None
    finally:
        backend.close()
        delete_workloads(plane, "rs-1", "rs-2", "rs-3", "rs-4", "rs-5")


def tau_app(backend: KubernetesBackend, tmp_path, monkeypatch):
    """The Textual app on ``backend`` (started), its settings, audit log and XDG directories under ``tmp_path``."""
    from tau_tui.app import TauApp
    from tau_tui.core.operations.audit import AuditLog
    from tau_tui.settings.settings_file import AppSettings, LoadedSettings

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TAU_TUI_CONFIG", raising=False)
    return TauApp(backend, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                  audit=AuditLog(tmp_path / "audit.jsonl"), start_pane="queue")


async def until(pilot, predicate, what: str) -> None:
    """``wait_until`` saying, when it times out, what the backend's connection and views were."""
    try:
        await wait_until(pilot, predicate, BOUND, what)
    except AssertionError as err:
        backend = pilot.app.backend
        views = {kind.type.plural: backend.view_state(kind).status.value for kind in ResourceKind}
        raise AssertionError(f"{err}: {backend.connection_state()}, views {views}") from None


def app_rows(app) -> set[str]:
    from tau_tui.widgets.keyed_table import KeyedTable

    return {key.rsplit("/", 1)[-1] for key in app.screen.query_one("#workloads-table", KeyedTable).keys}


def app_banner(app) -> str:
    from textual.widgets import Static

    return str(app.screen.query_one("#pane-banner", Static).render())


def test_the_app_header_and_queue_pane_through_a_revoked_credential_and_an_apiserver_restart(plane, tmp_path, monkeypatch,
                                                                                              short_watches):
    first, plugin, backend = plugin_backend(plane, tmp_path, "app-1", "app-2", kinds=None)
    app = tau_app(backend, tmp_path, monkeypatch)

    async def drive():
        async with app.run_test(size=(200, 50)) as pilot:
            await until(pilot, lambda: app.connection_label == "connected" and app_rows(app) == oracle(plane) == {"app-1", "app-2"},
                        "the queue pane to list app-1 and app-2")
            revoke_worker_credential(plane, first)
            await until(pilot, lambda: app.connection_label == "unauthorised: re-login", "the header to read unauthorised")
            await until(pilot, lambda: "unauthorised: re-login" in app_banner(app), "the pane banner to read unauthorised")
            assert "stale" not in app_banner(app) and first.token not in app_banner(app)
            assert app_rows(app) == {"app-1", "app-2"}  # the last data stays on screen
            plugin.use(mint_worker_credential(plane, service_account=IDENTITY, expiration_seconds=3600).token)
            await until(pilot, lambda: app.connection_label == "connected", "the header to read connected after a new login")

            plane.stop_apiserver()
            try:
                await until(pilot, lambda: app.connection_label != "connected", "the header to notice the restart")
            finally:
                plane.start_apiserver()
            delete_workloads(plane, "app-1")
            create_workloads(plane, "app-3")
            await until(pilot, lambda: app.connection_label == "connected" and app_rows(app) == oracle(plane) == {"app-2", "app-3"},
                        "the queue pane to match a fresh list after the restart")
            await until(pilot, lambda: not app_banner(app).strip(), "the pane banner to clear")

    try:
        asyncio.run(drive())
    finally:
        backend.close()
        delete_workloads(plane, "app-1", "app-2", "app-3")
