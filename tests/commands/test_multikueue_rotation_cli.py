"""#44 items 3 and 5, on the simulated fleet through `tau-tui multikueue rotate` and `status`.

Item 3: a pending credential left in the keyring by an earlier, stopped rotation must not stand in for
the one the owner names now: `rotate --new-context cred-b --yes` is refused (exit 3) naming both
fingerprints, the Secret keeps what it held; resuming the stopped rotation verifies, and "verified"
names the fingerprint it verified.  Before: exit 0 "verified" while the Secret held cred-a.

Item 5: after a rotation the CLI's last survey agrees with its exit code (✓ for every step, not ▶/○);
`status --flow rotate` shows the last rotation of a worker, exit 0 once its old credential is proven
revoked and 4 while it is not (no adminContext: revoke it by hand)."""

from __future__ import annotations

import base64

import pytest
import yaml

from tau_tui import cli
from tau_tui.commands.parser import EXIT_DECLINED, EXIT_NOT_VERIFIED, EXIT_OK, EXIT_REFUSED
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.credentials import credential_from_document
from tests.multikueue_lab import LAB_PLAN, cli_lab, revoke_by_hand, token_of

NS = "kueue-system"
STEPS = ("1. Take the new worker credential", "2. Replace the Secret; Kueue reconnects with the new credential",
         "3. Revoke the old credential")


@pytest.fixture
def lab(tmp_path, monkeypatch, memory_keyring):
    lab = cli_lab(tmp_path, monkeypatch)
    lab.keyring = memory_keyring
    assert cli.main(["multikueue", "setup", "--plan", lab.plan_path, "--yes", "--timeout", "30"]) == EXIT_OK
    return lab


def fingerprint_of_context(lab, context: str) -> str:
    return credential_from_document("lab-worker-1", lab.fleet.contexts[context], "test").fingerprint


def stored_token(lab) -> str:
    secret = lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", NS)
    return str(yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))["users"][0]["user"]["token"])


def mk(*argv: str) -> int:
    return cli.main(["multikueue", *argv])


def answers(monkeypatch, *said: str) -> None:
    """The owner at a terminal answering each step's question in turn."""
    replies = iter(said)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt="": next(replies))


def test_a_pending_credential_of_a_stopped_rotation_does_not_stand_in_for_the_one_named(lab, monkeypatch, capsys):
    cred_a = lab.fleet.mint("lab-worker-1", context="cred-a")["users"][0]["user"]["token"]
    cred_b = lab.fleet.mint("lab-worker-1", context="cred-b")["users"][0]["user"]["token"]
    before = stored_token(lab)
    # a rotation to cred-a, stopped by its owner after step 1 (taken into the keyring, nothing written)
    with monkeypatch.context() as terminal:
        answers(terminal, "y", "n")
        assert mk("rotate", "--plan", lab.plan_path, "--worker", "lab-worker-1", "--new-context", "cred-a",
                  "--timeout", "30") == EXIT_DECLINED
    capsys.readouterr()
    assert stored_token(lab) == before

    code = mk("rotate", "--plan", lab.plan_path, "--worker", "lab-worker-1", "--new-context", "cred-b", "--yes",
              "--timeout", "30")
    captured = capsys.readouterr()
    out = captured.out
    assert code == EXIT_REFUSED, captured
    assert fingerprint_of_context(lab, "cred-a") in out and fingerprint_of_context(lab, "cred-b") in out
    assert stored_token(lab) == before not in (cred_a, cred_b)

    # resuming the stopped rotation finishes it with cred-a, and says so by fingerprint
    assert mk("rotate", "--plan", lab.plan_path, "--worker", "lab-worker-1", "--yes", "--timeout", "30") == EXIT_OK
    out = capsys.readouterr().out
    assert stored_token(lab) == cred_a
    assert f"MultiKueue credential rotation: verified (worker lab-worker-1 uses {fingerprint_of_context(lab, 'cred-a')}" in out


def test_after_a_rotation_the_survey_agrees_and_status_shows_it(lab, capsys):
    lab.fleet.mint("lab-worker-1", context="fresh")
    assert mk("rotate", "--plan", lab.plan_path, "--worker", "lab-worker-1", "--new-context", "fresh", "--yes",
              "--timeout", "30") == EXIT_OK
    out = capsys.readouterr().out
    tail = out[out.rindex("server dry-run"):] if "server dry-run" in out else out
    for title in STEPS:
        assert f"✓ {title}" in tail, tail
    assert "▶" not in tail and "○" not in tail
    assert mk("status", "--plan", lab.plan_path, "--flow", "rotate", "--worker", "lab-worker-1") == EXIT_OK
    out = capsys.readouterr().out
    assert all(f"✓ {title}" in out for title in STEPS), out
    assert "verified (exit 0)" in out


def test_status_exits_4_while_the_old_credential_is_not_proven_revoked(lab, tmp_path, capsys):
    no_admin = tmp_path / "no-admin.yaml"
    no_admin.write_text(LAB_PLAN.replace(", adminContext: lab-worker-1", "").replace(", adminContext: lab-worker-2", ""))
    old = token_of(lab, "lab-worker-1-kubeconfig")
    lab.fleet.mint("lab-worker-1", context="fresh")
    assert mk("rotate", "--plan", str(no_admin), "--worker", "lab-worker-1", "--new-context", "fresh", "--yes",
              "--timeout", "30") == EXIT_NOT_VERIFIED
    capsys.readouterr()
    assert mk("status", "--plan", str(no_admin), "--flow", "rotate") == EXIT_NOT_VERIFIED
    out = capsys.readouterr().out
    assert "⚠ 3. Revoke the old credential" in out and "still authenticates" in out
    revoke_by_hand(lab, "lab-worker-1", old)
    assert mk("rotate", "--plan", str(no_admin), "--worker", "lab-worker-1", "--yes", "--timeout", "30") == EXIT_OK
    capsys.readouterr()
    assert mk("status", "--plan", str(no_admin), "--flow", "rotate") == EXIT_OK

