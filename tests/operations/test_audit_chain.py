"""The audit log: hash chain, `tau-tui audit verify`, phases, identity and redaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tau_tui.core.operations.audit import GENESIS, AuditCorrupt, AuditLog, redact, redact_value, verify

RUN_BOUND = 120
IDENTITY = {"username": "alice@example.com", "uid": "42", "groups": ["team-a", "system:authenticated"]}


def fixed_clock():
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def filled(path: Path, count: int = 5) -> AuditLog:
    log = AuditLog(path, clock=fixed_clock)
    for index in range(count):
        log.append("cordon", f"Node n{index}", ok=None, message="confirmed; applying", phase="intent",
                   context="ctx", identity=IDENTITY)
    return log


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tau_tui.cli", *args], capture_output=True, text=True,
                          timeout=RUN_BOUND, env=env, cwd=Path(__file__).resolve().parents[2])


def test_each_entry_chains_to_the_previous_and_verify_passes(tmp_path):
    path = tmp_path / "audit.jsonl"
    filled(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["prev"] == GENESIS
    assert all(b["prev"] == a["hash"] for a, b in zip(lines, lines[1:], strict=False))
    result = verify(path)
    assert result.ok and result.entries == 5 and result.head == lines[-1]["hash"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    run = cli("audit", "verify", str(path))  # the key in files (tests/conftest.py allows them): exit 4, not 0
    assert run.returncode == 4 and "5 entries, chain intact" in run.stdout, run.stderr
    assert "not verified against the OS keyring: checked against key files" in run.stderr


def test_verify_names_an_edited_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    filled(path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"Node n2"', '"Node other"')
    path.write_text("\n".join(lines) + "\n")
    assert verify(path).bad_line == 3
    run = cli("audit", "verify", str(path))
    assert run.returncode == 1 and f"{path}:3: hash mismatch" in run.stderr, run.stderr


def test_verify_names_the_line_after_a_deleted_one(tmp_path):
    path = tmp_path / "audit.jsonl"
    filled(path)
    lines = path.read_text().splitlines()
    del lines[1]
    path.write_text("\n".join(lines) + "\n")
    run = cli("audit", "verify", str(path))
    assert run.returncode == 1 and f"{path}:2: chain broken" in run.stderr, run.stderr


def test_a_line_that_is_not_json_is_reported_never_skipped(tmp_path):
    path = tmp_path / "audit.jsonl"
    log = filled(path, 3)
    with open(path, "a") as handle:
        handle.write("not json at all\n")
    log.append("cancel", "Job a/b", ok=True, message="done")  # the chain goes on past the bad line
    result = verify(path)
    assert result.bad_line == 4 and "not an audit entry" in result.reason
    with pytest.raises(AuditCorrupt, match=":4: not a JSON object"):
        list(log.entries())


def test_a_rehashed_edit_still_breaks_the_chain_at_the_next_line(tmp_path):
    from tau_tui.core.operations.audit import entry_hash

    path = tmp_path / "audit.jsonl"
    filled(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["target"] = "Node forged"
    lines[1]["hash"] = entry_hash(lines[1])  # a careful forger recomputes this line's hash...
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in lines))
    result = verify(path)  # ...but cannot re-sign it: the signed log names the edited line itself
    assert result.bad_line == 2 and "signature does not match" in result.reason


def test_missing_file_is_a_clean_failure(tmp_path):
    run = cli("audit", "verify", str(tmp_path / "nothing.jsonl"))
    assert run.returncode == 1 and "cannot read audit log" in run.stderr and "Traceback" not in run.stderr


def test_entries_carry_phase_identity_and_source(tmp_path):
    log = AuditLog(tmp_path / "a.jsonl", clock=fixed_clock, source="cli")
    entry = log.append("submit", "Job ns/x", ok=None, message="submission id 1", phase="intent", identity=IDENTITY)
    assert entry.phase == "intent" and entry.ok is None and entry.source == "cli"
    assert entry.identity == IDENTITY
    with pytest.raises(ValueError, match="phase"):
        log.append("submit", "Job ns/x", ok=True, message="", phase="after")


@pytest.mark.parametrize("text, secret", [
    ("Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc.def", "eyJhbGciOiJSUzI1NiJ9"),
    ("token=abcd1234efgh", "abcd1234efgh"),
    ('{"password": "hunter2hunter2", "user": "a"}', "hunter2hunter2"),
    ('{"kind":"Secret","data":{"apiToken":"c2VjcmV0dmFsdWU="}}', "c2VjcmV0dmFsdWU="),
    ("client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t", "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t"),
    ("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----", "MIGHAgEAMBMGByqGSM49"),
    ("my_secret: 's3cr3t value'", "s3cr3t value"),
])
def test_redaction(tmp_path, text, secret):
    assert secret not in redact(text)
    log = AuditLog(tmp_path / "a.jsonl", clock=fixed_clock)
    log.append("submit", "Job a/b", ok=False, message=text)
    assert secret not in (tmp_path / "a.jsonl").read_text()


def test_redaction_keeps_ordinary_text_and_structured_identity(tmp_path):
    assert redact("cordoned node h100-node-5; 3 pods evicted") == "cordoned node h100-node-5; 3 pods evicted"
    assert redact_value({"username": "u", "extra": {"token": ["x"]}}) == {"username": "u", "extra": {"token": "<redacted>"}}


def test_app_and_cli_writers_interleave_with_an_unbroken_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    code = ("import sys; from tau_tui.core.operations.audit import AuditLog\n"
            "log = AuditLog(sys.argv[1], source='cli')\n"
            "for i in range(50): log.append('submit', f'Job a/{i}', ok=True, message='ok')\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=Path(__file__).resolve().parents[2],
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
             for _ in range(3)]
    for proc in procs:
        assert proc.wait(timeout=RUN_BOUND) == 0
    result = verify(path)
    assert result.ok and result.entries == 150
