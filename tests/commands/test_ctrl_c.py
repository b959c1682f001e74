"""Ctrl-C in a headless command waiting on a server that accepts and never answers (#33): one line,
``tau-tui: interrupted``, exit 130, no traceback; SIGTERM and SIGHUP end it quietly with 128 + the
signal.  The command is this test's child: its exit is waited for with HANG_GUARD_S as a guard
against a hang only, never as a limit on the exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tau_tui
from tests.stub_servers import StallServer, kubeconfig

HANG_GUARD_S = 30.0
EXAMPLE = Path(tau_tui.__file__).parent / "examples"

#: Commands that ask the cluster something (name, argv after ``tau-tui``).
COMMANDS = {
    "status": ["status", "train-1", "-n", "team-a"],
    "status --watch": ["status", "train-1", "-n", "team-a", "--watch"],
    "runs": ["runs"],
    "cancel": ["cancel", "train-1", "-n", "team-a", "--dry-run=server"],
    "submit": ["submit", "tau.yaml", "--dry-run=server", "-n", "team-a"],
    "evidence export": ["evidence", "export", "train-1", "-n", "team-a"],
}


@pytest.fixture
def stalled(tmp_path):
    server = StallServer()
    shutil.copy(EXAMPLE / "tau.yaml", tmp_path / "tau.yaml")
    shutil.copy(EXAMPLE / "train.py", tmp_path / "train.py")
    yield server, kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{server.port}", {"token": "t"})
    server.close()


def _interrupted(tmp_path, stalled, argv: list[str], signum: int) -> tuple[int | None, str]:
    server, kubeconfig_path = stalled
    env = dict(os.environ, KUBECONFIG=kubeconfig_path, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    # SIGINT not ignored, as a shell with job control starts a foreground command (a suite started
    # in the background of a shell without job control inherits it ignored, and Python keeps that).
    command = subprocess.Popen([sys.executable, "-m", "tau_tui.cli", *argv], cwd=tmp_path, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert server.accepted.wait(HANG_GUARD_S), "the command never reached the server"
        command.send_signal(signum)
        try:
            out, err = command.communicate(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            return None, ""
        return command.returncode, out + err
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, stalled, name):
    code, printed = _interrupted(tmp_path, stalled, COMMANDS[name], signal.SIGINT)
    assert code is not None, f"{name} was still running {HANG_GUARD_S:.0f} s after Ctrl-C"
    assert "Traceback" not in printed
    assert printed.splitlines() == ["tau-tui: interrupted"]
    assert code == 130


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_a_command_quietly(tmp_path, stalled, signum):
    code, printed = _interrupted(tmp_path, stalled, COMMANDS["status"], signum)
    assert code is not None, f"status was still running {HANG_GUARD_S:.0f} s after {signal.Signals(signum).name}"
    assert printed == ""
    assert code == 128 + signum
