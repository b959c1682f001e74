"""`tau-tui runs retry` and `tau-tui runs resume` on a simulated cluster:
the same decisions as the Runs pane, previewed with a server dry-run, confirmed with --yes,
audited, and refused with the reason (exit 3) when the policy says no."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_tui.cli import main
from tests.scenarios import one_queue_scenario

EXECUTION = json.dumps({"engine": "job", "maxRetries": 1, "retryOn": ["Preempted", "Evicted"],
                        "backoffInitial": "30s", "backoffMax": "5m"})
SCENARIO = one_queue_scenario("recovery-cli", seed=7, warmup_seconds=300, nodes=3, cpu=256, memory="2000Gi", jobs=(
    f"{{at: -290, kind: Job, name: pretrain, namespace: team-a, queue: q, gpus: 8, annotations: {{tau.azure.com/workloadspec-execution: '{EXECUTION}'}}}}",
    f"{{at: -290, kind: Job, name: last-try, namespace: team-a, queue: q, gpus: 8, annotations: {{tau.azure.com/workloadspec-execution: '{EXECUTION}', tau.azure.com/retry-attempt: \"1\"}}}}",
), timeline=(
    "{at: -200, preempt: {namespace: team-a, job: pretrain}}",
    "{at: -200, preempt: {namespace: team-a, job: last-try}}",
))


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO)
    return str(path)


def audit_entries(tmp_path: Path) -> list[dict]:
    """The demo's own audit log (a --demo run is never audited into yours)."""
    return [json.loads(line) for line in (tmp_path / "tau-tui" / "demo" / "audit.jsonl").read_text().splitlines()]


def test_retry_of_a_preempted_run_is_previewed_confirmed_and_audited(scenario, tmp_path, capsys):
    assert main(["runs", "retry", "pretrain", "-n", "team-a", "--demo", scenario, "--yes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("↻ retry: retry 1/1 after Preempted as pretrain-retry-1")
    assert "Job pretrain-retry-1 passes server dry-run" in out
    assert "Job pretrain-retry-1 created" in out
    assert out[-1] == "Job team-a/pretrain annotated tau.azure.com/retried-as=pretrain-retry-1"
    assert [(e["verb"], e["phase"], e["ok"]) for e in audit_entries(tmp_path)] == [
        ("retry", "preview", True), ("retry", "intent", None), ("retry", "outcome", True)]


def test_retry_beyond_max_retries_is_refused_with_the_reason(scenario, capsys):
    assert main(["runs", "retry", "last-try", "-n", "team-a", "--demo", scenario, "--yes"]) == 3
    err = capsys.readouterr().err
    assert "not retried: retries exhausted: 1 of resilience.max_retries 1 used (Preempted)" in err


def test_retry_dry_run_changes_nothing_and_is_audited_as_a_preview(scenario, tmp_path, capsys):
    assert main(["runs", "retry", "pretrain", "-n", "team-a", "--demo", scenario, "--dry-run", "server"]) == 0
    out = capsys.readouterr().out
    assert "passes server dry-run" in out and "created" not in out
    assert [e["phase"] for e in audit_entries(tmp_path)] == ["preview"]


def test_resume_without_a_terminal_or_yes_is_not_confirmed(scenario, capsys):
    code = main(["runs", "resume", "pretrain", "-n", "team-a", "--demo", scenario, "--from", "/data/ckpt/pretrain"])
    out, err = capsys.readouterr()
    assert code == 5 and "not confirmed" in err
    assert out.startswith("resume team-a/pretrain as pretrain-resume-1 from /data/ckpt/pretrain")


def test_resume_needs_a_checkpoint_and_then_sets_tau_resume_from(scenario, capsys):
    assert main(["runs", "resume", "pretrain", "-n", "team-a", "--demo", scenario, "--yes"]) == 3
    assert "pass --from PATH" in capsys.readouterr().err
    assert main(["runs", "resume", "pretrain", "-n", "team-a", "--demo", scenario, "--yes", "--from", "/data/ckpt/p"]) == 0
    out = capsys.readouterr().out
    assert "Job pretrain-resume-1 created" in out
    assert "Job team-a/pretrain annotated tau.azure.com/resumed-as=pretrain-resume-1" in out


def test_runs_without_an_action_still_lists(scenario, capsys):
    assert main(["runs", "-n", "team-a", "--demo", scenario, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["name"]: r["state"] for r in doc["runs"]} == {"last-try": "failed", "pretrain": "failed"}


def test_status_shows_the_retry_decision(scenario, capsys):
    assert main(["status", "pretrain", "-n", "team-a", "--demo", scenario, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["retry"]["verdict"] == "retry" and doc["retry"]["newName"] == "pretrain-retry-1"
    assert doc["retry"]["reason"] == "Preempted" and doc["retry"]["maxRetries"] == 1
