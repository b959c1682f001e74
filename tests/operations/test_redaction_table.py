"""The one redactor (core/operations/redaction.py): every pattern in its table has a case, each
secret form the app has met is removed, ordinary text is kept, env values keep only their names,
and recordings, evidence and the audit log all use it."""

from __future__ import annotations

import json

import pytest
import yaml

from tau_tui.core.operations import audit, redaction
from tau_tui.core.operations.evidence import capture, submission
from tau_tui.core.operations.recording import writer
from tau_tui.core.operations.redaction import (
    REDACTED,
    TEXT_PATTERNS,
    redact,
    redact_object,
    redact_text,
    redact_yaml_values,
)

#: Free text, one case per pattern of the table (the table's own example is checked too).
TEXT_CASES = {
    "private key": ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkey\n-----END EC PRIVATE KEY-----", "MHcCAQEEIBkey"),
    "bearer or basic authorization": ("curl -H 'Authorization: Bearer abcdefgh.ijkl.mnop'", "abcdefgh.ijkl.mnop"),
    "credentials in a URL, password with / # ?": ("aws s3 cp s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG#x?y@bucket/a .",
                                                  "wJalrXUtnFEMI/K7MDENG#x?y"),
    "credentials in a URL": ("cannot reach https://admin:kubepw-Zq81@10.0.0.1:6443: connection refused", "kubepw-Zq81"),
    "authorization header, any scheme": ("curl -H 'Authorization: token ghp_innocentLooking0123456789'",
                                         "ghp_innocentLooking0123456789"),
    "user:password after -u or --user": ("curl -u trainer:pl41nPw https://registry.internal/v2/", "pl41nPw"),
    "well-known token shapes": ("echo glpat-abcdefghijklmnopqrst12 > ~/.netrc", "glpat-abcdefghijklmnopqrst12"),
    "env item in JSON, name first": ('{"name":"HF_TOKEN","value":"hf_lastApplied"}', "hf_lastApplied"),
    "env item in JSON, value first": ('{"value": "nvapi-x1", "name": "NGC_KEY"}', "nvapi-x1"),
    "credential field in JSON": ('{"client-key-data": "LS0tS0VZ", "server": "https://h"}', "LS0tS0VZ"),
    "credential flag and its argument": ("python train.py --password twoArgSecret-55 --epochs 3", "twoArgSecret-55"),
    "credential key and value": ("GITHUB_PAT=ghp_patSecret NGC_KEY: nvapi-y", "ghp_patSecret"),
}


def test_every_pattern_of_the_table_has_a_case():
    assert sorted(TEXT_CASES) == sorted(p.name for p in TEXT_PATTERNS)


@pytest.mark.parametrize("pattern", TEXT_PATTERNS, ids=lambda p: p.name)
def test_each_pattern_removes_its_case_and_its_example(pattern):
    text, secret = TEXT_CASES[pattern.name]
    assert pattern.regex.search(text)
    assert secret not in redact(text) and REDACTED.strip("<>") in redact(text)
    assert pattern.secret not in redact(pattern.example)


@pytest.mark.parametrize(("text", "secret"), [
    pytest.param("DATABASE_URL=postgres://u:pgPassw0rd@db:5432/x", "pgPassw0rd", id="postgres URL"),
    pytest.param("clone https://ghp_tokenAsUser@github.com/org/repo", "ghp_tokenAsUser", id="token as URL user"),
    pytest.param("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", id="AWS_ACCESS_KEY_ID"),
    pytest.param("NGC_KEY=nvapi-abc", "nvapi-abc", id="NGC_KEY"),
    pytest.param("SERVICE_KEY_ID=svc-abc", "svc-abc", id="a _KEY_ID name"),
    pytest.param("GITHUB_PAT: ghp_x", "ghp_x", id="GITHUB_PAT"),
    pytest.param("--api-key 'sk-two words'", "sk-two words", id="quoted flag argument"),
])
def test_secret_forms_in_free_text(text, secret):
    assert secret not in redact(text)


@pytest.mark.parametrize("text", [
    "cordoned node h100-node-5; 3 pods evicted",
    "Get https://10.0.0.1:6443/api/v1/nodes: dial tcp: connection refused",
    "python train.py --epochs 3 --lr 0.1",
    "mail me at ops@example.com",
])
def test_ordinary_text_is_kept(text):
    assert redact(text) == text


