"""manifests/rbac on a real API server (tier 2): each role bound to a ServiceAccount as
manifests/rbac/example-bindings.yaml binds it (the subjects swapped for the ServiceAccount, team-a for
this module's namespace), and tau-tui driven as that identity, through the CLI (a subprocess with the
ServiceAccount's kubeconfig) and the app (Textual's pilot).

- every request each user's work makes (recorded from tau-tui's own flows,
  tests/operations/test_rbac_roles.py) is allowed by the real authorizer (SubjectAccessReview), and
  the researcher's are refused in another team's namespace;
- the researcher lists, reads, follows the logs of and cancels (server dry-run) the team's run, sees
  it in the Runs and Queue panes; another team's runs and a cordon are refused naming verb and resource;
- on-call sees the nodes with their GPU health, cordons and uncordons a node, previews a drain; a
  cancel is refused naming verb and resource;
- the platform owner's MultiKueue pane reads the admission checks, `multikueue status` reads the
  manager without a refusal; the Nodes pane says which verb and resource it may not read.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tau_tui.app import TauApp
from tau_tui.commands.completion_names import names_of, scope_of
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.audit import AuditLog
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.keyed_table import NOTICE_KEY, KeyedTable
from tests.agent.harness_support import kwok_test_nodes
from tests.app.helpers import wait_until
from tests.contract import helpers as h
from tests.harness.kwok import FAKE_LOG_LINES
from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for
from tests.operations import test_rbac_roles as recorded

pytestmark = [pytest.mark.harness, pytest.mark.t2]

REPO = Path(__file__).resolve().parents[2]
RBAC = REPO / "manifests" / "rbac"
TEAM, OTHER, USERS = "rbac-team-a", "rbac-team-b", "rbac-users"
NODE = "rbac-gpu-0"
RUN, OTHER_RUN = "rbac-run", "rbac-other-run"
CHECK = "rbac-mk-check"
#: The example bindings' subjects, each played by a ServiceAccount here.
PLAYERS = {"team-a-researchers": (TEAM, "researcher"), "gpu-oncall": (USERS, "oncall"),
           "platform-owners": (USERS, "platform-owner")}
BOUND = 180  # seconds a wait may take before the test fails: a hang guard, not a speed


def created(call, *args, **kwargs) -> None:
    try:
        call(*args, **kwargs)
    except ApiException as err:
        assert err.status == 409, err


def bind_examples(admin: k8s.ApiClient) -> None:
    """manifests/rbac (kubectl apply -k's objects) and its example bindings with the players as subjects."""
    for name in ("researcher.yaml", "oncall.yaml", "platform-owner.yaml"):
        create_from_file(admin, RBAC / name)
    rbac = k8s.RbacAuthorizationV1Api(admin)
    for doc in yaml.safe_load_all((RBAC / "example-bindings.yaml").read_text()):
        namespace, name = PLAYERS[doc["subjects"][0]["name"]]
        doc["subjects"] = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        doc["metadata"]["name"] = f"rbac-test-{doc['metadata']['name']}"
        if doc["kind"] == "RoleBinding":
            doc["metadata"]["namespace"] = TEAM if doc["metadata"]["namespace"] == "team-a" else doc["metadata"]["namespace"]
            created(rbac.create_namespaced_role_binding, doc["metadata"]["namespace"], doc)
        else:
            created(rbac.create_cluster_role_binding, doc)


def kubeconfig(plane, tmp: Path, player: str) -> str:
    namespace, name = PLAYERS[player]
    doc = yaml.safe_load(Path(plane.kubeconfig_for_serviceaccount(namespace, name)).read_text())
    if player == "team-a-researchers":
        doc["contexts"][0]["context"]["namespace"] = TEAM  # as a team's kubeconfig names its namespace
    path = tmp / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def admin(t2):
    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def world(t2, admin, tmp_path_factory):
    """The roles bound, one running run in each team namespace on a KWOK GPU node, an admission check,
    the GPUNodeHealth CRD; the players' kubeconfigs."""
    tmp = tmp_path_factory.mktemp("rbac")
    core, custom = k8s.CoreV1Api(admin), k8s.CustomObjectsApi(admin)
    for namespace in (TEAM, OTHER, USERS):
        created(core.create_namespace, {"metadata": {"name": namespace}})
    create_from_file(admin, REPO / "manifests" / "agent" / "crd-gpunodehealth.yaml")
    kueue = ("kueue.x-k8s.io", "v1beta2")
    backend = KubernetesBackend(kubeconfig=t2.kubeconfig)
    try:
        for namespace, run in ((TEAM, RUN), (OTHER, OTHER_RUN)):
            created(custom.create_cluster_custom_object, *kueue, "resourceflavors", h.flavor(f"rf-{namespace}"))
            created(custom.create_cluster_custom_object, *kueue, "clusterqueues",
                    h.cluster_queue(f"cq-{namespace}", f"rf-{namespace}", 8))
            created(custom.create_namespaced_custom_object, *kueue, namespace, "localqueues",
                    h.local_queue(namespace, "lq", f"cq-{namespace}"))
            results = backend.submit([h.job(namespace, run, "lq", gpus=1)])
            assert all(r.ok for r in results), [r.message for r in results]
        created(custom.create_cluster_custom_object, *kueue, "admissionchecks", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": CHECK},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "rbac-absent"}}})
    finally:
        backend.close()
    bind_examples(admin)
    with kwok_test_nodes(admin, [NODE]):
        def running():
            pods = [p for ns in (TEAM, OTHER) for p in core.list_namespaced_pod(ns).items if p.status.phase == "Running"]
            return pods if len(pods) == 2 else None

        wait_for(running, "both runs' pods Running", timeout=BOUND)
        yield {name: kubeconfig(t2, tmp, name) for name in PLAYERS} | {"tmp": tmp}
        for namespace, run in ((TEAM, RUN), (OTHER, OTHER_RUN)):
            try:
                k8s.BatchV1Api(admin).delete_namespaced_job(run, namespace, propagation_policy="Background")
            except ApiException:
                pass


def cli(config: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=config)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run([sys.executable, "-m", "tau_tui.cli", *args], capture_output=True, text=True, timeout=BOUND,
                          env=env)


def assert_refused(result: subprocess.CompletedProcess, verb: str, resource: str) -> None:
    """Refused with a message naming the verb and the resource, never a traceback."""
    assert result.returncode != 0, result.stdout
    text = result.stdout + result.stderr
    assert "Traceback" not in text, text
    assert f"no access: {verb} {resource}" in text, text


@asynccontextmanager
async def app_as(config: str, tmp: Path, monkeypatch, pane: str) -> AsyncIterator[tuple[TauApp, Any]]:
    """The app as `tau-tui` starts it with the player's kubeconfig (no backend given)."""
    monkeypatch.setenv("KUBECONFIG", config)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp / "config"))
    app = TauApp(None, settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp / "config.yaml"),
                 audit=AuditLog(tmp / "audit.jsonl"), start_pane=pane)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.backend is not None, BOUND, "the backend")
        yield app, pilot


