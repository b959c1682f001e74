"""`tau-tui multikueue ...`: the same engine headless, with an exit code per outcome."""

from __future__ import annotations

import json

import keyring
import pytest
from keyring.backends import fail

from tau_tui import cli
from tau_tui.commands.parser import (
    EXIT_DECLINED,
    EXIT_INVALID,
    EXIT_NO_KEYRING,
    EXIT_NOT_VERIFIED,
    EXIT_OK,
    EXIT_REFUSED,
)
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tests.multikueue_lab import LAB_PLAN, MemoryKeyring, cli_lab, lab_job, retire_demo_multikueue


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return cli_lab(tmp_path, monkeypatch)


def run(*argv: str) -> int:
    return cli.main(["multikueue", *argv])


def test_setup_with_yes_verifies_and_records(lab, capsys):
    assert run("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    out = capsys.readouterr().out
    assert "MultiKueue setup wizard: verified" in out and "<redacted>" in out
    assert all(token not in out for token in lab.tokens())
    assert run("records", "--json") == EXIT_OK
    [line] = capsys.readouterr().out.splitlines()
    record = json.loads(line)
    assert (record["flow"], record["outcome"], record["steps"]) == ("setup", "verified", 5)


def test_without_yes_and_without_a_terminal_nothing_is_applied(lab, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert run("setup", "--plan", lab.plan_path) == EXIT_DECLINED
    assert "pass --yes" in capsys.readouterr().err
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None


def test_a_refusal_exits_3_with_the_reason(lab, capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(LAB_PLAN.replace("localQueue: mk-lab-queue", "localQueue: jobqueue"))
    assert run("setup", "--plan", str(bad), "--yes", "--timeout", "30") == EXIT_REFUSED
    assert "is the default queue" in capsys.readouterr().out


def test_drain_out_of_order_is_refused_and_in_order_verifies(lab, capsys):
    retire_demo_multikueue(lab)  # the demo's own wiring has workers the plan does not list: a drain refuses it
    assert run("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    lab.backend.submit([lab_job()])
    lab.world.advance(15)
    assert run("drain", "--plan", lab.plan_path, "--yes", "--timeout", "20") == EXIT_NOT_VERIFIED
    assert "pending owners you may cancel: team-nlp/Job/mk-train" in capsys.readouterr().out
    assert run("drain", "--plan", lab.plan_path, "--yes", "--timeout", "30", "--cancel", "team-nlp/Job/mk-train") == EXIT_OK
    assert run("status", "--plan", lab.plan_path) == EXIT_OK
    out = capsys.readouterr().out
    assert "✓ 5. Revoke and delete the worker credentials" in out


def test_rotation_without_keyring_exits_6(lab, capsys):
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        assert run("rotate", "--plan", lab.plan_path, "--yes", "--new-context", "x") == EXIT_NO_KEYRING
    finally:
        keyring.set_keyring(previous)
    assert "no usable OS keyring" in capsys.readouterr().err


def test_rotation_with_a_keyring(lab, capsys):
    assert run("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    lab.fleet.mint("lab-worker-1", context="fresh")
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        assert run("rotate", "--plan", lab.plan_path, "--yes", "--worker", "lab-worker-1", "--new-context", "fresh",
                   "--timeout", "30") == EXIT_OK
    finally:
        keyring.set_keyring(previous)
    assert "MultiKueue credential rotation: verified" in capsys.readouterr().out


def test_a_bad_plan_names_file_line_and_key(lab, capsys, tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text(LAB_PLAN + "localQeue: x\n")
    assert run("setup", "--plan", str(bad), "--yes") == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{bad}:12:1 localQeue: unknown key 'localQeue'" in err
    assert run("setup") == EXIT_INVALID
