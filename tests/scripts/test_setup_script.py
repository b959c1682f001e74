"""scripts/setup.sh repairs a broken .venv, serialises concurrent runs without flock, skips pip
when nothing it installs changed, and prints no setuptools banner.

Runs the real script against a small project in a temporary directory, so no test touches the
worktree's own .venv; pip installs only setuptools (from the warm cache). The project's packages
sit in folders beside other folders, as the repository's do, and its pyproject.toml files carry
the repository's own [tool.setuptools] tables, so the banner test follows what the real files say.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
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
"""


def _setuptools_table(pyproject: Path) -> str:
    """The [tool.setuptools] table of a repository pyproject.toml, as TOML (package-dir and friends)."""
    table = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
    lines = ["[tool.setuptools]"]
    for key, value in table.items():
        if isinstance(value, dict) and key == "package-dir":
            lines.append(f"{key} = {{ " + ", ".join(f'"{k}" = "{v}"' for k, v in value.items()) + " }")
    return "\n".join(lines) + "\n"


def _package(folder: Path, name: str, distribution: str, real: Path) -> None:
    """A distribution with one package ``name`` in ``folder``, laid out and configured as ``real`` is."""
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text("VALUE = 1\n")
    (folder / "tests").mkdir()  # a folder beside the package, as in the repository
    (folder / "pyproject.toml").write_text(
        PYPROJECT.replace('"setup-probe"', f'"{distribution}"') + _setuptools_table(real)
        + f'\n[tool.setuptools.packages.find]\nwhere = ["."]\ninclude = ["{name}*"]\n')


def _project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    _package(tmp_path, "setup_probe", "setup-probe", REPO / "pyproject.toml")
    # setup.sh also installs the two local distributions the repository holds (gpuhealth/, agent/)
    for folder in ("gpuhealth", "agent"):
        _package(tmp_path / folder, f"setup_probe_{folder}", f"setup-probe-{folder}", REPO / folder / "pyproject.toml")
    return tmp_path


def _run(project: Path, path: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PYTHON=sys.executable, PATH=path or env["PATH"])
    return subprocess.Popen(["bash", "scripts/setup.sh"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _without_flock(tmp_path: Path) -> str:
    """A PATH whose first folder holds a `flock` that fails and leaves a mark: a run that used it is seen."""
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "flock").write_text(f"#!/bin/sh\ntouch {shims}/flock-was-called\nexit 99\n")
    (shims / "flock").chmod(0o755)
    return f"{shims}{os.pathsep}{os.environ['PATH']}"


def _site_packages(project: Path) -> Path:
    return next((project / ".venv" / "lib").glob("python3*/site-packages"))


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


def test_two_setups_at_once_leave_a_working_venv_without_flock(tmp_path):
    project = _project(tmp_path / "project")
    path = _without_flock(tmp_path)
    first, second = _run(project, path), _run(project, path)
    outs = [p.communicate(timeout=600)[0] for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outs
    assert _pip_works(project)
    assert not (tmp_path / "shims" / "flock-was-called").exists()
    assert not (project / ".venv.setup.lock.d").exists()


def test_a_second_run_skips_pip_until_a_pyproject_changes(tmp_path):
    project = _project(tmp_path)
    # The lock of a run that was killed: taken over, not waited on for ten minutes.
    dead = subprocess.Popen(["true"])
    dead.wait()
    (project / ".venv.setup.lock.d").mkdir()
    (project / ".venv.setup.lock.d" / "pid").write_text(f"{dead.pid}\n")
    proc = _run(project)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert f"taking over .venv.setup.lock.d from process {dead.pid}" in out
    out = out.replace(f"scripts/setup.sh: taking over .venv.setup.lock.d from process {dead.pid}, which is gone\n", "")
    for banner in ("Warning", "!!", "*****"):  # setuptools' editable-install banners
        assert banner not in out, out
    # Take pip away: a run that called it would find the venv broken and say so.
    pip = next(_site_packages(project).glob("pip"))
    shutil.move(pip, tmp_path / "pip-aside")
    second = _run(project)
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0 and out == "", out
    assert not pip.exists()
    # A changed pyproject.toml: pip runs again (here it finds pip gone and repairs the venv).
    with open(project / "agent" / "pyproject.toml", "a") as f:
        f.write("\n# changed\n")
    third = _run(project)
    out, _ = third.communicate(timeout=600)
    assert third.returncode == 0, out
    assert "broken" in out and _pip_works(project)
