"""`tau-tui status` and `tau-tui runs` on the simulated backend (--demo): documents, formats,
exit codes, --watch and the diagnostics the phase engine gives."""

from __future__ import annotations

import json

import yaml

from tau_tui.cli import main
from tau_tui.core.operations.run_status_types import PHASE_ORDER


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


def test_watch_prints_each_change_until_startup_completes(tiny_scenario, capsys):
    assert main(["status", "first", "-n", "team-a", "--demo", str(tiny_scenario), "--watch", "--interval", "10s", "-o", "json"]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    states = [d["status"]["state"] for d in docs]
    assert states[0] == "queued"
    assert states[-1] == "running" and docs[-1]["status"]["startupComplete"]
    assert len(docs) == len({json.dumps(d, sort_keys=True) for d in docs})  # only changes are printed


def test_watch_of_a_missing_run_stops_at_once(tiny_scenario, capsys):
    assert main(["status", "never-submitted", "-n", "team-a", "--demo", str(tiny_scenario), "--watch", "-o", "json"]) == 1
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["status"]["state"] for d in docs] == ["not_found"]


def test_watch_of_a_run_that_stays_queued_gives_up_after_an_hour_of_simulated_time(tiny_scenario, capsys):
    assert main(["status", "second", "-n", "team-a", "--demo", str(tiny_scenario), "--watch", "--interval", "5m", "-o", "json"]) == 1
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
