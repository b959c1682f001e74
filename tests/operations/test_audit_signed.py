"""The signed audit log ("The audit log and evidence bundles can be rewritten"): each
entry is signed with the user's Ed25519 key and the head (hash, count) is kept in the OS keyring,
so `tau-tui audit verify` fails on a cut tail, an emptied or deleted file, a rewritten and re-hashed
line, another signer and an unsigned log; a key rotation is itself an entry."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tau_tui.cli import main
from tau_tui.core.operations.audit import GENESIS, AuditLog, entry_hash

IDENTITY = {"username": "alice@example.com", "groups": ["team-a"]}


def fixed_clock() -> datetime:
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def log_path(tmp_path, monkeypatch, memory_keyring) -> Path:
    """Five signed entries in tmp_path/audit.jsonl, the key and head in an in-memory keyring."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, clock=fixed_clock, source="cli")
    for index in range(5):
        log.append("cordon", f"Node n{index}", ok=None, message="confirmed; applying", phase="intent",
                   context="ctx", identity=IDENTITY)
    return path


def verify_cli(path: Path, capsys) -> tuple[int, str, str]:
    code = main(["audit", "verify", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_records(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in lines))


def test_a_signed_log_verifies_and_keeps_its_key_and_head_in_the_keyring(log_path, memory_keyring, capsys):
    lines = records(log_path)
    assert all(r["key"].startswith("SHA256:") and r["sig"] for r in lines)
    code, out, _ = verify_cli(log_path, capsys)
    assert code == 0 and "5 entries, chain intact, signed by SHA256:" in out
    slots = {name for _, name in memory_keyring.entries}
    assert {"signing-key", "signing-public-keys", f"audit-head:{log_path.resolve()}"} <= slots
    private = memory_keyring.entries[("tau-tui", "signing-key")]
    assert private not in log_path.read_text() and private not in out
    keys_dir = log_path.parent / "state" / "tau-tui" / "keys"
    assert [p.name for p in keys_dir.iterdir()] == [".lock"]  # with a keyring, no key file on disk


def test_a_truncated_tail_fails(log_path, capsys):
    lines = log_path.read_text().splitlines(keepends=True)
    log_path.write_text("".join(lines[:3]))
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and f"{log_path}:4: truncated" in err and "records 5 entries" in err and "file has 3" in err


def test_an_emptied_file_fails(log_path, capsys):
    log_path.write_text("")
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and f"{log_path}:1: emptied" in err and "records 5 entries" in err


def test_a_deleted_file_with_a_recorded_head_fails(log_path, capsys):
    log_path.unlink()
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and "the file is gone" in err and "deleted or moved" in err


def test_an_edit_and_a_deletion_with_every_later_hash_recomputed_fails_at_the_edited_line(log_path, capsys):
    lines = records(log_path)
    lines[1]["message"] = "nothing happened here"  # line 2 edited
    del lines[3]  # line 4 deleted
    prev = GENESIS
    for record in lines:  # and every later hash recomputed
        record["prev"] = prev
        record["hash"] = prev = entry_hash(record)
    write_records(log_path, lines)
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and f"{log_path}:2: signature does not match" in err


def test_a_log_re_signed_with_another_key_names_the_foreign_signer(log_path, memory_keyring, capsys):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from tau_tui.core.operations.audit_keys import fingerprint

    forger = Ed25519PrivateKey.generate()
    forged_fp = fingerprint(forger.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    lines = records(log_path)[:3]
    lines[1]["target"] = "Node forged"
    prev = GENESIS
    for record in lines:
        record["prev"], record["key"] = prev, forged_fp
        record["hash"] = prev = entry_hash(record)
        record["sig"] = base64.b64encode(forger.sign(record["hash"].encode())).decode()
    write_records(log_path, lines)
    memory_keyring.entries[("tau-tui", f"audit-head:{log_path.resolve()}")] = json.dumps({"hash": prev, "count": 3})
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and f"{log_path}:1: signed by key {forged_fp}, which is not one of your keys" in err


def test_an_unsigned_log_cannot_be_proven_and_fails(tmp_path, monkeypatch, memory_keyring, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "old.jsonl"
    prev, lines = GENESIS, []
    for index in range(3):  # the format written before entries were signed
        record = {"at": "2026-01-01T00:00:00+00:00", "user": "u", "context": None, "namespace": None,
                  "verb": "cancel", "target": f"Job a/{index}", "dry_run": False, "ok": True, "message": "",
                  "readonly_blocked": False, "phase": "outcome", "source": "cli", "identity": None, "prev": prev}
        record["hash"] = prev = entry_hash(record)
        lines.append(record)
    write_records(path, lines)
    code, out, err = verify_cli(path, capsys)
    assert code == 1 and "unsigned: cannot prove" in err and "intact" not in out + err


def test_signed_entries_after_an_unsigned_start_still_fail_naming_both_parts(tmp_path, monkeypatch, memory_keyring,
                                                                             capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "mixed.jsonl"
    record = {"at": "2026-01-01T00:00:00+00:00", "verb": "cancel", "target": "Job a/b", "prev": GENESIS}
    record["hash"] = entry_hash(record)
    write_records(path, [record])
    AuditLog(path).append("cancel", "Job a/c", ok=True, message="done")
    code, _, err = verify_cli(path, capsys)
    assert code == 1 and "unsigned: cannot prove lines 1-1" in err and "lines 2-2 are signed and intact" in err
    lines = records(path)
    lines.insert(1, record | {"prev": lines[0]["hash"]})  # an unsigned line slipped in later is named
    write_records(path, lines)
    assert main(["audit", "verify", str(path)]) == 1


def test_a_key_rotation_is_an_entry_and_old_entries_still_verify(log_path, memory_keyring, capsys):
    old_private = memory_keyring.entries[("tau-tui", "signing-key")]
    assert main(["audit", "rotate-key", str(log_path)]) == 0
    out = capsys.readouterr().out
    assert "signing key rotated: SHA256:" in out and old_private not in out
    AuditLog(log_path).append("uncordon", "Node n0", ok=True, message="done")
    lines = records(log_path)
    assert lines[5]["verb"] == "rotate-key" and lines[5]["target"] == f"audit signing key {lines[0]['key']}"
    assert lines[6]["key"] == lines[5]["key"] != lines[0]["key"]
    code, out, _ = verify_cli(log_path, capsys)
    assert code == 0 and f"7 entries, chain intact, signed by {lines[0]['key']}, {lines[5]['key']}" in out
    assert main(["audit", "key"]) == 0
    shown = capsys.readouterr().out
    assert f"retired     {lines[0]['key']}" in shown and memory_keyring.entries[("tau-tui", "signing-key")] not in shown


def test_an_entry_signed_with_a_retired_key_after_its_rotation_fails(log_path, memory_keyring, capsys):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    stolen = Ed25519PrivateKey.from_private_bytes(base64.b64decode(memory_keyring.entries[("tau-tui", "signing-key")]))
    assert main(["audit", "rotate-key", str(log_path)]) == 0
    capsys.readouterr()
    lines = records(log_path)
    forged = dict(lines[0], prev=lines[-1]["hash"], target="Node forged")
    forged["hash"] = entry_hash(forged)
    forged["sig"] = base64.b64encode(stolen.sign(forged["hash"].encode())).decode()
    write_records(log_path, [*lines, forged])
    memory_keyring.entries[("tau-tui", f"audit-head:{log_path.resolve()}")] = json.dumps(
        {"hash": forged["hash"], "count": 7})
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and f"{log_path}:7: signed by key {lines[0]['key']} after the entry that retired it" in err


def test_without_a_keyring_the_key_lives_in_0600_files_said_once_and_verify_exits_4(tmp_path, monkeypatch, capsys):
    """With TAU_TUI_ALLOW_FILE_KEY_STORE=1 (tests/conftest.py sets it): files, said once, and a
    verify against them is not a 0 (anyone running as the user can replace them)."""
    import keyring
    from keyring.backends import fail

    from tau_tui.core.operations import audit_keystore

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(audit_keystore, "_said_fallback", False)
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        path = tmp_path / "audit.jsonl"
        log = AuditLog(path)
        for index in range(3):
            log.append("cancel", f"Job a/{index}", ok=True, message="done")
        err = capsys.readouterr().err
        assert err.count("no usable OS keyring") == 1 and "TAU_TUI_ALLOW_FILE_KEY_STORE=1" in err
        keys_dir = tmp_path / "state" / "tau-tui" / "keys"
        assert oct(keys_dir.stat().st_mode & 0o777) == "0o700"
        assert {oct(p.stat().st_mode & 0o777) for p in keys_dir.iterdir()} == {"0o600"}
        code, out, err = verify_cli(path, capsys)
        assert code == 4 and "3 entries, chain intact" in out
        assert "not verified against the OS keyring: checked against key files in" in err
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:1]))
        assert verify_cli(path, capsys)[0] == 1
    finally:
        keyring.set_keyring(previous)


@pytest.mark.parametrize("garble", [
    lambda r: r | {"sig": 12345},
    lambda r: r | {"sig": "%%% not base64 %%%"},
    lambda r: r | {"key": {"nested": ["x"] * 1000}},
    lambda r: r | {"key": "SHA256:\x1b[31mred\x00" + "A" * 5000},
    lambda r: {k: v for k, v in r.items() if k != "sig"},
])
def test_a_garbled_signature_is_named_by_file_and_line_without_a_traceback(log_path, capsys, garble):
    lines = records(log_path)
    lines[2] = garble(lines[2])
    lines[2]["hash"] = entry_hash(lines[2])
    for before, record in zip(lines[2:], lines[3:], strict=False):
        record["prev"] = before["hash"]
        record["hash"] = entry_hash(record)
    write_records(log_path, lines)
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and err.startswith(f"{log_path}:3: ") and "\x1b" not in err and len(err) < 1000


def test_an_append_after_a_cut_does_not_hide_it(log_path, capsys):
    log_path.write_text("".join(log_path.read_text().splitlines(keepends=True)[:2]))
    AuditLog(log_path).append("cancel", "Job a/b", ok=True, message="done")  # the user's next action
    code, _, err = verify_cli(log_path, capsys)
    assert code == 1 and "when entry 3 was written the log did not end at the recorded head (5 entries" in err
    AuditLog(log_path).append("cancel", "Job a/c", ok=True, message="done")
    assert verify_cli(log_path, capsys)[0] == 1  # and it stays said


def test_start_over_begins_a_new_log_naming_the_old_head(log_path, capsys):
    head = records(log_path)[-1]["hash"]
    assert main(["audit", "start-over", str(log_path)]) == 1
    assert "is not empty; move it aside first" in capsys.readouterr().err
    log_path.rename(log_path.with_name("audit.old.jsonl"))
    assert main(["audit", "start-over", str(log_path)]) == 0
    assert f"ended at 5 entries, head {head}" in capsys.readouterr().out
    (first,) = records(log_path)
    assert first["verb"] == "start-over" and f"5 entries ending at {head}" in first["message"]
    code, out, _ = verify_cli(log_path, capsys)
    assert code == 0 and "1 entries, chain intact" in out
