"""The dependency matrix fails closed: a cell the tool cannot
establish is ``? unknown`` naming what it could not read, and every column the seed's
"Worker dependency and security contract" lists that the API can show (versions by
minor from what the servers serve, images and their pull secrets, dataset and
checkpoint PVCs, topology, network) makes setup end not verified when a worker
lacks it.  Runs on the simulated fleet (tests/multikueue_lab.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.operations.multikueue_steps.access import CRD, PVC, SECRET
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tau_tui.core.operations.multikueue_steps.matrix import _compare, dependency_matrix
from tests import builders
from tests.multikueue_lab import YES, Lab, make_lab

R = ResourceKind
# Spelt out here (not imported) so this file also runs against code that lacks them.
NETWORK_POLICY = ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True)
TOPOLOGY = ResourceType("kueue.x-k8s.io", "v1beta2", "topologies", "Topology", False)
DEPLOYMENT = ResourceType("apps", "v1", "deployments", "Deployment", True)
NS = "team-nlp"
#: What `storage.data_pvc: blob-training` in a tau.yaml renders to (the golden render test's output).
DATA_PVC_RENDER = Path(__file__).resolve().parents[1] / "data" / "configs" / "valid-data-pvc" / "expected.yaml"


def setup_outcome(lab: Lab) -> Outcome:
    return lab.exercise("setup").run(YES, timeout=30)


def matrix(lab: Lab) -> dict[str, dict[str, Any]]:
    """Each worker's cells by column, and whether the matrix step verifies (``verified``) and its reason."""
    exercise = lab.exercise("setup", record=False)
    rows = {row.worker: dict(row.cells) for row in dependency_matrix(exercise.ctx)}
    [status] = [s for s in exercise.survey() if s.step.key == "matrix"]
    for cells in rows.values():
        cells["verified"] = status.state is StepState.VERIFIED
        cells["reason"] = status.check.reason
    return rows


def on_all(lab: Lab, rt: ResourceType, obj: dict[str, Any], *, manager: bool = True) -> None:
    """Put ``obj`` on the manager (unless told not to) and on every worker."""
    worlds = [lab.world] if manager else []
    for world in [*worlds, *lab.fleet.workers.values()]:
        world.store.put(rt, copy.deepcopy(obj))


def recent_run(lab: Lab, rt: ResourceType, obj: dict[str, Any]) -> None:
    """A finished run of a tenant on the manager (not queued: it only says what the runs use)."""
    obj = copy.deepcopy(obj)
    obj["metadata"] = {"name": obj["metadata"]["name"], "namespace": NS}
    obj["status"] = {"succeeded": 1} if rt.kind == "Job" else {"jobStatus": "SUCCEEDED"}
    lab.world.store.put(rt, obj)


def job(name: str, **pod_spec: Any) -> dict[str, Any]:
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "nlpregistry.azurecr.io/nlp/train:2.0"}], **pod_spec}
    return builders.job(name, suspend=True, pod_spec=spec)


# -- versions ----------------------------------------------------------------------------------


def test_compare_of_unlabelled_crds_is_unknown_never_a_match():
    """Today's code compared "served …" strings whose minor() is None on both sides: ✓."""
    for mine, theirs in (("served v1beta1,v1beta2", "served v1beta2"), ("served v1beta2", "served v1beta2")):
        cell = _compare("Kueue", mine, theirs)
        assert cell.status == "unknown" and cell.mark == "?", cell
        assert "not a version" in cell.text
    assert _compare("Kueue", "v0.17.0", "v0.17.3").status == "ok"
    assert _compare("Kueue", "v0.17.0", "v0.16.3").mark == "✗"


