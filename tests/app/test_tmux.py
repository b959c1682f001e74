"""End to end in a real terminal: ``tau-tui --demo`` inside tmux, driven by keys,
checked through ``tmux capture-pane -p`` on three panes.  Uses its own tmux server
socket and kills only that server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest


@pytest.fixture(autouse=True)
def _tmux_is_required():
    # Never a silent skip: scripts/test.sh installs tmux; without it this test must fail loudly.
    assert shutil.which("tmux"), "tmux is not installed (apt-get install tmux); scripts/test.sh installs it"


class Tmux:
    def __init__(self, tmp_path):
        self.socket = f"tau-tui-test-{uuid.uuid4().hex[:8]}"
        self.session = "demo"
        self.env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"),
                        TERM="xterm-256color", KUBECONFIG=str(tmp_path / "no-kubeconfig"))

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=30, check=check)

    def start(self, command: str) -> None:
        self.run("new-session", "-d", "-s", self.session, "-x", "160", "-y", "48", command)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def text(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, "-l", *keys)

    def command(self, line: str) -> None:
        """``:`` then the command, as a person types it (the prompt opens first)."""
        self.keys(":")
        self.wait_for("queue · runs · nodes")
        self.text(line)
        self.keys("Enter")

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session, check=False).stdout

    def wait_for(self, *needles: str, timeout: float = 40.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if all(n in screen for n in needles):
                return screen
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {needles!r}; screen was:\n{screen}")

    def kill(self) -> None:
        self.run("kill-server", check=False)


def test_demo_in_a_real_terminal(tmp_path):
    tmux = Tmux(tmp_path)
    command = f"{sys.executable} -m tau_tui.cli --demo"
    try:
        tmux.start(command)
        # queue pane (the start pane): queues, quota bars, positions
        screen = tmux.wait_for("ctx sim-demo", "connected", "CQ jobqueue", "Why pending")
        assert "pending" in screen and "admitted" in screen
        # a lone esc is esc (the short escape wait), and an arrow key's sequence is still one key
        tmux.keys("/")
        tmux.wait_for("filters as you type")
        tmux.text("jobqueue")
        tmux.wait_for("filter: jobqueue")
        tmux.keys("Escape")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and "filter:" in "\n".join(tmux.capture().splitlines()[:2]):
            time.sleep(0.25)
        header = "\n".join(tmux.capture().splitlines()[:2])
        assert "filter:" not in header, f"esc did not clear the filter: {header}"
        tmux.keys("Down", "Down")
        time.sleep(0.5)
        screen = tmux.capture()
        assert "filters as you type" not in screen and "queue · runs · nodes" not in screen  # not esc + "[B"
        # nodes pane via command mode
        tmux.command("nodes")
        screen = tmux.wait_for("GPUs alloc/cap", "h100-node-5", "unhealthy", "Xid79")
        assert "? unknown" in screen  # the node without an agent is unknown, never healthy
        # runs pane via its number key, then the phases of the selected run
        tmux.keys("4")
        screen = tmux.wait_for("Kueue admission", "Container start", "queued")
        # logs of a run via :logs RUN, following, with the dropped counter at 0
        tmux.command("logs taugrid-default/llama-70b-sft")
        screen = tmux.wait_for("following", "dropped 0", "[llama-70b-sft-")
        tmux.keys("f")
        tmux.wait_for("paused (+")
        tmux.keys("C-q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and tmux.run("has-session", "-t", tmux.session, check=False).returncode == 0:
            time.sleep(0.2)
        assert tmux.run("has-session", "-t", tmux.session, check=False).returncode != 0, "the app did not quit on ctrl+q"
    finally:
        tmux.kill()


def test_no_kubeconfig_offers_the_demo(tmp_path):
    tmux = Tmux(tmp_path)
    env_unset = "env -u KUBERNETES_SERVICE_HOST"
    try:
        tmux.start(f"{env_unset} {sys.executable} -m tau_tui.cli")
        tmux.wait_for("No cluster", "no kubeconfig found", "Open the demo")
        tmux.keys("d")
        tmux.wait_for("ctx sim-demo", "connected", "CQ jobqueue")
    finally:
        tmux.kill()


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc: the pane's shell, the app, the app's children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_large_demos_cluster_runs_in_its_own_process_and_ends_with_the_app(tmp_path):
    """``--demo faults`` (like ``large``): the simulated controllers run in a process of their own;
    the app shows its cluster, a cordon goes through it, and quitting the app ends it."""
    tmux = Tmux(tmp_path)
    try:
        tmux.start(f"{sys.executable} -m tau_tui.cli --demo faults")
        tmux.wait_for("ctx sim-faults", "connected", "Why pending")
        pane = int(tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_pid}").stdout.strip())
        servers = [p for p in _descendants(pane) if "tau_tui.core.sim.process_server" in _command_line(p)]
        assert len(servers) == 1, "the simulated cluster does not run in a process of its own"
        tmux.command("nodes")
        tmux.wait_for("gpu-node-1", "Xid48")
        tmux.keys("c")
        tmux.wait_for("server dry-run passed", "Cordon (y)")
        tmux.keys("y")
        tmux.wait_for("node gpu-node-1 cordoned", "⊘ cordoned")
        tmux.keys("C-q")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                os.path.exists(f"/proc/{servers[0]}")
                or tmux.run("has-session", "-t", tmux.session, check=False).returncode == 0):
            time.sleep(0.2)
        assert tmux.run("has-session", "-t", tmux.session, check=False).returncode != 0, "the app did not quit on ctrl+q"
        assert not os.path.exists(f"/proc/{servers[0]}"), "the simulated cluster's process outlived the app"
    finally:
        tmux.kill()