def audit(tmp: Path) -> list[dict]:
    path = tmp / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def refused_pane(app: TauApp, pilot, key: str, table_id: str) -> str:
    """The pane behind ``key``, whose kind the player may not list: its table's one row says why."""
    await pilot.press(key)
    table = app.screen.query_one(table_id, KeyedTable)
    await wait_until(pilot, lambda: table.keys == [NOTICE_KEY], BOUND, f"the notice of {table_id}")
    return table.cells_of(NOTICE_KEY)[0].plain


async def refused_cordon(app: TauApp, pilot, tmp: Path) -> str:
    """Cordon NODE in the Nodes pane (c); the preview's server dry-run answer, from the audit log."""
    await pilot.press("6")
    table = app.screen.query_one("#nodes-table", KeyedTable)
    await wait_until(pilot, lambda: NODE in table.keys, BOUND, "the node in the Nodes pane")
    table.focus()
    table.move_cursor(row=table.keys.index(NODE))
    await pilot.press("c")
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), BOUND, "the cordon preview")
    await pilot.press("escape")
    previews = [e for e in audit(tmp) if e.get("verb") == "cordon" and e.get("phase") == "preview"]
    assert previews and previews[-1]["ok"] is False, previews
    return previews[-1]["message"]


def _review(admin: k8s.ApiClient, player: str, call: recorded.Call, namespace: str | None) -> bool:
    ns, name = PLAYERS[player]
    resource, _, sub = call.resource.partition("/")
    attributes = {"verb": call.verb, "group": call.group, "resource": resource}
    if sub:
        attributes["subresource"] = sub
    if namespace:
        attributes["namespace"] = namespace
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{ns}:{name}", "resourceAttributes": attributes,
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]}}
    return bool(k8s.AuthorizationV1Api(admin).create_subject_access_review(body).status.allowed)


