"""scripts/setup.sh repairs a broken .venv and serialises concurrent runs.

Runs the real script against a one-module project in a temporary directory, so no test
touches the worktree's own .venv; pip installs only setuptools (from the warm cache).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "setup-probe"
version = "0.0.1"

[project.optional-dependencies]
test = []
agent = []

[tool.setuptools]
py-modules = ["setup_probe"]
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "setup_probe.py").write_text("VALUE = 1\n")
    # setup.sh also installs the two local distributions the repository holds (gpuhealth/, agent/)
    for folder in ("gpuhealth", "agent"):
        module = f"setup_probe_{folder}"
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(
            PYPROJECT.replace('"setup-probe"', f'"setup-probe-{folder}"').replace('"setup_probe"', f'"{module}"'))
        (tmp_path / folder / f"{module}.py").write_text("VALUE = 1\n")
    return tmp_path


def _run(project: Path) -> subprocess.Popen:
    return subprocess.Popen(["bash", "scripts/setup.sh"], cwd=project, env={"PYTHON": sys.executable,
                            **{k: v for k, v in __import__("os").environ.items() if k != "VIRTUAL_ENV"}},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _pip_works(project: Path) -> bool:
    return subprocess.run([str(project / ".venv/bin/python"), "-m", "pip", "--version"],
                          capture_output=True).returncode == 0


def test_setup_recreates_a_venv_left_without_pip(tmp_path):
    project = _project(tmp_path)
    # What an interrupted run leaves: an interpreter but no pip.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True)
    assert not _pip_works(project)
    proc = _run(project)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "broken" in out
    assert _pip_works(project)
    probe = subprocess.run([str(project / ".venv/bin/python"), "-c", "import setup_probe; print(setup_probe.VALUE)"],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "1"


def test_two_setups_at_once_leave_a_working_venv(tmp_path):
    project = _project(tmp_path)
    first, second = _run(project), _run(project)
    outs = [p.communicate(timeout=600)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outs
    assert _pip_works(project)
