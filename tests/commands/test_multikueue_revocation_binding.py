"""#44 item 4, on the simulated fleet through `tau-tui multikueue`: a revocation proof binds to the
fingerprint of the credential the manager last stored (its ledger on TauCluster/cluster), not to this
machine's records.

An owner drains (the 401s recorded in records directory A), sets up again from another machine
(records directory B: new credentials stored), and the Secrets are then deleted by hand.  The next
drain from A must not verify step 5 with A's old 401s, nor with the old credential a keyring still
holds: the live credentials still authenticate.  Before: step 5 was ✓ quoting the old fingerprint and
the drain exited 0."""

from __future__ import annotations

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_NOT_VERIFIED, EXIT_OK
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.credentials import credential_from_document
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tests.multikueue_lab import cli_lab, token_of

NS = "kueue-system"
WORKERS = ("lab-worker-1", "lab-worker-2")


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return cli_lab(tmp_path, monkeypatch, retire=True)


def mk(*argv: str) -> int:
    return cli.main(["multikueue", *argv])


def records_in(monkeypatch, tmp_path, name: str) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / name))


def test_an_old_401_from_another_records_directory_proves_nothing_about_the_credential_stored_since(
        lab, tmp_path, monkeypatch, capsys, memory_keyring):
    records_in(monkeypatch, tmp_path, "machine-a")
    assert mk("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    old = {w: token_of(lab, f"{w}-kubeconfig") for w in WORKERS}
    assert mk("drain", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    capsys.readouterr()
    # Machine A still holds an old credential in its keyring, as a drain stopped before its 401 would leave it.
    vault = CredentialVault(lab.backend.current_context)
    for worker in WORKERS:
        lab.fleet.mint(worker, context=worker)  # new least-privilege credentials for the re-enable
    stale = credential_from_document("lab-worker-1", {
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "w", "cluster": {"server": "https://lab-worker-1.workers.sim:6443",
                                               "certificate-authority-data": "Y2E="}}],
        "users": [{"name": "u", "user": {"token": old["lab-worker-1"]}}],
        "contexts": [{"name": "x", "context": {"cluster": "w", "user": "u"}}]}, "old")
    vault.put("lab-worker-1", "revoking", stale)

    # Machine B sets up again: new credentials stored on the manager.
    records_in(monkeypatch, tmp_path, "machine-b")
    assert mk("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    live = {w: token_of(lab, f"{w}-kubeconfig") for w in WORKERS}
    # Someone deletes the Secrets by hand: the live credentials are never revoked.
    for worker in WORKERS:
        lab.world.store.remove(SECRET, f"{worker}-kubeconfig", NS)
    capsys.readouterr()

    records_in(monkeypatch, tmp_path, "machine-a")
    code = mk("drain", "--plan", lab.plan_path, "--yes", "--timeout", "30")
    out = capsys.readouterr().out
    assert code == EXIT_NOT_VERIFIED, out
    assert "⚠ 5. Revoke and delete the worker credentials" in out and "revocation unproven" in out
    assert all(token in lab.fleet.workers[w].store.tokens for w, token in live.items())  # they still authenticate
    assert mk("status", "--plan", lab.plan_path, "--flow", "drain") == EXIT_NOT_VERIFIED