def test_the_api_server_allows_each_users_recorded_requests(world, admin, tmp_path, monkeypatch):
    for folder in ("r", "p"):
        (tmp_path / folder).mkdir()
    researcher = recorded.researcher_calls(tmp_path / "r", monkeypatch)
    oncall = recorded.oncall_calls(monkeypatch)
    owner = recorded.platform_owner_calls(tmp_path / "p", monkeypatch)
    where = {recorded.TEAM: TEAM, recorded.ALL: None}
    for player, calls in (("team-a-researchers", researcher), ("gpu-oncall", oncall), ("platform-owners", owner)):
        denied = [c for c in calls if not _review(admin, player, c, where.get(c.namespace, c.namespace))]
        assert not denied, (player, denied)
    # The researcher's namespaced requests stop at the team's namespace.
    elsewhere = [c for c in researcher if c.namespace == recorded.TEAM and _review(admin, "team-a-researchers", c, OTHER)]
    assert not elsewhere, elsewhere


def test_the_researcher_works_on_the_teams_run_through_the_cli(world, monkeypatch):
    config = world["team-a-researchers"]
    result = cli(config, "runs", "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["namespace"] == TEAM and [r["name"] for r in doc["runs"]] == [RUN]
    status = cli(config, "status", RUN, "-o", "json")
    assert status.returncode == 0 and json.loads(status.stdout)["metadata"]["name"] == RUN, status.stderr
    cancel = cli(config, "cancel", RUN, "--dry-run=server")
    assert cancel.returncode == 0 and "would be cancelled" in cancel.stdout, cancel.stdout + cancel.stderr
    # What completion offers for a run, read as the researcher (its time bound left out: a loaded machine).
    monkeypatch.setenv("KUBECONFIG", config)
    assert names_of("runs", scope_of(["status"])) == [RUN]
    # Another team's namespace: refused, the verb and resource named.
    assert_refused(cli(config, "runs", "-n", OTHER), "list", "jobs.batch")
    assert_refused(cli(config, "cancel", OTHER_RUN, "-n", OTHER), "list", "jobs.batch")


def test_the_researcher_follows_the_runs_logs(world, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", world["team-a-researchers"])
    backend = KubernetesBackend()
    try:
        stream = backend.open_logs(LogRequest(namespace=TEAM, job=RUN), spool_dir=str(tmp_path))
        try:
            assert stream.spool.wait_for_lines(len(FAKE_LOG_LINES), BOUND), stream.state
            assert stream.spool.lines() == FAKE_LOG_LINES
        finally:
            stream.close()
    finally:
        backend.close()


def test_the_researchers_panes_show_the_run_and_a_cordon_is_refused_by_name(world, tmp_path, monkeypatch):
    async def drive() -> str:
        async with app_as(world["team-a-researchers"], tmp_path, monkeypatch, "runs") as (app, pilot):
            runs = app.screen.query_one("#runs-table", KeyedTable)
            await wait_until(pilot, lambda: f"{TEAM}/{RUN}" in runs.keys, BOUND, "the run in the Runs pane")
            assert runs.keys == [f"{TEAM}/{RUN}"]
            await pilot.press("3")
            workloads = app.screen.query_one("#workloads-table", KeyedTable)
            await wait_until(pilot, lambda: any(RUN in key for key in workloads.keys), BOUND, "its Workload in the Queue pane")
            assert app.backend.view_state(ResourceKind.CLUSTER_QUEUE).status is ViewStatus.READY
            return await refused_cordon(app, pilot, tmp_path)

    message = asyncio.run(drive())
    assert "no access: patch nodes" in message, message


def test_on_call_cordons_uncordons_and_previews_a_drain(world, admin, tmp_path, monkeypatch):
    core = k8s.CoreV1Api(admin)

    async def drive() -> None:
        async with app_as(world["gpu-oncall"], tmp_path, monkeypatch, "nodes") as (app, pilot):
            table = app.screen.query_one("#nodes-table", KeyedTable)
            await wait_until(pilot, lambda: NODE in table.keys, BOUND, "the node in the Nodes pane")
            assert app.backend.view_state(ResourceKind.GPU_HEALTH).status is ViewStatus.READY
            assert app.backend.view_state(ResourceKind.POD).status is ViewStatus.READY
            for key, unschedulable in (("c", True), ("u", None)):
                table.focus()
                table.move_cursor(row=table.keys.index(NODE))
                await pilot.press(key)
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), BOUND, "the confirmation")
                if key == "u":  # no agent reports NODE's GPUs: asked on its own first, then the preview
                    warning = app.screen
                    assert "not known to be healthy" in warning.title_text, warning.title_text
                    await pilot.press("y")
                    await wait_until(pilot, lambda warning=warning: isinstance(app.screen, ConfirmDialog)
                                     and app.screen is not warning, BOUND, "the uncordon's preview")
                await pilot.press("y")
                await wait_until(pilot, lambda unschedulable=unschedulable: core.read_node(NODE).spec.unschedulable
                                 is unschedulable, BOUND, f"the node's unschedulable {unschedulable}")
            plan = app.backend.drain(NODE, dry_run=True)
            assert plan.ok, plan

    asyncio.run(drive())
    outcomes = [e for e in audit(tmp_path) if e.get("phase") == "outcome"]
    assert [(e["verb"], e["ok"]) for e in outcomes] == [("cordon", True), ("uncordon", True)], outcomes
    assert_refused(cli(world["gpu-oncall"], "cancel", RUN, "-n", TEAM), "delete", "jobs.batch")


