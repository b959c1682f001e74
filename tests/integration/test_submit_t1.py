"""`tau-tui submit` against a real kube-apiserver + Kueue (tier 1): server dry-run, create,
idempotent re-submit, and the API server's refusals turned into plain messages."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tau_tui.cli import main
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.runconfig.profiles import GROUP, TAUCLUSTER_NAME, TAUCLUSTER_PLURAL, VERSION, taucluster_status
from tests.data.cases import CASES_DIR
from tests.data.regen import build_catalog
from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t1]

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "taugrid-default"
SUBMISSION = "tau.azure.com/submission-id"




@pytest.fixture(scope="module")
def cluster(t1):
    """The example Kueue setup plus a reconciled TauCluster/cluster whose profiles match it."""
    api_client = k8s_config.new_client_from_config(config_file=t1.kubeconfig)
    for name in ("namespace", "workloadpriorityclasses", "resourceflavors", "clusterqueue", "localqueue"):
        create_from_file(api_client, REPO / "manifests" / "kueue" / f"{name}.yaml")
    core = k8s.CoreV1Api(api_client)
    for ns in ("ray", "submit-rbac"):
        try:
            core.create_namespace({"metadata": {"name": ns}})
        except ApiException as err:
            assert err.status == 409
    try:
        k8s.SchedulingV1Api(api_client).create_priority_class({"metadata": {"name": "taugrid-default"}, "value": 1000})
    except ApiException as err:
        assert err.status == 409
    custom = k8s.CustomObjectsApi(api_client)
    try:
        created = custom.create_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "TauCluster", "metadata": {"name": TAUCLUSTER_NAME}, "spec": {},
        })
    except ApiException as err:
        assert err.status == 409
        created = custom.get_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME)
    generation = created["metadata"]["generation"]
    custom.patch_cluster_custom_object_status(
        GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME, {"status": taucluster_status(generation, build_catalog(generation))}
    )
    return t1, api_client


@pytest.fixture
def run_dir(tmp_path, cluster, monkeypatch):
    plane, _ = cluster
    monkeypatch.setenv("KUBECONFIG", plane.kubeconfig)
    (tmp_path / "train.py").write_text("print('hello from tau')\n")
    return tmp_path


def write_config(folder: Path, name: str, extra: str = "", profile: str = "azure.research.training.l") -> Path:
    path = folder / "tau.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        image: python:3.12-slim
        entrypoint: train.py
        policy:
          namespace: {NAMESPACE}
          team: research
          lane: training
          profile: {profile}
        """) + extra)
    return path


def jobs_named(api_client, name: str) -> list:
    return k8s.BatchV1Api(api_client).list_namespaced_job(NAMESPACE, field_selector=f"metadata.name={name}").items


def test_taucluster_status_survives_the_crd_schema(cluster):
    """The CRD keeps every field the hash covers; otherwise the gate would close on a real cluster."""
    _, api_client = cluster
    from tau_tui.core.cluster.profile_reader import read_profile_set

    profile_set = read_profile_set(api_client)
    assert profile_set.gate_open, profile_set.gate_problems
    assert len(profile_set.profiles) == len(build_catalog())


def test_server_dry_run_creates_nothing(run_dir, cluster, capsys):
    _, api_client = cluster
    config = write_config(run_dir, "dry-run-only")
    assert main(["submit", str(config), "--dry-run=server"]) == 0
    out, err = capsys.readouterr()
    assert "Job dry-run-only passes server dry-run" in out, err
    assert jobs_named(api_client, "dry-run-only") == []


def test_submit_is_admitted_and_resubmit_creates_no_duplicate(run_dir, cluster, capsys):
    _, api_client = cluster
    config = write_config(run_dir, "submitted-once")
    assert main(["submit", str(config)]) == 0
    out, _ = capsys.readouterr()
    assert "Job submitted-once created" in out
    job = jobs_named(api_client, "submitted-once")[0]
    assert job.metadata.labels["kueue.x-k8s.io/queue-name"] == "jobqueue"
    assert job.metadata.annotations["tau.azure.com/workload-profile"] == "azure.research.training.l"
    # Kueue admits it (16 GPUs of quota) and flips suspend.
    wait_for(lambda: jobs_named(api_client, "submitted-once")[0].spec.suspend is False, "Kueue to admit and unsuspend the Job")

    assert main(["submit", str(config)]) == 0
    out, _ = capsys.readouterr()
    assert "already submitted (same tau.azure.com/submission-id); nothing new created" in out
    submission_id = job.metadata.labels[SUBMISSION]
    same = k8s.BatchV1Api(api_client).list_namespaced_job(NAMESPACE, label_selector=f"{SUBMISSION}={submission_id}").items
    assert len(same) == 1
    # The submit kept the tau.yaml for the run's evidence record (the cluster keeps no copy).
    kept = EvidenceStore().submission(NAMESPACE, "submitted-once", submission_id)
    assert kept is not None and kept.source == "cli" and "name: submitted-once" in (kept.tau_yaml or "")
    assert kept.config_hash == job.metadata.annotations["tau.azure.com/config-hash"]


