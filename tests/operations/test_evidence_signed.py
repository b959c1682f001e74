"""Signed evidence bundles ("The audit log and evidence bundles can be rewritten"): the
manifest is signed with the user's Ed25519 key and names its fingerprint, so `tau-tui evidence
verify` fails on a recomputed manifest, a file dropped with its entry, another signer and an
unsigned bundle; `--key` names the signer to expect."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from tau_tui.cli import main
from tests.operations.evidence_support import REAL_CLUSTER, real_cluster_bundle

FAILED_RUN = ["eval-mmlu-0301", "-n", "team-nlp"]


@pytest.fixture
def bundle(tmp_path, monkeypatch, memory_keyring, capsys) -> Path:
    """A bundle of a real cluster's record (tests/operations/evidence_support.py) signed with a key
    kept in an in-memory keyring."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return real_cluster_bundle(tmp_path / "b.tar.gz")


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def write_tar(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def recompute_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    """What a forger without the key does: rewrite the manifest to match the files (signature kept)."""
    manifest = json.loads(files["MANIFEST.json"])
    data = {k: v for k, v in files.items() if k not in ("MANIFEST.json", "MANIFEST.sig")}
    manifest["files"] = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in sorted(data.items())]
    manifest["required"] = sorted(data)
    return {**files, "MANIFEST.json": (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()}


def re_sign(files: dict[str, bytes]) -> tuple[dict[str, bytes], str]:
    """What a forger with a key of their own does: sign the recomputed manifest with it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from tau_tui.core.operations.audit_keys import fingerprint

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    fp = fingerprint(public)
    manifest = json.loads(files["MANIFEST.json"])
    manifest["signer"]["key"] = fp
    raw = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    sig = {"key": fp, "publicKey": base64.b64encode(public).decode(), "signature": base64.b64encode(key.sign(raw)).decode()}
    return {**files, "MANIFEST.json": raw, "MANIFEST.sig": json.dumps(sig).encode()}, fp


def verify_cli(path: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["evidence", "verify", str(path), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def own_fingerprint(memory_keyring) -> str:
    from tau_tui.core.operations.audit_keys import fingerprint

    keys = json.loads(memory_keyring.entries[("tau-tui", "signing-public-keys")])
    (fp,) = [fp for fp, entry in keys.items() if not entry["retired"]]
    assert fingerprint(base64.b64decode(keys[fp]["public"])) == fp
    return fp


def test_an_exported_bundle_is_signed_by_the_users_key_and_verifies(bundle, memory_keyring, capsys):
    files = members(bundle)
    fp = own_fingerprint(memory_keyring)
    manifest = json.loads(files["MANIFEST.json"])
    assert manifest["signer"]["key"] == fp and json.loads(files["MANIFEST.sig"])["key"] == fp
    assert set(manifest["required"]) == set(files) - {"MANIFEST.json", "MANIFEST.sig"}
    code, out, _ = verify_cli(bundle, capsys)
    assert code == 0 and (f"OK: 6 files match the manifest (run team-nlp/eval-mmlu-0301, failed, of the cluster at "
                          f"{REAL_CLUSTER.server} (kube-system uid {REAL_CLUSTER.kube_system_uid})); signed by {fp} "
                          "(your key)") in out
    private = memory_keyring.entries[("tau-tui", "signing-key")]
    assert private.encode() not in bundle.read_bytes() and private not in out


def test_an_edited_record_with_a_recomputed_manifest_fails(bundle, tmp_path, capsys):
    files = members(bundle)
    record = json.loads(files["record.json"])
    assert record["outcome"] == "failed"
    record["outcome"] = "succeeded"  # a failed run turned "succeeded"
    forged = write_tar(tmp_path / "edited.tar.gz", recompute_manifest({**files, "record.json": json.dumps(record).encode()}))
    code, out, err = verify_cli(forged, capsys)
    assert code == 1 and "signature does not match the manifest" in err and "OK" not in out


def test_a_file_dropped_with_its_manifest_entry_fails(bundle, tmp_path, capsys):
    files = members(bundle)
    del files["events.json"]
    forged = write_tar(tmp_path / "dropped.tar.gz", recompute_manifest(files))
    code, out, err = verify_cli(forged, capsys)
    assert code == 1 and "signature does not match the manifest" in err
    assert "missing: events.json (a bundle must hold it" in err and "OK" not in out


def test_a_bundle_re_signed_by_another_key_is_named(bundle, tmp_path, memory_keyring, capsys):
    files = members(bundle)
    record = json.loads(files["record.json"])
    record["outcome"] = "succeeded"
    forged_files, forged_fp = re_sign(recompute_manifest({**files, "record.json": json.dumps(record).encode()}))
    forged = write_tar(tmp_path / "resigned.tar.gz", forged_files)
    code, _, err = verify_cli(forged, capsys)
    assert code == 1 and f"signed by another key: {forged_fp}, which is not one of yours" in err
    code, _, err = verify_cli(forged, capsys, "--key", own_fingerprint(memory_keyring))
    assert code == 1 and f"signed by another key: {forged_fp}, not the key you named ({own_fingerprint(memory_keyring)})" in err


def test_key_names_the_expected_signer_by_fingerprint_or_public_key(bundle, memory_keyring, monkeypatch, capsys):
    fp = own_fingerprint(memory_keyring)
    public = json.loads(members(bundle)["MANIFEST.sig"])["publicKey"]
    memory_keyring.entries.clear()  # someone else, without the signer's keys, checks it
    assert verify_cli(bundle, capsys)[0] == 1
    for key in (fp, public):
        code, out, _ = verify_cli(bundle, capsys, "--key", key)
        assert code == 0 and f"signed by {fp} (the key you named)" in out
    code, _, err = verify_cli(bundle, capsys, "--key", "not a key")
    assert code == 1 and "--key is neither" in err


def test_an_unsigned_bundle_cannot_be_proven_and_fails(bundle, tmp_path, capsys):
    files = members(bundle)
    manifest = json.loads(files.pop("MANIFEST.sig") and files["MANIFEST.json"])
    manifest["format"] = "tau.azure.com/evidence-bundle/v1"  # as bundles were written before signing
    del manifest["signer"], manifest["required"]
    old = write_tar(tmp_path / "v1.tar.gz", {**files, "MANIFEST.json": json.dumps(manifest).encode()})
    code, out, err = verify_cli(old, capsys)
    assert code == 1 and "unsigned: cannot prove" in err and "OK" not in out


def test_a_removed_or_garbled_signature_is_refused_with_a_reason(bundle, tmp_path, capsys):
    files = members(bundle)
    stripped = write_tar(tmp_path / "stripped.tar.gz", {k: v for k, v in files.items() if k != "MANIFEST.sig"})
    code, _, err = verify_cli(stripped, capsys)
    assert code == 1 and "the signature was removed" in err
    for garbage in (b"\xff\xfe not json", b'{"key": 1}', json.dumps({"key": "SHA256:x", "publicKey": "AAAA",
                                                                     "signature": "%%"}).encode(), b"x" * 10_000):
        garbled = write_tar(tmp_path / "garbled.tar.gz", {**files, "MANIFEST.sig": garbage})
        code, _, err = verify_cli(garbled, capsys)
        assert code == 1 and str(garbled) in err and "MANIFEST.sig" in err and len(err) < 1000


def test_a_bundle_signed_before_a_key_rotation_still_verifies(bundle, tmp_path, memory_keyring, capsys):
    old_fp = own_fingerprint(memory_keyring)
    assert main(["audit", "rotate-key", str(tmp_path / "audit.jsonl")]) == 0
    capsys.readouterr()
    assert own_fingerprint(memory_keyring) != old_fp
    code, out, _ = verify_cli(bundle, capsys)
    assert code == 0 and f"signed by {old_fp} (your retired key)" in out
