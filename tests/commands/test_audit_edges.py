"""`tau-tui audit ...` at the edges (issue #44, items 10, 11, 12 and 16): a link in the log's place,
an empty file without a head, key files nobody chose, a key rotated as compromised, a key store that
fails after the line, the note a start-over must keep, and the state directory's mode.  Every check
goes through the CLI, as a user runs it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import keyring
import pytest

from tau_tui.cli import main
from tau_tui.core.operations.audit import AuditLog, default_audit_path
from tau_tui.core.operations.audit_keystore import ALLOW_FILE_STORE_ENV, KeyStoreError
from tests.multikueue_lab import MemoryKeyring


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def written(count: int, path: Path | None = None) -> Path:
    """``count`` entries, as the app writes them, in the user's log (or ``path``)."""
    log = AuditLog(path, source="app")
    for index in range(count):
        log.append("cordon", f"Node n{index}", ok=None, message="confirmed; applying", phase="intent")
    return log.path


@pytest.fixture
def state(tmp_path, monkeypatch, memory_keyring) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


# -- item 10: a link in the log's place ------------------------------------------------------------

def test_a_link_to_an_empty_file_in_place_of_the_log_fails_and_takes_no_entry(state, tmp_path, capsys):
    log = written(3)
    assert run(capsys, "audit", "verify")[0] == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    log.unlink()
    log.symlink_to(empty)
    code, _, err = run(capsys, "audit", "verify")
    assert code == 1 and "is a symbolic link" in err and str(empty) in err
    code, _, err = run(capsys, "audit", "rotate-key")  # a write: refused, nothing through the link
    assert code == 1 and "symbolic link" in err
    assert empty.read_text() == ""
    assert run(capsys, "audit", "verify")[0] == 1  # no fresh chain began behind it


def test_a_link_to_another_log_that_verifies_fails(state, tmp_path, capsys):
    other = written(2, tmp_path / "other.jsonl")
    assert run(capsys, "audit", "verify", str(other))[0] == 0
    log = written(4)
    log.unlink()
    log.symlink_to(other)
    code, _, err = run(capsys, "audit", "verify")
    assert code == 1 and f"{log}:1: is a symbolic link (to {other})" in err


def test_an_empty_file_with_no_head_does_not_verify(state, capsys):
    log = default_audit_path()
    log.parent.mkdir(parents=True)
    log.write_text("")
    code, out, err = run(capsys, "audit", "verify")
    assert code == 1 and "no head is recorded for this file" in err and "nothing written yet" not in out + err


# -- item 11: the trust anchor moves only when the user says so --------------------------------------

def test_key_files_nobody_chose_are_refused_and_verify_fails(tmp_path, monkeypatch, capsys):
    """No usable keyring (conftest's fail backend): key and head files planted in the state directory
    (here made by the same code, as anyone running as the user can) do not make a forged log pass."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    log = written(3)  # TAU_TUI_ALLOW_FILE_KEY_STORE=1 from tests/conftest.py: the files get made
    assert (tmp_path / "state" / "tau-tui" / "keys").is_dir()
    monkeypatch.delenv(ALLOW_FILE_STORE_ENV)  # the user never chose files
    code, out, err = run(capsys, "audit", "verify")
    assert code == 1 and out == ""
    assert f"{ALLOW_FILE_STORE_ENV}=1" in err and "no usable OS keyring" in err and "key files from an earlier run" in err
    code, _, err = run(capsys, "audit", "rotate-key")
    assert code == 1 and f"{ALLOW_FILE_STORE_ENV}=1" in err
    with pytest.raises(KeyStoreError):  # the app's intent entry: not written, so the change is not made
        AuditLog(log).append("cordon", "Node n9", ok=None, message="confirmed; applying", phase="intent")
    assert len(log.read_text().splitlines()) == 3


def test_with_key_files_allowed_verify_exits_4_saying_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    written(2)
    code, out, err = run(capsys, "audit", "verify")
    assert code == 4 and "2 entries, chain intact" in out
    assert "not verified against the OS keyring" in err and ALLOW_FILE_STORE_ENV in err


# -- item 12: a key rotated as compromised proves nothing --------------------------------------------

def test_rotate_key_compromised_makes_what_the_old_key_signed_prove_nothing(state, capsys):
    written(3)
    code, out, _ = run(capsys, "audit", "rotate-key", "--compromised")
    assert code == 0 and "marked compromised" in out
    code, _, err = run(capsys, "audit", "verify")
    assert code == 1 and ":1: signed by key SHA256:" in err and "rotated as compromised" in err


def test_a_plain_rotation_still_verifies_what_the_old_key_signed_before(state, capsys):
    written(3)
    assert run(capsys, "audit", "rotate-key")[0] == 0
    code, out, _ = run(capsys, "audit", "verify")
    assert code == 0 and "4 entries, chain intact" in out


# -- item 16: the head, start-over, the directory's mode ---------------------------------------------

class FailsAfterTheLine(MemoryKeyring):
    """A keyring that refuses the head write made once the new line is in the log (armed once)."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log
        self.fail_at_lines: int | None = None

    def set_password(self, service: str, username: str, password: str) -> None:
        if username.startswith("audit-head:") and self.fail_at_lines is not None and self.log.exists() \
                and len(self.log.read_text().splitlines()) == self.fail_at_lines:
            self.fail_at_lines = None
            raise keyring.errors.PasswordSetError("the keyring is locked")
        super().set_password(service, username, password)


def test_a_key_store_that_fails_after_the_line_leaves_a_log_that_verifies(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ring = FailsAfterTheLine(default_audit_path())
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    try:
        log = written(3)
        ring.fail_at_lines = 4
        with pytest.raises(KeyStoreError):
            written(1)
        assert len(log.read_text().splitlines()) == 4
        code, out, err = run(capsys, "audit", "verify")
        assert code == 0, err
        assert "4 entries, chain intact" in out and "recorded as pending" in out
        written(1)  # the keyring works again: nothing is left to say
        code, out, _ = run(capsys, "audit", "verify")
        assert code == 0 and "5 entries, chain intact" in out and "pending" not in out
    finally:
        keyring.set_keyring(previous)


def test_start_over_keeps_the_note_of_the_log_it_replaces(state, capsys):
    log = written(4)
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:2]))  # cut
    written(1)  # the next write notes the cut in the head
    code, _, err = run(capsys, "audit", "verify")
    assert code == 1 and "did not end at the recorded head" in err
    log.rename(log.with_name("audit.old.jsonl"))
    assert run(capsys, "audit", "start-over")[0] == 0
    first = json.loads(log.read_text().splitlines()[0])
    assert first["verb"] == "start-over" and "did not end at the recorded head" in first["message"]


def test_the_state_directories_the_key_store_makes_are_0700(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "fresh" / "state"))
    old = os.umask(0o022)
    try:
        code, out, _ = run(capsys, "audit", "key")
    finally:
        os.umask(old)
    assert code == 0 and "signing key SHA256:" in out
    for directory in (tmp_path / "fresh", tmp_path / "fresh" / "state", tmp_path / "fresh" / "state" / "tau-tui",
                      tmp_path / "fresh" / "state" / "tau-tui" / "keys"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
