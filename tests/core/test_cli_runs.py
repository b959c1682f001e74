"""`tau-tui status` and `tau-tui runs` on the simulated backend (--demo): documents, formats,
exit codes, --watch and the diagnostics the phase engine gives."""

from __future__ import annotations

import json

import yaml

from tau_tui.cli import main
from tau_tui.core.operations.runstatus import PHASE_ORDER

#: One node, one queue of 8 GPUs: "blocker" holds them until 10 s after the start, so "first" is
#: queued at the start and runs after it; "second" waits behind "first" for an hour.
TINY = """\
name: tiny
seed: 3
start: "2025-03-04T02:00:00Z"
warmupSeconds: 40
namespaces: [default, team-a]
nodes:
  - {prefix: gpu-, count: 1, gpus: {nvidia.com/gpu: 8}, labels: {tau.azure.com/gpu-class: h100-80gb}}
objects:
  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: h100}, spec: {nodeLabels: {tau.azure.com/gpu-class: h100-80gb}}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {name: cq}
    spec:
      namespaceSelector: {}
      resourceGroups:
        - coveredResources: [cpu, memory, nvidia.com/gpu]
          flavors: [{name: h100, resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 512Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]}]
  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: q, namespace: team-a}, spec: {clusterQueue: cq}}
jobs:
  - {at: -35, kind: Job, name: blocker, namespace: team-a, queue: q, gpus: 8, durationSeconds: 45}
  - {at: -20, kind: Job, name: first, namespace: team-a, queue: q, gpus: 8, durationSeconds: 3600}
  - {at: -10, kind: Job, name: second, namespace: team-a, queue: q, gpus: 8, durationSeconds: 7200}
"""


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_runs_lists_every_run_with_its_state(capsys):
    code, doc, _ = run_json(capsys, "runs", "--demo", "-o", "json")
    assert code == 0
    assert doc["total"] == len(doc["runs"]) > 10
    by_name = {r["name"]: r for r in doc["runs"]}
    assert by_name["eval-mmlu-0301"]["state"] == "failed" and by_name["eval-mmlu-0301"]["status"] == "Failed"
    assert by_name["tokenizer-sweep"]["state"] == "succeeded" and by_name["tokenizer-sweep"]["status"] == "Complete"
    assert by_name["ray-hparam-search"]["kind"] == "RayJob"
    assert by_name["mixtral-distill"]["executionTarget"] == "multiKueue"
    for run in doc["runs"]:
        assert set(run) >= {"name", "kind", "status", "created", "age", "runId", "queue", "namespace", "cluster",
                            "resourceUid", "durableId", "source", "executionTarget"}
        assert run["age"][-1] in "smhd"


def test_runs_table_is_scoped_by_namespace(capsys):
    assert main(["runs", "--demo", "-n", "team-vision"]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "KIND", "STATE", "STATUS", "QUEUE", "WHERE", "AGE"]
    assert len(lines) > 1 and all(line.startswith("team-vision ") for line in lines[1:])


def test_status_document_of_a_failed_run(capsys):
    code, doc, _ = run_json(capsys, "status", "eval-mmlu-0301", "-n", "team-nlp", "--demo", "-o", "json")
    assert code == 0
    assert (doc["apiVersion"], doc["kind"]) == ("tau.azure.com/v1alpha1", "RunStatus")
    assert doc["metadata"]["name"] == "eval-mmlu-0301" and doc["metadata"]["namespace"] == "team-nlp"
    assert doc["status"] | {"found": True, "workloadKind": "Job", "state": "failed"} == doc["status"]
    assert [p["name"] for p in doc["phases"]] == list(PHASE_ORDER)
    assert doc["job"]["found"] and doc["job"]["failed"] >= 1
    failed = doc["diagnostics"][0]
    assert failed["code"] == "RUN_FAILED" and failed["severity"] == "error"
    assert failed["commands"][0]["argv"][:2] == ["kubectl", "logs"]
    assert "diagnostics" in [a["name"] for a in doc["actions"]]


def test_status_yaml_and_table_show_the_same_run(capsys):
    assert main(["status", "ray-rlhf-ppo", "-n", "team-nlp", "--demo", "-o", "yaml"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["status"]["workloadKind"] == "RayJob" and doc["rayJob"]["rayClusterName"]
    assert main(["status", "ray-rlhf-ppo", "-n", "team-nlp", "--demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("RayJob team-nlp/ray-rlhf-ppo  ▶ running")
    for section in ("Progress", "Next"):
        assert f"\n{section}\n" in out
    assert "  RayCluster            ✓ done" in out


def test_status_of_a_missing_run_exits_1(capsys):
    code, doc, _ = run_json(capsys, "status", "no-such-run", "-n", "team-nlp", "--demo", "-o", "json")
    assert code == 1
    assert doc["status"]["found"] is False and doc["status"]["state"] == "not_found"
    assert [d["code"] for d in doc["diagnostics"]] == ["RUN_NOT_FOUND"]


def test_status_marks_the_run_hit_by_a_gpu_fault(capsys):
    code, doc, _ = run_json(capsys, "status", "burn-in-0", "-n", "team-oncall", "--demo", "faults", "-o", "json")
    assert code == 0
    fault = next(d for d in doc["diagnostics"] if d["code"] == "GPU_FAULT")
    assert "gpu-node-1" in fault["message"] and "Xid 48" in fault["message"]
    # the same scenario's healthy runs carry no such diagnostic
    _, other, _ = run_json(capsys, "status", "burn-in-2", "-n", "team-oncall", "--demo", "faults", "-o", "json")
    assert "GPU_FAULT" not in [d["code"] for d in other["diagnostics"]]


def test_watch_prints_each_change_until_startup_completes(tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    assert main(["status", "first", "-n", "team-a", "--demo", str(scenario), "--watch", "--interval", "10s", "-o", "json"]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    states = [d["status"]["state"] for d in docs]
    assert states[0] == "queued"
    assert states[-1] == "running" and docs[-1]["status"]["startupComplete"]
    assert len(docs) == len({json.dumps(d, sort_keys=True) for d in docs})  # only changes are printed


def test_watch_of_a_missing_run_stops_at_once(tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    assert main(["status", "never-submitted", "-n", "team-a", "--demo", str(scenario), "--watch", "-o", "json"]) == 1
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["status"]["state"] for d in docs] == ["not_found"]


def test_watch_of_a_run_that_stays_queued_gives_up_after_an_hour_of_simulated_time(tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    assert main(["status", "second", "-n", "team-a", "--demo", str(scenario), "--watch", "--interval", "5m", "-o", "json"]) == 1
    out, err = capsys.readouterr()
    assert "still queued after 3600s of simulated time" in err


def test_bad_output_format_is_invalid_input(capsys):
    try:
        main(["status", "x", "--demo", "-o", "xml"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_help_lists_status_and_runs(capsys):
    try:
        main(["status", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "--watch" in capsys.readouterr().out