def test_the_lab_verifies_with_every_new_column_proven(lab):
    assert setup_outcome(lab) is Outcome.VERIFIED
    rows = matrix(lab)
    for worker, cells in rows.items():
        assert cells["verified"], worker
        assert str(cells["Kueue"]) == "✓ v0.17.0" and str(cells["KubeRay"]) == "✓ v1.4.2"
        assert cells["Workload CRDs"].text == "same served & storage"
        assert "ghcr.io/azure/tau-train:1.4.2" in cells["Images"].text and "team-nlp/acr-pull present" in cells["Images"].text
        assert cells["Network"].status == "ok" and "team-nlp/tenant-isolation" in cells["Network"].text
        assert cells["Topology"].status == "ok" and cells["Dataset/checkpoint"].status == "ok"


def _unlabel(world, crd: str) -> None:
    world.store.update(CRD, crd, None, lambda o: o["metadata"]["labels"].pop("app.kubernetes.io/version"))


@pytest.mark.parametrize("crd, column", [("workloads.kueue.x-k8s.io", "Kueue"), ("rayjobs.ray.io", "KubeRay")])
def test_a_release_without_a_version_label_on_both_sides_is_unknown(lab, crd, column):
    for world in [lab.world, *lab.fleet.workers.values()]:
        _unlabel(world, crd)
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    assert not cells["verified"]
    assert cells[column].mark == "?" and f"no app.kubernetes.io/version label on {crd}" in cells[column].text
    assert f"lab-worker-1 {column}: ? unknown" in cells["reason"]


def test_a_release_without_a_label_on_the_worker_only_is_unknown_not_out_of_contract(lab):
    _unlabel(lab.fleet.workers["lab-worker-2"], "workloads.kueue.x-k8s.io")
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    rows = matrix(lab)
    assert rows["lab-worker-1"]["Kueue"].status == "ok"
    kueue = rows["lab-worker-2"]["Kueue"]
    assert kueue.status == "unknown" and "release on the worker" in kueue.text and not rows["lab-worker-2"]["verified"]


def test_without_labels_the_kueue_controller_image_tag_establishes_the_release(lab):
    """The kustomize manifests label no CRD with a version; the controller Deployment's image tag tells it."""
    def controller(tag: str) -> dict[str, Any]:
        return {"metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system",
                             "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "kube-rbac-proxy", "image": "gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0"},
                    {"name": "manager", "image": f"registry.k8s.io/kueue/kueue:{tag}"}]}}}}
    for world in [lab.world, *lab.fleet.workers.values()]:
        _unlabel(world, "workloads.kueue.x-k8s.io")
        world.store.put(DEPLOYMENT, controller("v0.17.2"))
    lab.fleet.workers["lab-worker-2"].store.put(DEPLOYMENT, controller("v0.16.4"))
    rows = matrix(lab)
    assert str(rows["lab-worker-1"]["Kueue"]) == "✓ v0.17.2"
    assert rows["lab-worker-2"]["Kueue"].mark == "✗" and "v0.16.4 vs manager v0.17.2" in rows["lab-worker-2"]["Kueue"].text
    assert not rows["lab-worker-2"]["verified"]


def test_a_server_without_version_information_is_unknown(lab):
    """kube-apiserver built without ldflags reports v0.0.0-master…: its minor proves nothing."""
    for world in [lab.world, *lab.fleet.workers.values()]:
        world.settings.kubernetes_version = "v0.0.0-master+$Format:%H$"
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    assert cells["Kubernetes"].status == "unknown" and "/version" in cells["Kubernetes"].text


def _versions(world, crd: str, versions: list[dict[str, Any]]) -> None:
    world.store.update(CRD, crd, None, lambda o: o["spec"].__setitem__("versions", versions))


def test_workload_crds_that_serve_other_versions_are_out_of_contract(lab):
    _versions(lab.fleet.workers["lab-worker-2"], "workloads.kueue.x-k8s.io", [{"name": "v1beta2", "served": True, "storage": True}])
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    rows = matrix(lab)
    crds = rows["lab-worker-2"]["Workload CRDs"]
    assert crds.mark == "✗" and "workloads.kueue.x-k8s.io serves v1beta2 vs manager v1beta1,v1beta2" in crds.text
    assert rows["lab-worker-1"]["Workload CRDs"].status == "ok" and not rows["lab-worker-2"]["verified"]


