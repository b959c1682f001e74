"""A ``--record`` file keeps no secret and no one else can read it: the app records the simulated
cluster seeded with every secret form the redactor knows, and none of them is in the file."""

from __future__ import annotations

import base64
import json
import os
import stat
import zlib

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.core.operations.recording.writer import SessionRecorder
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tests.app.helpers import async_test, settle, settle_until
from tests.scenarios import demo_backend

#: Each secret form, as seeded, and the value that must not reach the file.
SECRETS = {
    "server URL with user:password@ in a connection message": "kubepw-Zq81",
    "client-key-data": "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0N",
    "env value inside last-applied-configuration": "hf_lastAppliedSecret0042",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "GITHUB_PAT": "ghp_patSecretValue0000111122223333",
    "NGC_KEY": "nvapi-ngcSecretValue-9876",
    "URL with credentials": "pgPassw0rd-x1",
    "--password X as two arguments": "twoArgSecret-55",
    "TAU_PAYLOAD": base64.b64encode(b"#!/bin/sh\nexport HF_TOKEN=hf_inThePayload\n").decode(),
}


def seed(world) -> None:
    last_applied = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {"containers": [
        {"name": "main", "env": [{"name": "HF_TOKEN", "value": SECRETS["env value inside last-applied-configuration"]}]}]}}}})
    world.store.put(ResourceKind.JOB.type, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "leaky", "namespace": "team-nlp", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": last_applied,
            "client-key-data": SECRETS["client-key-data"],
            "note": f"results go to postgres://trainer:{SECRETS['URL with credentials']}@db.internal:5432/runs"}},
        "spec": {"suspend": True, "template": {"spec": {"containers": [{
            "name": "main", "image": "python:3.12",
            "args": ["train.py", "--password", SECRETS["--password X as two arguments"], "--epochs", "3"],
            "env": [{"name": name, "value": SECRETS[name]} for name in ("AWS_ACCESS_KEY_ID", "GITHUB_PAT", "NGC_KEY", "TAU_PAYLOAD")],
        }]}}},
    })


def recorded_text(path) -> str:
    return zlib.decompress(path.read_bytes(), wbits=31).decode()


async def recorded_through_an_outage(tmp_path, world, backend, outage: str) -> str:
    """The text of the app's `--record` file of ``backend``, through an API outage whose message is
    ``outage``, until past the next keyframe."""
    path = tmp_path / "session.rec"
    app = TauApp(backend, record=str(path), settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"), evidence=EvidenceStore(tmp_path / "evidence.sqlite3"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle_until(pilot, lambda: app.session_recorder is not None)
        world.advance(30)
        world.api_outage(outage)
        world.advance(10)
        await settle(pilot)
        world.api_restore()
        world.advance(70)  # past the next keyframe
        await settle(pilot)
        await app.action_quit()
    return recorded_text(path)


@async_test
async def test_the_app_records_none_of_the_seeded_secrets(tmp_path):
    world, backend = demo_backend()
    seed(world)
    server_password = SECRETS["server URL with user:password@ in a connection message"]
    text = await recorded_through_an_outage(
        tmp_path, world, backend, f"Get https://admin:{server_password}@10.0.0.1:6443/api: dial tcp: connection refused")
    assert "leaky" in text and "10.0.0.1:6443" in text  # the object and the message are recorded ...
    leaked = [form for form, secret in SECRETS.items() if secret in text]
    assert leaked == []  # ... without any of the secrets
    assert "hf_inThePayload" not in text


def test_a_recording_is_created_0600_whatever_the_umask(tmp_path):
    _, backend = demo_backend()
    old = os.umask(0o022)
    try:
        recorder = SessionRecorder(backend, tmp_path / "s.rec", source="SimulatedBackend").start()
        mode = stat.S_IMODE(os.stat(tmp_path / "s.rec").st_mode)  # from creation on, not after a chmod
        recorder.close()
    finally:
        os.umask(old)
        backend.close()
    assert mode == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "s.rec").st_mode) == 0o600