def test_changed_file_with_the_same_name_is_refused(run_dir, cluster, capsys):
    config = write_config(run_dir, "renamed-later")
    assert main(["submit", str(config)]) == 0
    capsys.readouterr()
    write_config(run_dir, "renamed-later", extra="runtime:\n  env:\n    CHANGED: \"1\"\n")
    assert main(["submit", str(config)]) == 1
    _, err = capsys.readouterr()
    assert "jobs.batch/renamed-later already exists in ns taugrid-default from a different submission" in err
    assert "Rename the run" in err


def test_inapplicable_profile_is_refused_before_the_server_is_asked(run_dir, cluster, capsys):
    config = run_dir / "tau.yaml"
    config.write_text("name: nowhere\nimage: busybox:1.36\ncompute:\n  gpus: 0\npolicy:\n  namespace: does-not-exist\n  profile: azure.research.training.l\n  team: research\n  lane: training\n")
    assert main(["submit", str(config), "--dry-run=server"]) == 2
    _, err = capsys.readouterr()
    # The profile is limited to taugrid-default, so the core refuses before the server is asked.
    assert "not applicable to namespace does-not-exist" in err and "Traceback" not in err


def test_forbidden_reads_and_writes_name_resource_and_verb(run_dir, cluster, capsys, monkeypatch):
    plane, api_client = cluster
    config = write_config(run_dir, "forbidden-run")
    monkeypatch.setenv("KUBECONFIG", plane.kubeconfig_for_serviceaccount("submit-rbac", "no-rights"))
    assert main(["submit", str(config), "--dry-run=server"]) == 1
    _, err = capsys.readouterr()
    assert "access forbidden reading TauCluster/cluster: ask for `get` on clusters.tau.azure.com" in err

    rbac = k8s.RbacAuthorizationV1Api(api_client)
    rbac.create_cluster_role({"metadata": {"name": "tau-profile-reader"}, "rules": [
        {"apiGroups": [GROUP], "resources": [TAUCLUSTER_PLURAL], "verbs": ["get"]},
    ]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": "tau-profile-reader-read-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tau-profile-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "read-only", "namespace": "submit-rbac"}],
    })
    monkeypatch.setenv("KUBECONFIG", plane.kubeconfig_for_serviceaccount("submit-rbac", "read-only"))
    assert main(["submit", str(config)]) == 1
    _, err = capsys.readouterr()
    assert "no access: create jobs.batch in ns taugrid-default" in err
    assert "Traceback" not in err


def test_admission_denial_is_explained(run_dir, cluster, capsys):
    _, api_client = cluster
    admission = k8s.AdmissionregistrationV1Api(api_client)
    admission.create_validating_admission_policy({
        "metadata": {"name": "tau-block-team"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}]},
            "validations": [{"expression": "object.metadata.?labels[?'tau.azure.com/team'].orValue('') != 'blocked'", "message": "team blocked is frozen"}],
        },
    })
    admission.create_validating_admission_policy_binding({
        "metadata": {"name": "tau-block-team"},
        "spec": {"policyName": "tau-block-team", "validationActions": ["Deny"]},
    })
    config = write_config(run_dir, "blocked-team")
    config.write_text(config.read_text().replace("team: research", "team: blocked").replace("profile: azure.research.training.l", "profile: azure.research.training.xl"))

    def denied():
        code = main(["submit", str(config), "--dry-run=server"])
        return code == 1 and "team blocked is frozen" in capsys.readouterr().err

    wait_for(denied, "the ValidatingAdmissionPolicy to take effect", timeout=30)
    main(["submit", str(config), "--dry-run=server"])
    _, err = capsys.readouterr()
    assert "rejected: create jobs.batch/blocked-team in ns taugrid-default was denied by validation or an admission webhook" in err


@pytest.mark.parametrize("case", sorted(p for p in CASES_DIR.iterdir() if (p / "expected.yaml").exists()), ids=lambda p: p.name)
def test_every_golden_manifest_passes_server_dry_run(cluster, case):
    """Strict field validation against the real Job, Service and RayJob schemas and Kueue's webhooks."""
    plane, _ = cluster
    manifests = [m for m in yaml.safe_load_all((case / "expected.yaml").read_text()) if m]
    assert {m["metadata"]["namespace"] for m in manifests} <= {NAMESPACE, "ray"}  # both exist on the cluster
    outcomes = KubernetesBackend(kubeconfig=plane.kubeconfig).submit(manifests, dry_run=True)
    assert [o.ok for o in outcomes] == [True] * len(manifests), [o.message for o in outcomes]
    assert not any(o.existing for o in outcomes)