def test_objects_lose_every_secret_form():
    last_applied = json.dumps({"spec": {"containers": [{"env": [{"name": "HF_TOKEN", "value": "hf_inAnnotation"}]}]}}) + "\n"
    obj = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied,
                                     "client-key-data": "LS0tS0VZREFUQQ=="}},
        "users": [{"name": "u", "user": {"client-key-data": "LS0tS0VZ2", "client-certificate-data": "Q0VSVA=="}}],
        "containers": [{"args": ["--password", "twoArgSecret", "--epochs", "3"],
                        "env": [{"name": n, "value": f"secret-of-{n}"}
                                for n in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "NGC_KEY", "TAU_PAYLOAD")]
                        + [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                           {"name": "EPOCHS", "value": "3"}]}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    out = json.dumps(redact_object(obj))
    for secret in ("hf_inAnnotation", "LS0tS0VZREFUQQ==", "LS0tS0VZ2", "twoArgSecret", "secret-of-"):
        assert secret not in out
    kept = redact_object(obj)
    assert kept["containers"][0]["env"][-2]["valueFrom"] == {"secretKeyRef": {"name": "hf", "key": "token"}}
    assert kept["containers"][0]["env"][-1] == {"name": "EPOCHS", "value": REDACTED}  # env values: names only
    assert kept["containers"][0]["args"][2:] == ["--epochs", "3"]
    assert kept["tolerations"] == obj["tolerations"]
    assert json.loads(kept["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])["spec"]


def test_text_redaction_takes_a_private_key_block_whole():
    text = "a: 1\nkey: |\n  -----BEGIN PRIVATE KEY-----\n  MIIEvQIBADANBg\n  -----END PRIVATE KEY-----\nb: 2"
    out = redact_text(text)
    assert "MIIEvQIBADANBg" not in out and out.startswith("a: 1") and out.endswith("b: 2")


def test_recordings_evidence_and_the_audit_log_share_the_one_redactor():
    assert audit.redact is redaction.redact and audit.redact_value is redaction.redact_value
    assert writer.redact is redaction.redact and writer.redact_object is redaction.redact_object
    assert capture.redact_object is redaction.redact_object and capture.redact_text is redaction.redact_text
    assert submission.redact_object is redaction.redact_object


def test_a_secret_keeps_the_names_of_its_data_only():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf"},
              "data": {"token": "aGZfc2VjcmV0"}, "stringData": {"password": "plain-pw", "note": "plain-note"}}
    out = redact_object(secret)
    assert out["data"] == {"token": REDACTED} and out["stringData"] == {"password": REDACTED, "note": REDACTED}
    assert out["metadata"] == {"name": "hf"}
    listed = redact_object({"kind": "List", "items": [secret]})  # as kubectl apply -f of a List leaves it
    assert "plain-note" not in json.dumps(listed) and "aGZfc2VjcmV0" not in json.dumps(listed)


def test_a_rayjobs_runtime_env_keeps_its_env_var_names_only():
    spec = {"runtimeEnvYAML": "env_vars:\n  RUN_SALT: innocent-value-1\n  PYTHONPATH: /app\npip: [torch]\n"}
    out = yaml.safe_load(redact_object(spec)["runtimeEnvYAML"])
    assert out == {"env_vars": {"RUN_SALT": REDACTED, "PYTHONPATH": REDACTED}, "pip": ["torch"]}


def test_a_tau_yaml_loses_its_env_values_and_keeps_every_other_byte():
    text = ("# my run\nrun:\n  name: train  # keep this comment\nruntime:\n  env:\n    RUN_SALT: innocent-value-2\n"
            "    NOTES: |\n      multi\n      line\n    EPOCHS: \"3\"\n  env_secret:\n    HF_TOKEN: hf/token\n  pip: [x]\n")
    out = redact_yaml_values(text, (("runtime", "env"),))
    assert out is not None
    assert "innocent-value-2" not in out and "multi" not in out and '"3"' not in out
    assert out.startswith("# my run\nrun:\n  name: train  # keep this comment\n")
    runtime = yaml.safe_load(out)["runtime"]
    assert runtime["env"] == {"RUN_SALT": REDACTED, "NOTES": REDACTED, "EPOCHS": REDACTED} and runtime["pip"] == ["x"]
    assert list(runtime["env_secret"]) == ["HF_TOKEN"]  # a Secret reference (its value: the patterns decide)
    assert redact_yaml_values("a: [unclosed", (("runtime", "env"),)) is None
