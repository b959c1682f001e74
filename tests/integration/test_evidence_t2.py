"""Evidence of a run that really ran (tier 2: kube-scheduler, Job controller, KWOK): the bundle
exported by `tau-tui evidence export` verifies, and an edited file in it fails and is named."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
import yaml
from kubernetes import client as k8s

from tau_tui.cli import main
from tau_tui.core.operations.evidence.store import EvidenceStore
from tests.harness.kwok import FAKE_LOG_LINES
from tests.integration.test_harness_t2 import NAMESPACE, api, wait_for  # noqa: F401  (api: the Kueue setup fixture)

pytestmark = [pytest.mark.harness, pytest.mark.t2]

RUN = "evidence-run"
SUBMISSION_ID = "evidence-t2-0001"
CHECKPOINT = "/data/checkpoints/evidence-run"


@pytest.fixture(scope="module")
def finished_run(api):  # noqa: F811  (the fixture imported above)
    """A Tau-labelled Job through Kueue that runs on a KWOK node and completes (CPU only, so the
    GPUs other t2 tests hold do not matter)."""
    batch = k8s.BatchV1Api(api)
    batch.create_namespaced_job(NAMESPACE, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": RUN,
                     "labels": {"kueue.x-k8s.io/queue-name": "jobqueue", "tau.azure.com/managed-by": "tau",
                                "tau.azure.com/submission-id": SUBMISSION_ID},
                     "annotations": {"tau.azure.com/config-hash": "c0ffee" * 10 + "c0ff"}},
        "spec": {"suspend": True, "template": {
            "metadata": {"labels": {"tau.azure.com/submission-id": SUBMISSION_ID}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "registry.invalid/tau/trainer:1",
                "env": [{"name": "TAU_RESUME_FROM", "value": CHECKPOINT}, {"name": "HF_TOKEN", "value": "hf_do_not_keep"}],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
    })

    def complete():
        job = batch.read_namespaced_job(RUN, NAMESPACE)
        return any(c.type == "Complete" and c.status == "True" for c in (job.status.conditions or []))

    wait_for(complete, f"Job {RUN} Complete", timeout=120)
    return api


def members(bundle) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_bundle_of_a_real_run_verifies_and_an_edited_file_is_named(t2, finished_run, tmp_path, monkeypatch, capsys,
                                                                   memory_keyring):
    monkeypatch.setenv("KUBECONFIG", t2.kubeconfig)
    bundle = tmp_path / "evidence.tar.gz"
    assert main(["evidence", "export", RUN, "-n", NAMESPACE, "-o", str(bundle)]) == 0, capsys.readouterr().err
    capsys.readouterr()

    assert main(["evidence", "verify", str(bundle)]) == 0  # the user's key in an (in-memory) OS keyring
    out = capsys.readouterr().out
    assert "OK: 6 files match the manifest" in out and f"run {NAMESPACE}/{RUN}, succeeded" in out
    kube_system = k8s.CoreV1Api(finished_run).read_namespace("kube-system").metadata.uid
    assert f"of the cluster at {t2.server} (kube-system uid {kube_system})" in out  # the cluster it is evidence of

    files = members(bundle)
    record = json.loads(files["record.json"])
    assert record["outcome"] == "succeeded" and record["run"]["submissionId"] == SUBMISSION_ID
    assert record["configHash"] == "c0ffee" * 10 + "c0ff" and record["checkpointPaths"] == [CHECKPOINT]
    assert record["nodes"] and set(record["nodes"]) <= set(t2.gpu_nodes)
    history = json.loads(files["workload-history.json"])
    assert {"QuotaReserved", "Admitted", "Finished"} <= {c["type"] for c in history[0]["conditions"]}
    assert history[0]["admittedAt"] and history[0]["queueWaitSeconds"] is not None
    assert FAKE_LOG_LINES[0] in files["logs/run.log"].decode()
    assert b"hf_do_not_keep" not in b"".join(files.values())
    assert yaml.safe_load(files["manifests.yaml"])["metadata"]["name"] == RUN
    assert json.loads(files["nodes.json"])[0]["name"] in t2.gpu_nodes

    # One record per run and submission: exporting again captures nothing new.
    assert main(["evidence", "export", RUN, "-n", NAMESPACE, "-o", str(tmp_path / "again.tar.gz")]) == 0
    assert len(EvidenceStore().records(NAMESPACE)) == 1
    capsys.readouterr()

    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for name, data in files.items():
            if name == "record.json":
                data = data.replace(b'"succeeded"', b'"failed"')
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert main(["evidence", "verify", str(tampered)]) == 1
    err = capsys.readouterr().err
    assert "FAILED: 1 file(s) do not match the manifest" in err and "edited: record.json" in err
