"""The README's install command, as a new user runs it: from a fresh clone and a new HOME,
`scripts/install.sh`, then in a new shell `tau-tui --version`, `kubectl tau-tui --version` and
`tau-tui --demo` (in tmux) work.

Offline: the third-party dependencies come from a wheelhouse packed from this virtual environment
(tests/packaging/installed_wheels.py) through the script's own `--wheelhouse` option, the three
local wheels from the clone's dist/, which scripts/build_dist.sh builds with checksums.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.packaging.installed_wheels import wheelhouse_for_tau_tui

REPO = Path(__file__).resolve().parents[2]
#: A new user's PATH: no ~/.local/bin, no virtual environment.
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
BOUND = 1200  # seconds: a hang guard for the install, not a speed


def readme_install_command() -> list[str]:
    """The install command of the README's first lines, as words (its comment left out)."""
    for line in (REPO / "README.md").read_text().splitlines()[:40]:
        if line.startswith("./scripts/install.sh"):
            return line.split("#", 1)[0].split()
    raise AssertionError("README.md shows no ./scripts/install.sh command near its top")


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout


def fresh_clone(into: Path) -> Path:
    """A clone of this checkout's commit with the working tree's changes on top (what is under test)."""
    clone = into / "tau-tui"
    _git("clone", "--quiet", "--no-hardlinks", str(REPO), str(clone), cwd=into)
    changed = _git("ls-files", "--modified", "--others", "--exclude-standard", cwd=REPO).splitlines()
    for name in changed:
        source, target = REPO / name, clone / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name in _git("ls-files", "--deleted", cwd=REPO).splitlines():
        (clone / name).unlink(missing_ok=True)
    return clone


def new_shell(home: Path, command: str, *, login: bool = True, extra_path: str = "") -> subprocess.CompletedProcess:
    """``command`` in a new bash (login: ~/.profile; else interactive: ~/.bashrc) with nothing inherited."""
    env = {"HOME": str(home), "PATH": BASE_PATH + extra_path, "TERM": "xterm-256color", "SHELL": "/bin/bash"}
    return subprocess.run(["bash", "-l" if login else "-i", "-c", command], env=env, capture_output=True, text=True,
                          timeout=120, cwd=home)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("install")
    clone, home = fresh_clone(work), work / "home"
    home.mkdir()
    wheelhouse = work / "wheelhouse"
    wheelhouse_for_tau_tui(wheelhouse)
    env = {"HOME": str(home), "PATH": BASE_PATH, "SHELL": "/bin/bash", "PYTHON": sys.executable,
           "PIP_NO_CACHE_DIR": "1", "PIP_CONFIG_FILE": os.devnull}
    command = readme_install_command()
    result = subprocess.run(["bash", *command, "--wheelhouse", str(wheelhouse)], cwd=clone, env=env,
                            capture_output=True, text=True, timeout=BOUND)
    assert result.returncode == 0, result.stdout + result.stderr
    head = _git("rev-parse", "--short=12", "HEAD", cwd=clone).strip()
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", cwd=clone).strip())
    return {"clone": clone, "home": home, "output": result.stdout + result.stderr,
            "version": f"tau-tui 0.1.0 (commit {head}{'+changes' if dirty else ''})"}


def test_dist_holds_the_three_wheels_and_their_checksums(installed):
    dist = installed["clone"] / "dist"
    sums = dict(reversed(line.split()) for line in (dist / "SHA256SUMS").read_text().splitlines())
    assert sorted(name.split("-")[0] for name in sums) == ["tau_agent", "tau_gpuhealth", "tau_tui"]
    for name, digest in sums.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, name


def test_a_new_login_shell_has_tau_tui_on_path_with_its_version_and_commit(installed):
    home = installed["home"]
    result = new_shell(home, "command -v tau-tui && tau-tui --version")
    assert result.returncode == 0, result.stderr
    where, version = result.stdout.splitlines()
    assert where == str(home / ".local" / "bin" / "tau-tui")
    assert version == installed["version"]
    assert "added" in installed["output"] and ".profile" in installed["output"], installed["output"]


def test_a_new_interactive_shell_has_it_too(installed):
    result = new_shell(installed["home"], "tau-tui --version", login=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == installed["version"]


def test_it_runs_from_its_own_environment_not_the_clone(installed):
    home = installed["home"]
    probe = "import tau_tui, tau_gpuhealth, importlib.util; print(tau_tui.__file__); print(tau_gpuhealth.__file__); " \
            "print(importlib.util.find_spec('tau_agent'))"
    python = home / ".local" / "share" / "tau-tui" / "venv" / "bin" / "python"
    result = subprocess.run([str(python), "-I", "-c", probe], capture_output=True, text=True, timeout=120, cwd=home)
    assert result.returncode == 0, result.stderr
    tui, gpuhealth, agent = result.stdout.splitlines()
    venv = str(python.parent.parent)
    assert tui.startswith(venv) and gpuhealth.startswith(venv), result.stdout
    assert agent == "None"  # tau-tui needs the health model, not the agent


def test_kubectl_finds_the_plugin(installed):
    kubectl = shutil.which("kubectl", path=BASE_PATH)
    if kubectl is None:
        from tests.harness.binaries import locate

        built = locate().kubectl
        assert built.is_file(), "no kubectl on PATH and none built by harness/build.sh: the plugin cannot be checked"
        kubectl = str(built)
    result = new_shell(installed["home"], "kubectl tau-tui --version", extra_path=":" + str(Path(kubectl).parent))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == installed["version"]


def test_the_completion_script_is_installed_for_bash(installed):
    home = installed["home"]
    script = home / ".local" / "share" / "bash-completion" / "completions" / "tau-tui"
    probe = f'source {script}; COMP_WORDS=(tau-tui ""); COMP_CWORD=1; _tau_tui; printf "%s\\n" "${{COMPREPLY[@]}}"'
    result = new_shell(home, probe)
    assert result.returncode == 0, result.stderr
    assert {"status", "runs", "completion", "multikueue"} <= set(result.stdout.split())


def test_tau_tui_demo_starts_in_a_new_shell(installed):
    assert shutil.which("tmux"), "tmux is not installed (apt-get install tmux); scripts/test.sh installs it"
    home = installed["home"]
    socket = f"tau-tui-install-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=30)

    shell = f"env -i HOME={home} PATH={BASE_PATH} TERM=xterm-256color bash -l -c 'tau-tui --demo; echo exited $?; sleep 60'"
    try:
        tmux("new-session", "-d", "-s", "install", "-x", "160", "-y", "48", shell)
        screen = ""
        for _ in range(600):  # up to about 2 minutes on a loaded machine: a hang guard
            screen = tmux("capture-pane", "-p", "-t", "install").stdout
            if "ctx sim-demo" in screen and "CQ jobqueue" in screen:
                break
            time.sleep(0.2)
        assert "ctx sim-demo" in screen and "CQ jobqueue" in screen, screen
        tmux("send-keys", "-t", "install", "C-q")
        for _ in range(300):
            screen = tmux("capture-pane", "-p", "-t", "install").stdout
            if "exited" in screen:
                break
            time.sleep(0.2)
        assert "exited 0" in screen, screen
    finally:
        tmux("kill-server")
