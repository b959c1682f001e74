"""Local files never leave the machine by accident, and nothing the user points at can hang or flood a read.

Symbolic links out of the config's directory (or any link inside run.working_dir) are refused before
anything is read; `tau-tui init` never writes through a link; a FIFO or /dev/zero is refused before it
is opened for reading (those run the CLI in a subprocess with a timeout, so a regression fails
instead of hanging the suite).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_tui.core.runconfig import yamlsource
from tests.data.cases import DATA, run_cli

EMPTY_PROFILES = str(DATA / "profiles" / "empty.yaml")
SECRET = "-----BEGIN PRIVATE KEY----- not-for-the-cluster"
JOB = """\
name: link-run
image: python:3.12-slim
entrypoint: {entry}
compute:
  gpus: 0
policy:
  namespace: ray
  queue: q
"""
RAYJOB = """\
name: link-ray
engine: rayjob
entrypoint: train.py
run:
  working_dir: {working_dir}
compute:
  workers: 1
  gpus_per_worker: 0
policy:
  namespace: ray
  queue: q
"""
SUBPROCESS_TIMEOUT_S = 120  # a hang fails the test; a normal run takes about a second


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A project directory and, beside it, a directory with a secret the project must never carry."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "id_rsa").write_text(SECRET)
    (outside / "lib").mkdir()
    (outside / "lib" / "train.py").write_text(SECRET)
    return project, outside


def _render(config: Path) -> tuple[int, str, str]:
    return run_cli(["render", str(config), "--profiles", EMPTY_PROFILES])


def _refused(config: Path, fragment: str) -> str:
    code, out, err = _render(config)
    assert code == 2, out[:500] + err
    assert out == ""
    assert SECRET not in err and "Traceback" not in err and "unexpected error" not in err
    assert fragment in err
    assert (f"{config.name}:3:1 entrypoint" in err) or ("run.working_dir" in err)
    return err


def test_entrypoint_symlink_to_a_file_outside_is_refused(layout):
    project, outside = layout
    (project / "train.py").symlink_to(outside / "id_rsa")
    (project / "tau.yaml").write_text(JOB.format(entry="train.py"))
    err = _refused(project / "tau.yaml", "leads outside")
    assert run_cli(["validate", str(project / "tau.yaml")])[0] == 2
    assert "never follows a symbolic link out of it" in err


def test_entrypoint_inside_a_symlinked_directory_is_refused(layout):
    project, outside = layout
    (project / "lib").symlink_to(outside / "lib", target_is_directory=True)
    (project / "tau.yaml").write_text(JOB.format(entry="lib/train.py"))
    _refused(project / "tau.yaml", "leads outside")


def test_entrypoint_symlink_that_stays_inside_is_allowed(layout):
    project, _ = layout
    (project / "real.py").write_text("print('ok')\n")
    (project / "train.py").symlink_to("real.py")
    (project / "tau.yaml").write_text(JOB.format(entry="train.py"))
    code, out, err = _render(project / "tau.yaml")
    assert code == 0, err
    assert "tau.azure.com/payload-digest" in out


def _rayjob_project(project: Path, working_dir: str = "src") -> Path:
    src = project / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text("print('train')\n")
    (project / "tau.yaml").write_text(RAYJOB.format(working_dir=working_dir))
    return src


def test_rayjob_project_renders_without_links(layout):
    project, _ = layout
    _rayjob_project(project)
    code, out, err = _render(project / "tau.yaml")
    assert code == 0, err


@pytest.mark.parametrize("kind", ["file-outside", "file-inside", "dir-outside", "dangling"])
def test_any_symlink_inside_the_working_dir_is_refused(layout, kind):
    project, outside = layout
    src = _rayjob_project(project)
    link = src / "data"
    if kind == "file-outside":
        link.symlink_to(outside / "id_rsa")
    elif kind == "file-inside":
        link.symlink_to(src / "train.py")
    elif kind == "dir-outside":
        link.symlink_to(outside / "lib", target_is_directory=True)
    else:
        link.symlink_to(outside / "missing")
    err = _refused(project / "tau.yaml", "is a symbolic link")
    assert "'data'" in err


def test_a_symlink_excluded_from_the_project_is_not_read(layout):
    project, outside = layout
    src = _rayjob_project(project)
    (src / "data").symlink_to(outside / "id_rsa")
    config = RAYJOB.format(working_dir="src").replace("  working_dir: src\n", "  working_dir: src\n  working_dir_excludes: [data]\n")
    (project / "tau.yaml").write_text(config)
    code, out, err = _render(project / "tau.yaml")
    assert code == 0, err
    assert SECRET not in out


def test_working_dir_symlinked_outside_is_refused(layout):
    project, outside = layout
    (outside / "lib" / "train.py").write_text("print('x')\n")
    (project / "src").symlink_to(outside / "lib", target_is_directory=True)
    (project / "tau.yaml").write_text(RAYJOB.format(working_dir="src"))
    code, out, err = _render(project / "tau.yaml")
    assert code == 2 and "leads outside" in err and "run.working_dir" in err


def test_init_never_writes_through_a_dangling_symlink(tmp_path):
    target = tmp_path / "new"
    target.mkdir()
    elsewhere = tmp_path / "elsewhere.yaml"
    (target / "tau.yaml").symlink_to(elsewhere)
    code, out, err = run_cli(["init", str(target)])
    assert code == 0
    assert not elsewhere.exists(), "init followed the link and wrote outside the directory"
    assert "is a symbolic link; left unchanged" in err
    assert (target / "train.py").is_file()


def test_init_into_a_dangling_symlink_directory_is_a_message(tmp_path):
    (tmp_path / "dir").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    code, out, err = run_cli(["init", str(tmp_path / "dir")])
    assert code == 2
    assert "cannot create the directory" in err and "Traceback" not in err
    assert not (tmp_path / "nowhere").exists()


def test_init_leaves_an_existing_file_alone(tmp_path):
    (tmp_path / "tau.yaml").write_text("mine\n")
    code, _, err = run_cli(["init", str(tmp_path)])
    assert code == 0 and "exists; left unchanged" in err
    assert (tmp_path / "tau.yaml").read_text() == "mine\n"


def test_a_huge_entrypoint_is_refused_by_its_size_without_opening_it(layout, monkeypatch):
    project, _ = layout
    script = project / "train.py"
    with open(script, "wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse: 200 MB by stat, nothing on disk
    (project / "tau.yaml").write_text(JOB.format(entry="train.py"))
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(yamlsource.os, "open", lambda path, *a, **k: (opened.append(str(path)), real_open(path, *a, **k))[1])
    code, out, err = _render(project / "tau.yaml")
    assert code == 2 and "the script is 209715200 bytes; the limit is 46080" in err
    assert not any(p.endswith("train.py") for p in opened), "the size is checked by stat, before any read"


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, "-m", "tau_tui.cli", *argv], cwd=cwd, capture_output=True, text=True,
            timeout=SUBPROCESS_TIMEOUT_S, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"tau-tui {' '.join(argv)} hung (no answer in {SUBPROCESS_TIMEOUT_S} s)")


def _assert_refused(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr
    assert len(result.stdout) + len(result.stderr) < 4096


def test_fifo_as_the_config_snapshot_and_entrypoint_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "tau.yaml")
    _assert_refused(_cli("validate", "tau.yaml", cwd=tmp_path), "is a FIFO (named pipe), not a regular file")
    os.mkfifo(tmp_path / "snapshot.yaml")
    (tmp_path / "job.yaml").write_text(JOB.format(entry="train.py"))
    (tmp_path / "train.py").write_text("print('x')\n")
    _assert_refused(_cli("render", "job.yaml", "--profiles", "snapshot.yaml", cwd=tmp_path), "is a FIFO")
    _assert_refused(_cli("profiles", "--profiles", "snapshot.yaml", cwd=tmp_path), "is a FIFO")
    (tmp_path / "train.py").unlink()
    os.mkfifo(tmp_path / "train.py")
    result = _cli("render", "job.yaml", "--profiles", EMPTY_PROFILES, cwd=tmp_path)
    _assert_refused(result, "is not a regular file")
    assert "job.yaml:3:1 entrypoint" in result.stderr


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_is_refused_before_reading(tmp_path):
    _assert_refused(_cli("validate", "/dev/zero", cwd=tmp_path), "is a character device, not a regular file")
    _assert_refused(_cli("profiles", "--profiles", "/dev/zero", cwd=tmp_path), "is a character device")
    (tmp_path / "tau.yaml").write_text(JOB.format(entry="train.py").replace("  queue: q\n", "  queue: q\n  team: t\n  lane: training\n  workload_profile_snapshot: /dev/zero\n"))
    (tmp_path / "train.py").write_text("print('x')\n")
    _assert_refused(_cli("render", "tau.yaml", cwd=tmp_path), "is a character device")


def test_an_over_long_path_is_a_message(tmp_path):
    name = str(tmp_path / ("a" * 300 + ".yaml"))
    for argv in (["validate", name], ["profiles", "--profiles", name], ["render", name, "--profiles", EMPTY_PROFILES]):
        code, out, err = run_cli(argv)
        assert code == 2, err
        assert "too long for the file system" in err and "Traceback" not in err
        assert len(err) < 2_000  # one bounded message per command


def test_the_project_archive_reads_a_bounded_number_of_files_and_bytes(layout, monkeypatch):
    from tau_tui.core.runconfig import payload as render

    project, _ = layout
    src = _rayjob_project(project)
    for index in range(5):
        (src / f"part{index}.py").write_text("x = 1\n" * 100)
    monkeypatch.setattr(render, "MAX_PROJECT_ENTRIES", 3)
    code, _, err = _render(project / "tau.yaml")
    assert code == 2 and "the project archive: holds more than 3 files" in err
    monkeypatch.setattr(render, "MAX_PROJECT_ENTRIES", 100)
    monkeypatch.setattr(render, "MAX_PROJECT_READ_BYTES", 1_000)
    code, _, err = _render(project / "tau.yaml")
    assert code == 2 and "the project archive: holds more than 1,000 bytes of files" in err
