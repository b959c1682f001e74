"""Issue 45 against a real kube-apiserver + Kueue (tier 1), through the CLI as a user runs it:
`profiles export` → `render --profiles` round trip and its fail-closed refusal; the primary
TauWorkspace discovered and its defaults applied by `submit` (never by `render`, a client dry-run);
`workspace check` exit codes; `status` with the run's place in line (Kueue's visibility API);
`runs --queue` / `--include-external`.

TauCluster/cluster is the cluster's singleton, shared with test_submit_t1.py: a test that changes its
status puts it back.  The workspaces live in their own system namespace (`--system-namespace`), so
no other module's `submit` picks up their defaults."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tau_tui.cli import main
from tau_tui.core.runconfig.profiles import GROUP, TAUCLUSTER_NAME, TAUCLUSTER_PLURAL, VERSION, taucluster_status
from tests.data.regen import build_catalog
from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

REPO = Path(__file__).resolve().parents[2]
SYSTEM_NS = "parity-system"
RUN_NS = "taugrid-default"
QUEUE_NS, LQ, CQ, FLAVOR = "parity-queue", "parity-lq", "parity-cq", "parity-flavor"


def _create(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ApiException as err:
        assert err.status == 409, err
        return None


@pytest.fixture(scope="module")
def plane(t1):
    api = k8s_config.new_client_from_config(config_file=t1.kubeconfig)
    for name in ("namespace", "workloadpriorityclasses", "resourceflavors", "clusterqueue", "localqueue"):
        create_from_file(api, REPO / "manifests" / "kueue" / f"{name}.yaml")
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    for ns in (SYSTEM_NS, QUEUE_NS):
        _create(core.create_namespace, {"metadata": {"name": ns}})
    _create(k8s.SchedulingV1Api(api).create_priority_class, {"metadata": {"name": "taugrid-default"}, "value": 1000})
    _create(custom.create_cluster_custom_object, GROUP, VERSION, TAUCLUSTER_PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TauCluster", "metadata": {"name": TAUCLUSTER_NAME}, "spec": {}})
    generation = custom.get_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME)["metadata"]["generation"]
    custom.patch_cluster_custom_object_status(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME,
                                              {"status": taucluster_status(generation, build_catalog(generation))})
    # A queue of one GPU, so two runs of two GPUs wait in line.
    kueue = ("kueue.x-k8s.io", "v1beta2")
    _create(custom.create_cluster_custom_object, *kueue, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}})
    _create(custom.create_cluster_custom_object, *kueue, "clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": CQ},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
            {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "4"}, {"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}]}})
    _create(custom.create_namespaced_custom_object, *kueue, QUEUE_NS, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": LQ, "namespace": QUEUE_NS},
        "spec": {"clusterQueue": CQ}})
    yield t1, api
    for ws in ("parity-primary", "parity-degraded"):
        try:
            custom.delete_namespaced_custom_object(GROUP, VERSION, SYSTEM_NS, "workspaces", ws)
        except ApiException:
            pass


@pytest.fixture
def cli_env(plane, tmp_path, monkeypatch):
    t1, _ = plane
    monkeypatch.setenv("KUBECONFIG", t1.kubeconfig)
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("TAU_TEAM", raising=False)
    (tmp_path / "train.py").write_text("print('hello')\n")
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _tau_cluster(api) -> dict:
    return k8s.CustomObjectsApi(api).get_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME)


def _put_status(api, status: dict) -> None:
    k8s.CustomObjectsApi(api).patch_cluster_custom_object_status(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME, {"status": status})


def write_config(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nimage: python:3.12-slim\nentrypoint: train.py\n" + textwrap.dedent(body))
    return path


# -- profiles export ----------------------------------------------------------------------------------

def test_profiles_export_round_trips_through_render(cli_env, capsys):
    config = write_config(cli_env, "export-round-trip", """\
        policy: {namespace: taugrid-default, team: research, lane: training, profile: azure.research.training.xl}
        """)
    snap = cli_env / "snap.yaml"
    code, _, err = run(capsys, "profiles", "export", "-o", str(snap))
    assert code == 0, err
    # The catalog's broken profile is exported as it is (Ready=False), and named.
    assert "azure.experimental.broken exported with Ready=False" in err
    document = yaml.safe_load(snap.read_text())
    assert document["kind"] == "TauWorkloadProfileSnapshot" and len(document["profiles"]) == len(build_catalog())
    live = run(capsys, "render", str(config))
    offline = run(capsys, "render", str(config), "--profiles", str(snap))
    assert live[0] == 0 and offline == live, (live[2], offline[2])
    assert "tau.azure.com/workload-profile-set-hash: " + document["profileSetHash"] in offline[1]


def test_profiles_export_refuses_a_stale_status_and_writes_nothing(plane, cli_env, capsys):
    _, api = plane
    before = _tau_cluster(api)["status"]
    stale = copy.deepcopy(before)
    stale["workloadProfiles"]["observedGeneration"] = before["workloadProfiles"]["observedGeneration"] - 1
    _put_status(api, stale)
    try:
        code, out, err = run(capsys, "profiles", "export", "-o", str(cli_env / "stale.yaml"))
    finally:
        _put_status(api, before)
    assert code == 1 and out == "" and not (cli_env / "stale.yaml").exists()
    assert "profiles export refused" in err and "the controller has not caught up" in err


# -- workspaces ---------------------------------------------------------------------------------------

def _workspace(api, name: str, *, primary: bool, phase: str, drift: bool = False, defaults: dict | None = None) -> None:
    custom = k8s.CustomObjectsApi(api)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": SYSTEM_NS,
                         "annotations": {"tau.azure.com/v0-primary-workspace": "true"} if primary else {}},
            "spec": {"authorization": {"mode": "cluster-wide"}, "target": {"namespace": RUN_NS}, "queue": "jobqueue",
                     "defaults": defaults or {}}}
    created = _create(custom.create_namespaced_custom_object, GROUP, VERSION, SYSTEM_NS, "workspaces", body) \
        or custom.get_namespaced_custom_object(GROUP, VERSION, SYSTEM_NS, "workspaces", name)
    conditions = [{"type": t, "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                  for t in ("RBACReady", "QueueReady")]
    if drift:
        conditions.append({"type": "DriftDetected", "status": "True", "reason": "RoleBindingEdited",
                           "message": "edited outside TauGrid", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, SYSTEM_NS, "workspaces", name, {"status": {
        "phase": phase, "observedGeneration": created["metadata"]["generation"], "target": {"resolvedNamespace": RUN_NS},
        "queue": {"localQueue": "jobqueue", "clusterQueue": "jobqueue"}, "conditions": conditions}})


def test_submit_applies_the_primary_workspaces_defaults_and_render_does_not(plane, cli_env, capsys):
    _, api = plane
    _workspace(api, "parity-primary", primary=True, phase="Ready",
               defaults={"outputRoot": "/data/runs", "ttlSecondsAfterFinished": 1200, "priority": "priority"})
    config = write_config(cli_env, "ws-defaults", """\
        policy: {team: research, lane: training, profile: azure.research.training.l}
        """)
    code, out, err = run(capsys, "submit", str(config), "--system-namespace", SYSTEM_NS)
    assert code == 0, err
    assert "workspace parity-primary (primary): namespace taugrid-default" in err
    job = k8s.BatchV1Api(api).read_namespaced_job("ws-defaults", RUN_NS)
    assert job.spec.ttl_seconds_after_finished == 1200
    assert job.metadata.labels["tau.azure.com/workspace"] == "parity-primary"
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert env["TAU_OUTPUT_DIR"] == "/data/runs/ws-defaults"
    # A client dry-run applies no workspace default (taugrid.md §2.3): the namespace is missing.
    code, out, err = run(capsys, "render", str(config))
    assert code == 2 and "policy.namespace: is not set" in err


def test_without_profiles_the_workspace_gives_the_queue_and_the_priority(plane, cli_env, capsys):
    _, api = plane
    _workspace(api, "parity-primary", primary=True, phase="Ready",
               defaults={"outputRoot": "/data/runs", "ttlSecondsAfterFinished": 1200, "priority": "priority"})
    before = _tau_cluster(api)
    _put_status(api, taucluster_status(before["metadata"]["generation"], []))
    config = write_config(cli_env, "ws-queue", "compute: {gpus: 0}\n")
    try:
        code, out, err = run(capsys, "submit", str(config), "--system-namespace", SYSTEM_NS, "--dry-run=server")
        explained = run(capsys, "explain-config", str(config), "--system-namespace", SYSTEM_NS, "-o", "json")
    finally:
        _put_status(api, before["status"])
    assert code == 0 and "Job ws-queue passes server dry-run" in out, err
    values = {v["key"]: v for v in yaml.safe_load(explained[1])["values"]}
    assert values["policy.queue"]["value"] == "jobqueue" and values["policy.queue"]["source"] == "workspace parity-primary"
    assert values["policy.priority_tier"] == {"key": "policy.priority_tier", "value": "priority", "source": "workspace parity-primary"}
    assert values["policy.namespace"]["source"] == "workspace parity-primary"


def test_workspace_check_exit_codes(plane, cli_env, capsys):
    _, api = plane
    _workspace(api, "parity-primary", primary=True, phase="Ready")
    _workspace(api, "parity-degraded", primary=False, phase="Degraded", drift=True)
    assert run(capsys, "workspace", "check", "--system-namespace", SYSTEM_NS)[0] == 0
    code, _, err = run(capsys, "workspace", "check", "parity-degraded", "--system-namespace", SYSTEM_NS)
    assert code == 3 and "DriftDetected=True" in err
    assert run(capsys, "workspace", "check", "no-such", "--system-namespace", SYSTEM_NS)[0] == 1
    # The spec changes: until the controller observes the new generation, Ready is not proven.
    k8s.CustomObjectsApi(api).patch_namespaced_custom_object(GROUP, VERSION, SYSTEM_NS, "workspaces", "parity-primary",
                                                             {"spec": {"defaults": {"ttlSecondsAfterFinished": 7200}}})
    code, _, err = run(capsys, "workspace", "check", "parity-primary", "--system-namespace", SYSTEM_NS)
    assert code == 3 and "status is stale" in err
    code, out, _ = run(capsys, "workspace", "list", "--system-namespace", SYSTEM_NS, "-o", "json")
    assert code == 0 and [w["name"] for w in yaml.safe_load(out)["workspaces"]] == ["parity-degraded", "parity-primary"]


# -- status position, runs filters --------------------------------------------------------------------

def _job(name: str, tau: bool) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": LQ, **({"tau.azure.com/managed-by": "tau"} if tau else {})}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": QUEUE_NS, "labels": labels},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "python:3.12-slim",
                "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}}}


def test_status_shows_the_place_in_line_and_runs_filters(plane, cli_env, capsys):
    _, api = plane
    batch = k8s.BatchV1Api(api)
    for name, tau in (("parity-first", True), ("parity-second", True), ("parity-hand-made", False)):
        _create(batch.create_namespaced_job, QUEUE_NS, _job(name, tau))
    custom = k8s.CustomObjectsApi(api)

    def pending() -> list:
        items = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", QUEUE_NS, "workloads")["items"]
        return [w for w in items if any(c["type"] == "QuotaReserved" and c["status"] == "False"
                                        for c in (w.get("status") or {}).get("conditions") or [])]

    wait_for(lambda: len(pending()) >= 2, "Kueue to admit one run and keep two waiting")
    waiting = {w["metadata"]["ownerReferences"][0]["name"] for w in pending()}
    name = "parity-second" if "parity-second" in waiting else sorted(waiting)[0]
    code, out, err = run(capsys, "status", name, "-n", QUEUE_NS)
    assert code == 0, err
    assert f"pending in LocalQueue {QUEUE_NS}/{LQ}" in out and "position #" in out
    assert "why pending: " in out and "insufficient unused quota" in out
    doc = yaml.safe_load(run(capsys, "status", name, "-n", QUEUE_NS, "-o", "json")[1])
    assert doc["status"]["queuePosition"]["estimated"] is False  # read from the visibility API
    code, out, _ = run(capsys, "runs", "-n", QUEUE_NS, "--queue", LQ, "-o", "json")
    assert {r["name"] for r in yaml.safe_load(out)["runs"]} == {"parity-first", "parity-second"}
    code, out, _ = run(capsys, "runs", "-n", QUEUE_NS, "--queue", LQ, "--include-external")
    assert "parity-hand-made" in out and "SOURCE" in out and "external" in out
