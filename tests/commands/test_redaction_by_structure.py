"""Redaction by structure first (issue #44, item 15): environment values never reach an evidence
bundle or a session recording, whatever their names (in the spec and inside
`last-applied-configuration`: names only); then patterns for free text catch the forms the issue
found (a URL password holding / # ?, `Authorization: token ghp_…`, `curl -u user:pw`).

Through the CLI (`tau-tui evidence export --demo SCENARIO`) and the app's `--record`, on a simulated
cluster whose scenario seeds each form."""

from __future__ import annotations

import json
import tarfile

import yaml

from tau_tui.cli import main
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.app.helpers import async_test
from tests.operations.test_recording_secrets import recorded_through_an_outage
from tests.scenarios import one_queue_scenario

#: Each form, and the secret it must not leave behind.
SECRETS = {
    "env value under an innocent name": "innocentEnvValue-7731",
    "env value inside last-applied-configuration": "lastAppliedEnv-9911",
    "URL password holding / # ?": "wJalrXUtnFEMI/K7MDENG#x?y",
    "Authorization: token": "ghp_innocentLooking0123456789",
    "curl -u user:pw": "pl41nPw",
    "server URL password holding /": "kube/pw#7",
}
LOG_LINES = [
    f"aws s3 cp s3://AKIAIOSFODNN7EXAMPLE:{SECRETS['URL password holding / # ?']}@bucket/ckpt ./ckpt",
    f"curl -H 'Authorization: token {SECRETS['Authorization: token']}' https://api.github.com/user",
    f"curl -u trainer:{SECRETS['curl -u user:pw']} https://registry.internal/v2/",
]


def scenario(tmp_path) -> str:
    spec = yaml.safe_load(one_queue_scenario("leaky", seed=5, warmup_seconds=400, nodes=1, cpu=64, memory="512Gi"))
    spec["namespaces"] = ["default", "kube-system", "team-a"]
    last_applied = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {"containers": [
        {"name": "trainer", "env": [{"name": "RUN_SALT", "value": SECRETS["env value inside last-applied-configuration"]}]}]}}}})
    spec["jobs"] = [{"at": -390, "kind": "Job", "name": "leaky", "namespace": "team-a", "queue": "q", "gpus": 8,
                     "durationSeconds": 120, "outcome": "Failed",
                     "env": {"RUN_SALT": SECRETS["env value under an innocent name"], "EPOCHS": "3"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}}]
    spec["logs"] = [{"at": -360 + i, "job": "leaky", "namespace": "team-a", "text": line} for i, line in enumerate(LOG_LINES)]
    spec["timeline"] = [{"at": -300, "apiOutage": {"message": "Get https://admin:" + SECRETS["server URL password holding /"]
                                                               + "@10.0.0.1:6443/api: connection refused"}},
                        {"at": -290, "apiRestore": {}}]
    path = tmp_path / "leaky.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(path)


def test_an_evidence_bundle_keeps_env_names_only_and_no_secret_from_the_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    bundle = tmp_path / "b.tar.gz"
    code = main(["evidence", "export", "leaky", "-n", "team-a", "--demo", scenario(tmp_path), "-o", str(bundle)])
    assert code == 0, capsys.readouterr().err
    with tarfile.open(bundle) as tar:
        files = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}  # type: ignore[union-attr]
    everything = "\n".join(files.values())
    assert "RUN_SALT" in files["manifests.yaml"] and "EPOCHS" in files["manifests.yaml"]  # names are kept
    assert "s3://" in files["logs/run.log"] and "curl -u trainer:" in files["logs/run.log"]  # so is the text around
    leaked = [form for form, secret in SECRETS.items() if secret in everything]
    assert leaked == []


@async_test
async def test_a_session_recording_keeps_env_names_only_and_no_secret(tmp_path):
    world = build_world(scenario(tmp_path))
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    text = await recorded_through_an_outage(
        tmp_path, world, backend, "Get https://admin:" + SECRETS["server URL password holding /"] + "@10.0.0.1:6443/api: refused")
    assert "leaky" in text and "RUN_SALT" in text and "10.0.0.1:6443" in text
    leaked = [form for form, secret in SECRETS.items() if secret in text]
    assert leaked == []
