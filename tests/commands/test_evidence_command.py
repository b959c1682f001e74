"""`tau-tui evidence list|export|verify` on the simulated backend (--demo): exit codes, messages,
and no traceback on a bundle that is not one.  The demo's records and key are its own: its bundles
verify with `--demo` only, and exit 4 (the demo's key proves nothing about a real cluster)."""

from __future__ import annotations

import io
import json
import tarfile

from tau_tui.cli import main

FAILED = ["eval-mmlu-0301", "-n", "team-nlp"]


def export(tmp_path, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["evidence", "export", *FAILED, "--demo", "-o", str(tmp_path / "b.tar.gz"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_export_then_verify_then_list(tmp_path, capsys):
    code, out, err = export(tmp_path, capsys)
    assert code == 0, err
    assert "evidence of Job team-nlp/eval-mmlu-0301 (failed, of the SIMULATED (demo) cluster demo:" in out
    assert "6 files; manifest sha256" in out
    assert main(["evidence", "verify", "--demo", str(tmp_path / "b.tar.gz")]) == 4
    captured = capsys.readouterr()
    assert "OK: 6 files match the manifest" in captured.out and "DEMO" in captured.err
    assert main(["evidence", "list", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 0  # the demo's records are kept apart
    assert main(["evidence", "list", "--demo", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == 1 and doc["records"][0] | {"name": "eval-mmlu-0301", "outcome": "failed"} == doc["records"][0]
    assert main(["evidence", "list", "--demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["NAMESPACE", "NAME", "KIND", "OUTCOME"] and "eval-mmlu-0301" in lines[1]


def test_export_refuses_to_overwrite_without_force(tmp_path, capsys):
    assert export(tmp_path, capsys)[0] == 0
    code, _, err = export(tmp_path, capsys)
    assert code == 1 and "already exists" in err and "--force" in err
    assert export(tmp_path, capsys, "--force")[0] == 0


def test_export_of_an_unfinished_or_unknown_run_says_why(tmp_path, capsys):
    code = main(["evidence", "export", "llama-70b-sft", "-n", "taugrid-default", "--demo", "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "not finished" in err
    code = main(["evidence", "export", "nope", "-n", "team-nlp", "--demo", "-o", str(tmp_path)])
    assert code == 1 and "no Job or RayJob team-nlp/nope" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_verify_names_an_edited_file_and_refuses_garbage_without_a_traceback(tmp_path, capsys):
    assert export(tmp_path, capsys)[0] == 0
    with tarfile.open(tmp_path / "b.tar.gz", "r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    with tarfile.open(tmp_path / "edited.tar.gz", "w:gz") as tar:
        for name, data in files.items():
            data = data + b"\n# edited\n" if name == "manifests.yaml" else data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert main(["evidence", "verify", "--demo", str(tmp_path / "edited.tar.gz")]) == 1
    err = capsys.readouterr().err
    assert "edited: manifests.yaml" in err and "Traceback" not in err
    (tmp_path / "junk.tar.gz").write_bytes(b"\x00" * 100)
    assert main(["evidence", "verify", str(tmp_path / "junk.tar.gz")]) == 1
    err = capsys.readouterr().err
    assert "not verified: not a readable .tar.gz" in err and "Traceback" not in err
    assert main(["evidence", "verify", str(tmp_path / "missing.tar.gz")]) == 1
    assert "not verified: no such file" in capsys.readouterr().err
