"""Rights in one namespace only, as on a shared cluster (tier 1): a ServiceAccount bound to `edit`
plus Kueue read in `team-a`, nothing cluster-wide.  Without -n the product starts in the kubeconfig
context's namespace and works there (the CLI and the app); with a context that names no namespace,
what it says names the fix (-n NS or :ns NS) and the namespace the account can read."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.app import TauApp
from tau_tui.cli import main
from tau_tui.core.cluster.changes import ConnectionStatus, ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import AuditLog
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.startup.backends import connect_kubeconfig_backend
from tau_tui.widgets.keyed_table import NOTICE_KEY, KeyedTable
from tests.app.helpers import async_test, wait_until
from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

REPO = Path(__file__).resolve().parents[2]
TEAM = "team-a"
OTHER = "team-b"
ACCOUNT = "researcher"
RUN = "only-in-team-a"
BOUND = 120  # seconds a wait may take before the test fails: far above what it needs


def job(name: str, namespace: str) -> dict:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"kueue.x-k8s.io/queue-name": "team-queue", "tau.azure.com/run": name}},
        "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "main", "image": "registry.invalid/tau/trainer:1",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
    }


def created(call, *args) -> None:
    try:
        call(*args)
    except ApiException as err:
        assert err.status == 409, err


@pytest.fixture(scope="module")
def kubeconfigs(t1, tmp_path_factory):
    """(kubeconfig whose context names team-a, kubeconfig whose context names no namespace)."""
    admin = t1.api_client()
    for name in ("namespace", "workloadpriorityclasses", "resourceflavors", "clusterqueue"):
        create_from_file(admin, REPO / "manifests" / "kueue" / f"{name}.yaml")
    core, rbac = k8s.CoreV1Api(admin), k8s.RbacAuthorizationV1Api(admin)
    custom, batch = k8s.CustomObjectsApi(admin), k8s.BatchV1Api(admin)
    for namespace in (TEAM, OTHER):
        created(core.create_namespace, {"metadata": {"name": namespace}})
        created(custom.create_namespaced_custom_object, "kueue.x-k8s.io", "v1beta2", namespace, "localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "team-queue", "namespace": namespace}, "spec": {"clusterQueue": "jobqueue"}})
    created(batch.create_namespaced_job, TEAM, job(RUN, TEAM))
    created(batch.create_namespaced_job, OTHER, job("only-in-team-b", OTHER))
    # The usual grant on a shared cluster: `edit` in one namespace, plus reading Kueue's objects there
    # (and KubeRay's RayJobs, which `edit` covers only where KubeRay's chart aggregates them into it).
    created(rbac.create_namespaced_role, TEAM, {"metadata": {"name": "kueue-read"}, "rules": [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["get", "list", "watch"]}]})
    plain = t1.kubeconfig_for_serviceaccount(TEAM, ACCOUNT)
    for name, kind in (("researcher-edit", "ClusterRole"), ("researcher-kueue-read", "Role")):
        role = "edit" if kind == "ClusterRole" else "kueue-read"
        created(rbac.create_namespaced_role_binding, TEAM, {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": TEAM}]})
    _edit_rules_in_force(admin)
    wait_for(lambda: _workload_of(custom) is not None, "Kueue to make the run's Workload")
    doc = yaml.safe_load(Path(plain).read_text())
    doc["contexts"][0]["context"]["namespace"] = TEAM
    scoped = tmp_path_factory.mktemp("namespace-only") / "scoped.kubeconfig"
    scoped.write_text(yaml.safe_dump(doc))
    scoped.chmod(0o600)
    return str(scoped), plain


def _edit_rules_in_force(admin) -> None:
    """`edit` is an aggregated ClusterRole (its reads come from `view`, itself aggregated) whose rules
    kube-controller-manager fills in; tier 1 runs no controller manager, so fill them in here as
    that controller would."""
    rbac = k8s.RbacAuthorizationV1Api(admin)
    roles = {role.metadata.name: role for role in rbac.list_cluster_role().items}

    def rules_of(role, seen: frozenset[str]) -> list:
        found = list(role.rules or [])
        for selector in (role.aggregation_rule.cluster_role_selectors or ()) if role.aggregation_rule else ():
            wanted = selector.match_labels or {}
            for other in roles.values():
                labels = other.metadata.labels or {}
                if other.metadata.name not in seen and all(labels.get(k) == v for k, v in wanted.items()):
                    found += rules_of(other, seen | {other.metadata.name})
        return found

    edit = roles["edit"]
    rules = rules_of(edit, frozenset({"edit"}))
    assert any("jobs" in (r.resources or []) and "list" in (r.verbs or []) for r in rules), "edit cannot list Jobs"
    rbac.patch_cluster_role("edit", {"rules": [admin.sanitize_for_serialization(r) for r in rules]})


def _workload_of(custom):
    items = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", TEAM, "workloads")["items"]
    return items[0] if items else None


@asynccontextmanager
async def app_with(kubeconfig: str, monkeypatch, tmp_path) -> AsyncIterator[tuple[TauApp, Any]]:
    """The app as `tau-tui` starts it: no backend given, so it connects through KUBECONFIG."""
    monkeypatch.setenv("KUBECONFIG", kubeconfig)
    app = TauApp(None, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"), start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        yield app, pilot


def notices(app) -> list[str]:
    """The namespace notices the app gave."""
    return list(getattr(getattr(app, "scope_notice", None), "given", ()))


def test_cli_without_n_works_in_the_context_namespace(kubeconfigs, monkeypatch, capsys):
    scoped, _ = kubeconfigs
    monkeypatch.setenv("KUBECONFIG", scoped)
    assert main(["runs", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["namespace"] == TEAM, (doc, err)
    assert [r["name"] for r in doc["runs"]] == [RUN]
    assert main(["status", RUN, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["namespace"] == TEAM


def test_the_app_reader_starts_in_the_context_namespace(kubeconfigs, monkeypatch):
    scoped, _ = kubeconfigs
    monkeypatch.setenv("KUBECONFIG", scoped)
    backend = connect_kubeconfig_backend(None, None)
    try:
        assert backend.namespace == TEAM
        assert backend.cache.wait_for(lambda: backend.view_state(ResourceKind.WORKLOAD).status is ViewStatus.READY
                                      and backend.view_state(ResourceKind.JOB).status is ViewStatus.READY, BOUND)
        assert backend.connection_state().status is ConnectionStatus.CONNECTED
        assert [j.name for j in backend.list(ResourceKind.JOB)] == [RUN]
        assert [w.namespace for w in backend.list(ResourceKind.WORKLOAD)] == [TEAM]
        assert backend.view_state(ResourceKind.LOCAL_QUEUE).status is ViewStatus.READY
        # cluster-wide kinds stay "no access" without the fix being asked for: -n does not help there
        assert backend.view_state(ResourceKind.CLUSTER_QUEUE).status is ViewStatus.FORBIDDEN
        assert "-n NS" not in backend.view_state(ResourceKind.CLUSTER_QUEUE).message
    finally:
        backend.close()


@async_test
async def test_the_app_starts_in_the_context_namespace_and_shows_the_run(kubeconfigs, monkeypatch, tmp_path):
    async with app_with(kubeconfigs[0], monkeypatch, tmp_path) as (app, pilot):
        await wait_until(pilot, lambda: app.backend is not None and app.backend.namespace == TEAM, BOUND, "the backend")
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await wait_until(pilot, lambda: len(table.keys) == 1 and table.keys != [NOTICE_KEY], BOUND, "the run's Workload row")
        header = app.screen.query_one("#header")
        await wait_until(pilot, lambda: f"ns {TEAM}" in str(header.render()) and "● connected" in str(header.render()),
                         BOUND, "the header to say the namespace and connected")
        assert notices(app) == []  # nothing to advise: it works


def test_cli_without_a_context_namespace_names_the_fix(kubeconfigs, monkeypatch, capsys):
    _, plain = kubeconfigs
    monkeypatch.setenv("KUBECONFIG", plain)
    assert main(["runs"]) == 1
    err = capsys.readouterr().err
    assert "(all namespaces)" in err and "-n NS" in err and ":ns NS" in err, err
    assert "Traceback" not in err
    assert main(["runs", "-n", TEAM, "-o", "json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["runs"]] == [RUN]


@async_test
async def test_the_app_without_a_context_namespace_says_once_which_namespace_to_choose(kubeconfigs, monkeypatch, tmp_path):
    async with app_with(kubeconfigs[1], monkeypatch, tmp_path) as (app, pilot):
        table = app.screen.query_one("#workloads-table", KeyedTable)
        await wait_until(pilot, lambda: table.keys == [NOTICE_KEY], BOUND, "the workloads table's notice")
        assert "-n NS" in table.cells_of(NOTICE_KEY)[0].plain, table.cells_of(NOTICE_KEY)[0].plain
        await wait_until(pilot, lambda: bool(notices(app)), BOUND, "the namespace notice")
        said = notices(app)
        assert len(said) == 1, said
        assert "in all namespaces is forbidden" in said[0] and "-n NS" in said[0] and ":ns NS" in said[0], said
        assert said[0].endswith(f"Namespaces you can read: {TEAM}."), said  # the ServiceAccount's own, checked
        header = str(app.screen.query_one("#header").render())
        assert "stale since" not in header, header
        for _ in range(8):  # more ticks: still the one notice
            app.refresh_tick()
            await pilot.pause(0.1)
        assert len(notices(app)) == 1
        # the fix works: :ns team-a
        app.command_mode.set_namespace(TEAM)
        await wait_until(pilot, lambda: len(table.keys) == 1 and table.keys != [NOTICE_KEY], BOUND, "the row after :ns")
