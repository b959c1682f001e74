"""The headless CLI: exit codes, streams, help, init."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tau_tui.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "tau_tui" / "examples"


def test_validate_exit_codes_and_streams(tmp_path, capsys):
    assert main(["validate", str(EXAMPLES / "tau.yaml")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "valid (job" in err
    bad = tmp_path / "tau.yaml"
    bad.write_text("name: x\ncompute:\n  gpus: -1\n")
    assert main(["validate", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{bad}:3:3 compute.gpus: must be >= 0 (got -1)\n")


def test_example_renders_offline_with_the_shipped_snapshot(capsys):
    code = main(["render", str(EXAMPLES / "tau.yaml"), "--profiles", str(EXAMPLES / "profiles-snapshot.yaml")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "kind: Job" in out and "kueue.x-k8s.io/queue-name: jobqueue" in out


def test_help_documents_every_command():
    result = subprocess.run([sys.executable, "-m", "tau_tui.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for text in ("validate FILE", "render FILE [--profiles SNAPSHOT]", "submit FILE [--dry-run=server]", "--context", "-n NS", "--team", "--lane", "submission id", "exit 0 if valid, 2 if not"):
        assert text in result.stdout, text


def test_missing_kubeconfig_is_a_message_not_a_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["submit", str(EXAMPLES / "tau.yaml"), "--dry-run=server"]) == 1
    _, err = capsys.readouterr()
    assert "no kubeconfig found" in err and "Traceback" not in err


def test_unreadable_kubeconfig_names_the_file(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncontexts: [\n")
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert main(["submit", str(EXAMPLES / "tau.yaml")]) == 1
    _, err = capsys.readouterr()
    assert str(config) in err and "Traceback" not in err


def test_snapshot_is_refused_for_submit(tmp_path, capsys):
    config = tmp_path / "tau.yaml"
    config.write_text(
        "name: snap\nimage: python:3.12-slim\npolicy:\n  namespace: taugrid-default\n  team: research\n"
        "  lane: training\n  workload_profile_snapshot: snap.yaml\n"
    )
    assert main(["submit", str(config), "--dry-run=server"]) == 2
    _, err = capsys.readouterr()
    assert f"{config}:7:3 policy.workload_profile_snapshot: a profile snapshot is accepted only for a client dry-run" in err


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "tau.yaml").write_text("mine\n")
    assert main(["init", str(tmp_path)]) == 0
    assert (tmp_path / "tau.yaml").read_text() == "mine\n"
    assert (tmp_path / "train.py").exists()
    _, err = capsys.readouterr()
    assert "left unchanged" in err