def test_workload_crds_that_store_another_version_are_out_of_contract(lab):
    """Kueue v0.15 serves what v0.16 serves but stores v1beta1: the served set alone does not prove a match."""
    _versions(lab.fleet.workers["lab-worker-1"], "workloads.kueue.x-k8s.io",
              [{"name": "v1beta1", "served": True, "storage": True}, {"name": "v1beta2", "served": True, "storage": False}])
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    crds = matrix(lab)["lab-worker-1"]["Workload CRDs"]
    assert crds.mark == "✗" and "stores v1beta1 vs manager v1beta2" in crds.text


# -- what the tenants' runs need ---------------------------------------------------------------------


def test_a_pull_secret_a_run_uses_missing_on_a_worker_fails_the_images_column(lab):
    lab.world.store.put(SECRET, {"metadata": {"name": "nlp-registry", "namespace": NS}, "type": "kubernetes.io/dockerconfigjson",
                                 "data": {".dockerconfigjson": "e30="}})
    recent_run(lab, R.JOB.type, job("pretrain-7", imagePullSecrets=[{"name": "nlp-registry"}]))
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    assert not cells["verified"]
    images = cells["Images"]
    assert images.mark == "✗" and "pull secret team-nlp/nlp-registry (Job team-nlp/pretrain-7)" in images.text
    for world in lab.fleet.workers.values():
        world.store.put(SECRET, {"metadata": {"name": "nlp-registry", "namespace": NS}, "type": "kubernetes.io/dockerconfigjson",
                                 "data": {".dockerconfigjson": "e30="}})
    assert setup_outcome(lab) is Outcome.VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    assert cells["Images"].status == "ok" and "nlpregistry.azurecr.io/nlp/train:2.0" in cells["Images"].text
    assert cells["verified"]


def test_the_service_account_a_run_uses_missing_on_a_worker_fails_the_images_column(lab):
    recent_run(lab, R.JOB.type, job("tune-3", serviceAccountName="nlp-trainer"))
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    images = matrix(lab)["lab-worker-2"]["Images"]
    assert images.mark == "✗" and "ServiceAccount team-nlp/nlp-trainer (Job team-nlp/tune-3)" in images.text


def test_the_dataset_pvc_a_tau_yaml_names_missing_on_a_worker_fails(lab):
    """storage.data_pvc renders to the Job's volume claim; the worker must hold that PVC in the namespace.
    The manager runs no pods of a MultiKueue run, so it need not hold the PVC: only the runs name it."""
    [rendered] = [d for d in yaml.safe_load_all(DATA_PVC_RENDER.read_text()) if d and d.get("kind") == "Job"]
    recent_run(lab, R.JOB.type, rendered)
    name = rendered["metadata"]["name"]
    claim = {"metadata": {"name": "blob-training", "namespace": NS}, "spec": {"accessModes": ["ReadWriteMany"]}}
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    data = cells["Dataset/checkpoint"]
    assert data.mark == "✗" and f"team-nlp/blob-training (Job team-nlp/{name})" in data.text and not cells["verified"]
    on_all(lab, PVC, claim, manager=False)
    assert str(matrix(lab)["lab-worker-1"]["Dataset/checkpoint"]) == "✓ 1 present: team-nlp/blob-training"
    assert setup_outcome(lab) is Outcome.VERIFIED


