"""`tau-tui evidence ...` at the edges (issue #44, items 11 to 14): a bundle from a key retired or
rotated as compromised, members hidden after a header verify cannot read (which `tar -xzf` still
extracts), and records tied to their cluster (the demo's kept apart; an unreachable context never
exports another cluster's record).  Every check goes through the CLI, as a user runs it."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import socket
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tau_tui.cli import main
from tau_tui.core.operations.evidence.cluster_identity import ClusterIdentity
from tests.operations.evidence_support import REAL_CLUSTER, real_cluster_bundle, record_of

FAILED_RUN = ["eval-mmlu-0301", "-n", "team-nlp"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def keyed(tmp_path, monkeypatch, memory_keyring):
    """The user's key in an (in-memory) OS keyring."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return memory_keyring


# -- item 11: verify against key files says so --------------------------------------------------------

def test_a_bundle_checked_against_key_files_exits_4(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no keyring; files allowed (conftest)
    bundle = real_cluster_bundle(tmp_path / "b.tar.gz")
    code, out, err = run(capsys, "evidence", "verify", str(bundle))
    assert code == 4 and "OK: 6 files match the manifest" in out and "checked against key files" in err
    fp = json.loads(tarfile.open(bundle).extractfile("MANIFEST.sig").read())["key"]  # type: ignore[union-attr]
    assert run(capsys, "evidence", "verify", str(bundle), "--key", fp)[0] == 0  # the key the user named


# -- item 12: retired and compromised keys --------------------------------------------------------------

def test_a_retired_key_proves_only_what_it_signed_before_its_retirement(keyed, tmp_path, capsys):
    before = real_cluster_bundle(tmp_path / "before.tar.gz")  # the demo's capture time, 2025
    later = real_cluster_bundle(tmp_path / "later.tar.gz", captured_at=datetime(2099, 1, 1, tzinfo=UTC))
    assert run(capsys, "evidence", "verify", str(later))[0] == 0  # before the rotation, the key is current
    assert run(capsys, "audit", "rotate-key")[0] == 0
    code, out, _ = run(capsys, "evidence", "verify", str(before))
    assert code == 0 and "(your retired key)" in out
    code, out, err = run(capsys, "evidence", "verify", str(later))
    assert code == 1 and "OK" not in out
    assert "at 2099-01-01T00:00:00Z, after it was retired at" in err and "proves only what it signed before" in err


def test_a_key_rotated_as_compromised_proves_nothing(keyed, tmp_path, capsys):
    bundle = real_cluster_bundle(tmp_path / "b.tar.gz")
    fp = json.loads(tarfile.open(bundle).extractfile("MANIFEST.sig").read())["key"]  # type: ignore[union-attr]
    assert run(capsys, "audit", "rotate-key", "--compromised")[0] == 0
    for extra in ((), ("--key", fp)):
        code, out, err = run(capsys, "evidence", "verify", str(bundle), *extra)
        assert code == 1 and "OK" not in out and f"signed by key {fp}, which was rotated as compromised" in err


# -- item 13: verify reads the whole archive ------------------------------------------------------------

def _member(name: str, data: bytes = b"", link: str | None = None) -> bytes:
    info = tarfile.TarInfo(name)
    if link is not None:
        info.type, info.linkname = tarfile.SYMTYPE, link
    else:
        info.size = len(data)
    padding = b"\0" * (-len(data) % tarfile.BLOCKSIZE)
    return info.tobuf(tarfile.GNU_FORMAT) + data + padding


def _forged(bundle: Path, tail: bytes) -> Path:
    """The bundle's tar with its end-of-archive blocks replaced by ``tail`` and two zero blocks."""
    raw = gzip.decompress(bundle.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        end = tar.getmembers()[-1]
        end_of_members = end.offset_data + -(-end.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
    out = bundle.with_name("forged.tar.gz")
    out.write_bytes(gzip.compress(raw[:end_of_members] + tail + b"\0" * 2 * tarfile.BLOCKSIZE))
    return out


def test_members_after_a_header_verify_cannot_read_fail_it_though_tar_extracts_them(keyed, tmp_path, capsys):
    bundle = real_cluster_bundle(tmp_path / "b.tar.gz")
    assert run(capsys, "evidence", "verify", str(bundle))[0] == 0
    record = json.loads(tarfile.open(bundle).extractfile("record.json").read())  # type: ignore[union-attr]
    assert record["outcome"] == "failed"
    lie = json.dumps({**record, "outcome": "succeeded"}).encode()
    junk = bytearray(_member("x"))
    junk[148:156] = b"0000000\0"  # a header whose checksum is wrong: Python's tarfile ends the archive there
    forged = _forged(bundle, bytes(junk) + _member("record.json", lie) + _member("escape", link="../../outside"))
    code, out, err = run(capsys, "evidence", "verify", str(forged))
    assert code == 1 and "OK" not in out
    assert "data after the archive's last member" in err and "not zero padding" in err
    if shutil.which("tar"):  # the oracle: GNU tar skips to the next header and extracts both (exit 2, files there)
        target = tmp_path / "extracted"
        target.mkdir()
        subprocess.run(["tar", "-xzf", str(forged), "-C", str(target)], capture_output=True, timeout=60)
        assert json.loads((target / "record.json").read_text())["outcome"] == "succeeded"
        assert (target / "escape").is_symlink()


def test_zero_padding_after_the_last_member_still_verifies(keyed, tmp_path, capsys):
    bundle = real_cluster_bundle(tmp_path / "b.tar.gz")
    padded = _forged(bundle, b"\0" * 20 * tarfile.BLOCKSIZE)
    assert run(capsys, "evidence", "verify", str(padded))[0] == 0


# -- item 14: records are tied to their cluster ----------------------------------------------------------

def test_a_demo_export_stays_out_of_the_real_store_and_never_verifies_as_real(keyed, tmp_path, capsys):
    bundle = tmp_path / "demo.tar.gz"
    code, out, _ = run(capsys, "evidence", "export", *FAILED_RUN, "--demo", "-o", str(bundle))
    assert code == 0 and "of the SIMULATED (demo) cluster demo:" in out
    assert json.loads(run(capsys, "evidence", "list", "-o", "json")[1])["total"] == 0
    assert json.loads(run(capsys, "evidence", "list", "--demo", "-o", "json")[1])["total"] == 1
    assert keyed.entries == {}  # neither the user's key nor a head was touched: the demo has its own
    code, out, err = run(capsys, "evidence", "verify", str(bundle))
    assert code == 1 and "OK" not in out and "a bundle of the simulated (demo) cluster" in err
    code, out, err = run(capsys, "evidence", "verify", "--demo", str(bundle))
    assert code == 4 and "OK" in out and "DEMO" in err
    code, _, err = run(capsys, "evidence", "verify", "--demo", str(real_cluster_bundle(tmp_path / "real.tar.gz")))
    assert code == 1 and "not a bundle of the simulated (demo) cluster" in err


def _unreachable_context(tmp_path, monkeypatch) -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        server = f"https://127.0.0.1:{probe.getsockname()[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: prod, cluster: {{server: "{server}", insecure-skip-tls-verify: true}}}}]
users: [{{name: me, user: {{token: not-a-secret}}}}]
contexts: [{{name: prod, context: {{cluster: prod, user: me, namespace: team-nlp}}}}]
current-context: prod
""")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    return server


def test_an_unreachable_context_never_exports_the_demos_or_another_clusters_record(keyed, tmp_path, monkeypatch,
                                                                                   capsys):
    server = _unreachable_context(tmp_path, monkeypatch)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert run(capsys, "evidence", "export", *FAILED_RUN, "--demo", "-o", str(tmp_path / "demo.tar.gz"))[0] == 0
    code, _, err = run(capsys, "evidence", "export", *FAILED_RUN, "--context", "prod", "-o", str(out_dir))
    assert code == 1 and "cannot read team-nlp/eval-mmlu-0301 from the cluster" in err  # not the demo's record
    record_of(REAL_CLUSTER)  # another real cluster's record of the same run
    code, _, err = run(capsys, "evidence", "export", *FAILED_RUN, "--context", "prod", "-o", str(out_dir))
    assert code == 1 and f"it is of the cluster at {REAL_CLUSTER.server}, not {server}" in err
    assert list(out_dir.iterdir()) == []


def test_an_unreachable_context_exports_a_record_of_its_own_cluster_naming_it(keyed, tmp_path, monkeypatch, capsys):
    server = _unreachable_context(tmp_path, monkeypatch)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    record_of(ClusterIdentity(server, "3f1e2d4c-0000-4000-8000-00000000abcd"))  # captured while it was reachable
    code, out, err = run(capsys, "evidence", "export", *FAILED_RUN, "--context", "prod", "-o", str(out_dir))
    assert code == 0 and "exporting the record of the same cluster" in err
    assert f"of the cluster at {server} (kube-system uid 3f1e2d4c-0000-4000-8000-00000000abcd)" in out
    (bundle,) = out_dir.iterdir()
    code, out, _ = run(capsys, "evidence", "verify", str(bundle))
    assert code == 0 and f"of the cluster at {server} (kube-system uid 3f1e2d4c" in out
