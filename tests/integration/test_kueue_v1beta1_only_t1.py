"""A server whose Kueue serves kueue.x-k8s.io/v1beta1 only (Kueue v0.14 or older) is refused at start
with one clear message naming what it serves and the minimum (#33, item 3), on a real kube-apiserver.

The plane is etcd + kube-apiserver with the default Kueue release's CRDs and no Kueue controller
(a version matrix cell that runs only the CRDs); each Kueue CRD is then rewritten to serve v1beta1
only, stored as v1beta1, as Kueue v0.14 installed them.  The command runs as a user runs it (a
process of its own); the app's backend start is the function the app's connect worker calls."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kubernetes import client as k8s

from tau_tui.startup.backends import (
    UNSUPPORTED_KUEUE_LABEL,
    UNSUPPORTED_KUEUE_TITLE,
    BackendUnavailable,
    connect_kubeconfig_backend,
)
from tests.harness.controlplane import KueueOptions
from tests.harness.fixtures import _single_plane
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

KUEUE_GROUP = "kueue.x-k8s.io"
REFUSAL = ("Kueue API kueue.x-k8s.io serves v1beta1 only (Kueue v0.14 or older); "
           "tau-tui needs v1beta2 (Kueue ≥ v0.15)")
EXIT_UNSUPPORTED_KUEUE = 7
BOUND = 120  # seconds: a hang guard for one command, far above a loaded machine's answer


def serve_v1beta1_only(api_client: k8s.ApiClient) -> None:
    """Every Kueue CRD serves and stores v1beta1 only (one without v1beta1 is removed, as v0.14 had none)."""
    ext = k8s.ApiextensionsV1Api(api_client)
    for item in ext.list_custom_resource_definition().items:
        if item.spec.group != KUEUE_GROUP:
            continue
        crd = api_client.sanitize_for_serialization(item)
        names = [v["name"] for v in crd["spec"]["versions"]]
        if "v1beta1" not in names:
            ext.delete_custom_resource_definition(crd["metadata"]["name"])
            continue
        for version in crd["spec"]["versions"]:
            version["served"] = version["storage"] = version["name"] == "v1beta1"
        crd["spec"]["conversion"] = {"strategy": "None"}  # no Kueue webhook to convert with
        crd.pop("status", None)
        ext.replace_custom_resource_definition(crd["metadata"]["name"], crd)


def served_versions(api_client: k8s.ApiClient) -> list[str]:
    """What discovery lists for the Kueue group (served versions only)."""
    groups = k8s.ApisApi(api_client).get_api_versions().groups
    return sorted(v.version for g in groups if g.name == KUEUE_GROUP for v in g.versions)


@pytest.fixture(scope="module")
def v1beta1_plane():
    """etcd + kube-apiserver (no Kueue controller) whose Kueue CRDs serve v1beta1 only."""
    planes = _single_plane("t1-kueue-v1beta1", ("etcd", "kube_apiserver"), kueue=KueueOptions(enabled=False))
    plane = next(planes)
    try:
        serve_v1beta1_only(plane.api_client())
        wait_for(lambda: served_versions(plane.api_client()) == ["v1beta1"], "discovery to list v1beta1 only")
        yield plane
    finally:
        planes.close()  # stops the plane and removes its state


def run_cli(plane, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=plane.kubeconfig, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-m", "tau_tui", *argv], capture_output=True, text=True, env=env,
                          timeout=BOUND, check=False)


@pytest.mark.parametrize("argv", [("runs", "-n", "default"), ("status", "train", "-n", "default")])
def test_commands_refuse_a_v1beta1_only_kueue_in_one_line(v1beta1_plane, argv):
    done = run_cli(v1beta1_plane, *argv)
    lines = done.stderr.splitlines()
    assert done.returncode == EXIT_UNSUPPORTED_KUEUE, done.stderr
    assert len(lines) == 1 and lines[0].startswith(f"tau-tui: {REFUSAL}"), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_submit_refuses_a_v1beta1_only_kueue_before_sending_anything(v1beta1_plane, tmp_path):
    (tmp_path / "train.py").write_text("print('hello')\n")
    config = tmp_path / "tau.yaml"
    config.write_text("name: refused\nimage: python:3.12-slim\nentrypoint: train.py\n"
                      "policy:\n  namespace: default\n  team: research\n  lane: training\n"
                      "  profile: azure.research.training.l\n")
    done = run_cli(v1beta1_plane, "submit", str(config), "--dry-run", "none")
    lines = done.stderr.splitlines()
    assert done.returncode == EXIT_UNSUPPORTED_KUEUE, done.stderr
    assert lines[-1].startswith(f"tau-tui: {REFUSAL}") and "Traceback" not in done.stderr, done.stderr
    jobs = k8s.BatchV1Api(v1beta1_plane.api_client()).list_namespaced_job("default").items
    assert [j.metadata.name for j in jobs] == []  # nothing was created


def test_multikueue_refuses_a_manager_whose_kueue_serves_v1beta1_only(v1beta1_plane, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("workers:\n- name: w1\n  context: w1\n  adminContext: w1-admin\nnamespaces: [default]\n"
                    "admissionCheck: mk\nconfig: mk\nclusterQueue: cq\nlocalQueue: lq\n"
                    "profile: azure.research.training.l\nflavor: gpu\ngpusPerWorker: 8\n")
    done = run_cli(v1beta1_plane, "multikueue", "status", "--plan", str(plan), "--kubeconfig", v1beta1_plane.kubeconfig)
    lines = done.stderr.splitlines()
    assert done.returncode == EXIT_UNSUPPORTED_KUEUE, done.stderr
    assert len(lines) == 1 and lines[0].startswith(f"tau-tui: {REFUSAL}"), done.stderr


def test_the_app_backend_start_refuses_a_v1beta1_only_kueue(v1beta1_plane, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", v1beta1_plane.kubeconfig)
    with pytest.raises(BackendUnavailable) as raised:
        connect_kubeconfig_backend(None, "default")
    err = raised.value
    assert err.message.startswith(REFUSAL)
    assert (err.title, err.label) == (UNSUPPORTED_KUEUE_TITLE, UNSUPPORTED_KUEUE_LABEL)


def test_the_server_still_answers_v1beta1_so_the_refusal_is_about_the_version(v1beta1_plane):
    """The oracle: the Kueue kinds exist on this server, in v1beta1 only (a v1beta2 list is 404)."""
    api = k8s.CustomObjectsApi(v1beta1_plane.api_client())
    assert api.list_namespaced_custom_object(KUEUE_GROUP, "v1beta1", "default", "workloads")["items"] == []
    with pytest.raises(k8s.ApiException) as raised:
        api.list_namespaced_custom_object(KUEUE_GROUP, "v1beta2", "default", "workloads")
    assert raised.value.status == 404