def test_a_checkpoint_pvc_a_rayjob_worker_group_mounts_missing_on_a_worker_fails(lab):
    pod = {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.41.0"}],
           "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "nlp-checkpoints"}}]}
    recent_run(lab, R.RAY_JOB.type, {"metadata": {"name": "ray-sweep"}, "spec": {"rayClusterSpec": {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head", "image": "rayproject/ray:2.41.0"}]}}},
        "workerGroupSpecs": [{"groupName": "gpu", "template": {"spec": pod}}]}}})
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    data = matrix(lab)["lab-worker-2"]["Dataset/checkpoint"]
    assert data.mark == "✗" and "team-nlp/nlp-checkpoints (RayJob team-nlp/ray-sweep)" in data.text


# -- topology and network ---------------------------------------------------------------------------


def _topology(levels: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": "mk-lab-topology"}, "spec": {"levels": [{"nodeLabel": label} for label in levels]}}


def _name_topology(world) -> None:
    world.store.update(R.RESOURCE_FLAVOR.type, "mk-lab-gpu", None, lambda o: o["spec"].__setitem__("topologyName", "mk-lab-topology"))


LEVELS = ["tau.azure.com/rack", "kubernetes.io/hostname"]


def test_a_topology_the_flavor_names_missing_on_a_worker_fails(lab):
    lab.world.store.put(TOPOLOGY, _topology(LEVELS))
    _name_topology(lab.world)
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    rows = matrix(lab)
    topology = rows["lab-worker-1"]["Topology"]
    assert topology.mark == "✗" and "Topology mk-lab-topology missing on the worker" in topology.text
    assert "worker flavor mk-lab-gpu names topology none" in topology.text and not rows["lab-worker-1"]["verified"]
    on_all(lab, TOPOLOGY, _topology(LEVELS), manager=False)
    for world in lab.fleet.workers.values():
        _name_topology(world)
    assert str(matrix(lab)["lab-worker-1"]["Topology"]) == "✓ mk-lab-topology on flavor mk-lab-gpu"
    assert setup_outcome(lab) is Outcome.VERIFIED


def test_a_topology_with_other_levels_on_a_worker_fails(lab):
    lab.world.store.put(TOPOLOGY, _topology(LEVELS))
    _name_topology(lab.world)
    for world in lab.fleet.workers.values():
        world.store.put(TOPOLOGY, _topology(LEVELS[1:]))
        _name_topology(world)
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    topology = matrix(lab)["lab-worker-2"]["Topology"]
    assert topology.mark == "✗" and "levels" in topology.text


def test_a_network_policy_of_a_tenant_namespace_missing_on_a_worker_fails(lab):
    lab.world.store.put(NETWORK_POLICY, {"metadata": {"name": "allow-from-gateway", "namespace": NS},
                                         "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    rows = matrix(lab)
    network = rows["lab-worker-2"]["Network"]
    assert network.mark == "✗" and "team-nlp/allow-from-gateway" in network.text and not rows["lab-worker-2"]["verified"]


# -- what cannot be read ------------------------------------------------------------------------------


def test_cells_the_worker_credential_cannot_read_are_unknown_and_name_verb_and_resource(tmp_path):
    lab = make_lab(tmp_path, admin=False)
    assert setup_outcome(lab) is Outcome.NOT_VERIFIED
    cells = matrix(lab)["lab-worker-1"]
    assert str(cells["Network"]).startswith("? unknown: ") and "get networkpolicies.networking.k8s.io" in cells["Network"].text
    assert cells["Kueue"].status == "unknown" and "get customresourcedefinitions" in cells["Kueue"].text
    assert cells["Images"].status == "unknown" and not cells["verified"]


def test_an_unreachable_worker_is_unknown_in_every_column_that_reads_it(lab):
    assert setup_outcome(lab) is Outcome.VERIFIED
    lab.fleet.workers["lab-worker-2"].api_outage()
    rows = matrix(lab)
    for column in ("Kubernetes", "Kueue", "Workload CRDs", "Queue", "Images", "Network"):
        cell = rows["lab-worker-2"][column]
        assert cell.status == "unknown" and "unreachable" in cell.text, (column, cell)
    assert rows["lab-worker-1"]["Network"].status == "ok" and not rows["lab-worker-2"]["verified"]