def test_the_platform_owner_reads_multikueue_and_the_nodes_are_refused_by_name(world, tmp_path, monkeypatch):
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"workers:\n  - {{name: rbac-worker, context: rbac-worker}}\nnamespaces: [{TEAM}]\n"
                    "admissionCheck: rbac-mk\nconfig: rbac-mk\nclusterQueue: rbac-mk-cq\nlocalQueue: rbac-mk\n")
    status = cli(world["platform-owners"], "multikueue", "status", "--plan", str(plan), "--flow", "setup")
    text = status.stdout + status.stderr
    assert "Traceback" not in text and "no access:" not in text, text
    assert "1." in status.stdout, text  # the steps are reported

    async def drive() -> str:
        async with app_as(world["platform-owners"], tmp_path, monkeypatch, "multikueue") as (app, pilot):
            checks = app.screen.query_one("#mk-checks", KeyedTable)
            await wait_until(pilot, lambda: any(CHECK in key for key in checks.keys), BOUND, "the admission check")
            for kind in (ResourceKind.MULTIKUEUE_CLUSTER, ResourceKind.MULTIKUEUE_CONFIG, ResourceKind.WORKLOAD):
                assert app.backend.view_state(kind).status is ViewStatus.READY, kind
            return await refused_pane(app, pilot, "6", "#nodes-table")

    message = asyncio.run(drive())
    assert "no access: list nodes" in message, message
