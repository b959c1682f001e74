"""A TauWorkspace's defaults in the pipeline (taugrid.md §4.2, §2.3): they fill only what the file
leaves unset (namespace, queue and priority without a profile, output root, a Job's TTL), the
workspace labels the run, a profile still decides the queue, and a client dry-run (no workspace in
the options) gets none of them.  On the real control plane: tests/integration/test_researcher_parity_t1.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import load_snapshot
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.runconfig.workspace import WorkspaceDefaults

DATA = Path(__file__).resolve().parents[1] / "data" / "profiles"
WORKSPACE = WorkspaceDefaults.from_object({
    "metadata": {"name": "research", "namespace": "tau-system", "generation": 1,
                 "annotations": {"tau.azure.com/v0-primary-workspace": "true"}},
    "spec": {"target": {"namespace": "research-ns"}, "queue": "research-lq",
             "defaults": {"priority": "priority", "outputRoot": "/data/runs/", "ttlSecondsAfterFinished": 1200}},
    "status": {"phase": "Ready", "observedGeneration": 1, "target": {"resolvedNamespace": "research-ns"},
               "queue": {"localQueue": "research-lq", "clusterQueue": "research-cq"}},
})


def loaded(tmp_path: Path, body: str):
    (tmp_path / "train.py").write_text("print(1)\n")
    path = tmp_path / "tau.yaml"
    path.write_text("name: wsrun\nimage: python:3.12-slim\nentrypoint: train.py\n" + textwrap.dedent(body))
    return load_config(path)


def job(run):
    return run.manifests[0]


def test_the_workspace_fills_what_the_file_leaves_unset(tmp_path):
    run = render_run(loaded(tmp_path, "compute: {gpus: 0}\n"), load_snapshot(DATA / "empty.yaml"), RenderOptions(workspace=WORKSPACE))
    obj = job(run)
    assert obj["metadata"]["namespace"] == "research-ns"
    labels = obj["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "research-lq"
    assert labels["kueue.x-k8s.io/priority-class"] == "taugrid-priority"
    assert labels["tau.azure.com/workspace"] == "research"
    assert obj["spec"]["ttlSecondsAfterFinished"] == 1200
    env = {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TAU_OUTPUT_DIR"] == "/data/runs/wsrun"
    assert run.resolution.provenance["policy.queue"] == "workspace research"


def test_the_file_wins_and_a_profile_still_decides_the_queue(tmp_path):
    config = loaded(tmp_path, """\
        run: {ttl_seconds_after_finished: 700}
        policy: {namespace: taugrid-default, lane: training, profile: azure.research.training.l}
        storage: {output: /data/mine, data_pvc: pvc1}
        """)
    obj = job(render_run(config, load_snapshot(DATA / "snapshot.yaml"), RenderOptions(workspace=WORKSPACE)))
    assert obj["metadata"]["namespace"] == "taugrid-default"
    assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "jobqueue"  # the profile's
    assert obj["spec"]["ttlSecondsAfterFinished"] == 700
    env = {e["name"]: e.get("value") for e in obj["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TAU_OUTPUT_DIR"] == "/data/mine"


def test_a_client_dry_run_gets_no_workspace_default(tmp_path):
    with pytest.raises(DiagnosticError) as err:
        render_run(loaded(tmp_path, "compute: {gpus: 0}\n"), load_snapshot(DATA / "empty.yaml"), RenderOptions())
    assert {d.path for d in err.value.diagnostics} == {"policy.namespace"}


def test_a_named_workspace_must_agree_with_policy_workspace(tmp_path):
    config = loaded(tmp_path, "compute: {gpus: 0}\npolicy: {workspace: other}\n")
    with pytest.raises(DiagnosticError) as err:
        render_run(config, load_snapshot(DATA / "empty.yaml"), RenderOptions(workspace=WORKSPACE))
    assert any(d.path == "policy.workspace" for d in err.value.diagnostics)


def test_elastic_without_a_profile_is_refused(tmp_path):
    config = loaded(tmp_path, "compute: {gpus: 0}\npolicy: {namespace: ns1, queue: q1, mode: elastic}\n")
    with pytest.raises(DiagnosticError) as err:
        render_run(config, load_snapshot(DATA / "empty.yaml"), RenderOptions())
    assert [d.path for d in err.value.diagnostics] == ["policy.mode"]
