"""A keyring backend that keeps secrets in a plain file (``keyrings.alt``'s ``PlaintextKeyring``)
holds neither a rotation's worker credentials nor the audit signing key unless the user opts in
with ``TAU_TUI_ALLOW_PLAINTEXT_KEYRING=1``; the refusal names the backend and the opt-in."""

from __future__ import annotations

import keyring
import pytest
from keyring.backends.chainer import ChainerBackend

from tau_tui.cli import main
from tau_tui.commands.parser import EXIT_NO_KEYRING
from tau_tui.core.operations import audit_keystore
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.keyring_policy import ALLOW_PLAINTEXT_ENV
from tau_tui.core.operations.multikueue_steps.credentials import WorkerCredential
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault, KeyringUnavailable
from tests.multikueue_lab import LAB_PLAN, MemoryKeyring, drive_cli_with, make_lab


class PlaintextKeyring(MemoryKeyring):
    """Stands in for keyrings.alt.file.PlaintextKeyring (priority 0.5, passwords in a plain file)."""

    priority = 0.5  # type: ignore[assignment]


PlaintextKeyring.__module__ = "keyrings.alt.file"
PLAINTEXT_NAME = "keyrings.alt.file.PlaintextKeyring"
CREDENTIAL = WorkerCredential("lab-worker-1", b"kind: Config\nclusters: [{name: w1, cluster: {server: 'https://w1'}}]\n",
                              "https://w1", "test")


@pytest.fixture
def plaintext_keyring(monkeypatch):
    monkeypatch.delenv(ALLOW_PLAINTEXT_ENV, raising=False)
    previous = keyring.get_keyring()
    ring = PlaintextKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(previous)


def test_a_rotation_refuses_a_plaintext_backend_naming_it_and_the_opt_in(plaintext_keyring):
    vault = CredentialVault("sim")
    assert not vault.usable()
    with pytest.raises(KeyringUnavailable) as refused:
        vault.put("lab-worker-1", "pending", CREDENTIAL)
    assert PLAINTEXT_NAME in refused.value.message and "plain file" in refused.value.message
    assert f"{ALLOW_PLAINTEXT_ENV}=1" in refused.value.message
    assert vault.get("lab-worker-1", "pending") is None
    assert plaintext_keyring.entries == {}


def test_a_rotation_uses_a_plaintext_backend_when_the_user_opts_in(plaintext_keyring, monkeypatch):
    monkeypatch.setenv(ALLOW_PLAINTEXT_ENV, "1")
    vault = CredentialVault("sim")
    assert vault.usable()
    vault.put("lab-worker-1", "pending", CREDENTIAL)
    stored = vault.get("lab-worker-1", "pending")
    assert stored is not None and stored.kubeconfig == CREDENTIAL.kubeconfig


def test_the_rotate_command_exits_6_naming_the_plaintext_backend(plaintext_keyring, tmp_path, monkeypatch, capsys):
    drive_cli_with(make_lab(tmp_path), tmp_path, monkeypatch)
    (tmp_path / "plan.yaml").write_text(LAB_PLAN)
    code = main(["multikueue", "rotate", "--plan", str(tmp_path / "plan.yaml"), "--yes", "--new-context", "x"])
    err = capsys.readouterr().err
    assert code == EXIT_NO_KEYRING
    assert PLAINTEXT_NAME in err and f"{ALLOW_PLAINTEXT_ENV}=1" in err and "Traceback" not in err
    assert plaintext_keyring.entries == {}


def test_the_signing_key_skips_a_plaintext_backend_for_0600_files_saying_why(plaintext_keyring, tmp_path,
                                                                            monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(audit_keystore, "_said_fallback", False)
    AuditLog(tmp_path / "audit.jsonl").append("cancel", "Job a/b", ok=True, message="done")
    err = capsys.readouterr().err
    assert plaintext_keyring.entries == {}
    assert err.count(PLAINTEXT_NAME) == 1 and f"{ALLOW_PLAINTEXT_ENV}=1" in err
    keys_dir = tmp_path / "state" / "tau-tui" / "keys"
    assert {oct(p.stat().st_mode & 0o777) for p in keys_dir.iterdir()} == {"0o600"}


def test_the_signing_key_goes_to_a_plaintext_backend_when_the_user_opts_in(plaintext_keyring, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv(ALLOW_PLAINTEXT_ENV, "1")
    AuditLog(tmp_path / "audit.jsonl").append("cancel", "Job a/b", ok=True, message="done")
    assert any(service == "tau-tui" for service, _ in plaintext_keyring.entries)


@pytest.mark.parametrize(("members", "usable"), [
    ((PlaintextKeyring, MemoryKeyring), False),  # the chain writes to its first member
    ((MemoryKeyring, PlaintextKeyring), True),
])
def test_a_chain_of_backends_is_judged_by_the_one_it_writes_to(monkeypatch, tmp_path, members, usable):
    monkeypatch.delenv(ALLOW_PLAINTEXT_ENV, raising=False)
    monkeypatch.setattr(ChainerBackend, "backends", [member() for member in members])
    previous = keyring.get_keyring()
    keyring.set_keyring(ChainerBackend())
    try:
        assert CredentialVault("sim").usable() is usable
        assert isinstance(audit_keystore.open_store(tmp_path), audit_keystore.KeyringStore) is usable
    finally:
        keyring.set_keyring(previous)
