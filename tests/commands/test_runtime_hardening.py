"""The headless CLI against servers and credential plugins that misbehave.

Every case runs ``python -m tau_tui.cli`` in a subprocess bounded by a per-test
``timeout`` (a hang fails the test); the assertions are on exit codes and
messages, never on how long anything took.  Servers listen on 127.0.0.1 only."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import self_signed_key_and_cert
from tests.stub_servers import StallServer, answering_server, api_status, kubeconfig

#: Bounds each CLI run: far above what a 1 s request timeout needs, so a hang (not slowness) fails.
RUN_BOUND = 120


@pytest.fixture
def stall_server():
    server = StallServer()
    yield server
    server.close()


@pytest.fixture
def env(tmp_path):
    """A private HOME, XDG dirs and TMPDIR for the CLI."""
    tmp = tmp_path / "tmp"
    runtime = tmp_path / "run"
    for directory in (tmp, runtime):
        directory.mkdir(mode=0o700)
    values = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TAU_TUI_CONFIG")}
    values.update({
        "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": str(runtime),
        "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    })
    return values


def cli(env: dict, *args: str, timeout: int = RUN_BOUND) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tau_tui.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def assert_one_clean_failure(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr, result.stderr


# -- timeouts -------------------------------------------------------------------------------------


def test_profiles_on_a_server_that_accepts_and_never_answers_times_out_naming_it(tmp_path, env, stall_server):
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", {"token": "t0ken"})
    result = cli(env, "profiles", "--request-timeout", "1s")
    assert_one_clean_failure(result)
    assert "read timeout" in result.stderr and f"127.0.0.1:{stall_server.port}" in result.stderr, result.stderr
    assert stall_server.accepted.is_set()


def test_submit_on_a_server_that_accepts_and_never_answers_times_out(tmp_path, env, stall_server):
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", {"token": "t0ken"})
    assert cli(env, "init", str(tmp_path / "proj")).returncode == 0
    result = cli(env, "submit", str(tmp_path / "proj" / "tau.yaml"), "--request-timeout", "1")
    assert_one_clean_failure(result)
    assert "timeout" in result.stderr and f"127.0.0.1:{stall_server.port}" in result.stderr, result.stderr


def test_tls_handshake_that_never_completes_times_out_naming_it(tmp_path, env, stall_server):
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{stall_server.port}", {"token": "t0ken"})
    result = cli(env, "profiles", "--request-timeout", "1s")
    assert_one_clean_failure(result)
    assert "TLS handshake timeout" in result.stderr and f"127.0.0.1:{stall_server.port}" in result.stderr, result.stderr


def test_request_timeout_comes_from_the_app_config_too(tmp_path, env, stall_server):
    config = tmp_path / "config.yaml"
    config.write_text("request_timeout: 1\nconnect_timeout: 1\n")
    env["TAU_TUI_CONFIG"] = str(config)
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", {"token": "t0ken"})
    result = cli(env, "profiles")
    assert_one_clean_failure(result)
    assert "read timeout" in result.stderr and "within 1 s" in result.stderr, result.stderr


def test_a_bad_request_timeout_is_invalid_input(env):
    result = cli(env, "profiles", "--request-timeout", "soon")
    assert result.returncode == 2 and "--request-timeout" in result.stderr and "Traceback" not in result.stderr


def test_ctrl_c_exits_130_with_one_line(tmp_path, env, stall_server):
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", {"token": "t0ken"})
    # -X faulthandler: if it ever hangs after Ctrl-C, SIGABRT makes it print where each thread is
    # and Ctrl-C as a terminal delivers it: a suite started in the background of a shell without job
    # control inherits SIGINT ignored, and Python leaves an ignored SIGINT ignored
    process = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "tau_tui.cli", "profiles",
                                "--request-timeout", "0"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert stall_server.accepted.wait(RUN_BOUND), "the CLI never connected"
        process.send_signal(signal.SIGINT)
        try:
            # one Ctrl-C is enough even when it lands just before the blocking read starts: the
            # command runs in a worker and the main thread waits in slices (cli.run_command_interruptibly)
            _out, err = process.communicate(timeout=RUN_BOUND)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            _out, err = process.communicate(timeout=RUN_BOUND)
            raise AssertionError(f"still running {RUN_BOUND} s after Ctrl-C; its threads:\n{err}") from None
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip() == "tau-tui: interrupted", err


# -- exec credential plugins ----------------------------------------------------------------------


def _plugin(tmp_path: Path, name: str, body: str) -> str:
    script = tmp_path / name
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def _exec_user(command: str) -> dict:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command, "interactiveMode": "Never"}}


def test_a_failing_exec_plugin_is_reported_as_such(tmp_path, env, stall_server):
    plugin = _plugin(tmp_path, "fail-login.sh", 'echo "refresh token expired; run az login" >&2; exit 1')
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", _exec_user(plugin))
    result = cli(env, "profiles", "--request-timeout", "1s")
    assert_one_clean_failure(result)
    assert "exec plugin fail-login.sh exited 1: refresh token expired; run az login" in result.stderr, result.stderr
    assert not stall_server.accepted.is_set()  # nothing was sent without credentials


def test_a_hanging_exec_plugin_times_out_with_its_name(tmp_path, env, stall_server):
    plugin = _plugin(tmp_path, "hang-login.sh", "exec sleep 600")
    config = tmp_path / "config.yaml"
    config.write_text("exec_timeout: 1\n")
    env["TAU_TUI_CONFIG"] = str(config)
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{stall_server.port}", _exec_user(plugin))
    result = cli(env, "profiles")
    assert_one_clean_failure(result)
    assert "exec plugin hang-login.sh did not finish within 1 s" in result.stderr, result.stderr


# -- what the server answers ----------------------------------------------------------------------


def profiles_against(tmp_path: Path, env: dict, routes) -> tuple[subprocess.CompletedProcess, int]:
    """``tau-tui profiles`` against a server answering ``routes``; (result, the server's port)."""
    server = answering_server(routes)
    try:
        env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{server.server_port}", {"token": "t0ken"})
        result = cli(env, "profiles", "--request-timeout", "5s")
    finally:
        server.shutdown()
    assert_one_clean_failure(result)
    return result, server.server_port


def test_401_reads_log_in_again_not_no_access(tmp_path, env):
    result, _ = profiles_against(tmp_path, env, lambda path: (401, "application/json", api_status(401, "Unauthorized", "Unauthorized")))
    assert "log in again" in result.stderr and "no access" not in result.stderr and "forbidden" not in result.stderr


def test_a_proxy_404_is_not_reported_as_a_missing_crd(tmp_path, env):
    result, port = profiles_against(tmp_path, env, lambda path: (404, "text/html", "<html><body>404 page not found</body></html>"))
    assert "not installed" not in result.stderr, result.stderr
    assert "proxy" in result.stderr and f"127.0.0.1:{port}" in result.stderr, result.stderr


def test_a_404_with_discovery_lacking_the_group_says_the_crd_is_missing(tmp_path, env):
    groups = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "batch", "versions": [{"groupVersion": "batch/v1", "version": "v1"}]}]}

    def routes(path):
        if path == "/apis":
            return 200, "application/json", json.dumps(groups)
        return 404, "application/json", api_status(404, "NotFound", "the server could not find the requested resource")

    result, _ = profiles_against(tmp_path, env, routes)
    assert "the TauCluster CRD (clusters.tau.azure.com) is not installed" in result.stderr, result.stderr


# -- key material ---------------------------------------------------------------------------------


def _client_key_and_cert() -> tuple[bytes, bytes]:
    return self_signed_key_and_cert("tau-test-user")


def _files_holding(roots: list[Path], needle: bytes) -> list[str]:
    found = []
    for root in roots:
        for directory, _dirs, files in os.walk(root):
            for name in files:
                path = Path(directory) / name
                try:
                    if needle in path.read_bytes():
                        found.append(str(path))
                except OSError:
                    continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_killed_cli_leaves_no_client_key_on_disk(tmp_path, env, stall_server, signum):
    key_pem, cert_pem = _client_key_and_cert()
    user = {"client-key-data": base64.b64encode(key_pem).decode(),
            "client-certificate-data": base64.b64encode(cert_pem).decode()}
    env["KUBECONFIG"] = kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{stall_server.port}", user)
    kubeconfig_dir = tmp_path / "kc"
    needle = key_pem.split(b"\n")[1]  # a line of the key's base64 body
    roots = [Path(env["TMPDIR"]), Path(env["XDG_RUNTIME_DIR"]), tmp_path / "home", tmp_path / "state"]
    process = subprocess.Popen([sys.executable, "-m", "tau_tui.cli", "profiles", "--request-timeout", "0"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stall_server.accepted.wait(RUN_BOUND), "the CLI never connected"
        # While it runs (credentials loaded, connection open): the key is in memory only.
        links = []
        for fd in os.listdir(f"/proc/{process.pid}/fd"):
            try:
                links.append(os.readlink(f"/proc/{process.pid}/fd/{fd}"))
            except OSError:
                continue
        assert any(link.startswith("/memfd:tau-tui-credential") for link in links), links
        assert _files_holding(roots, needle) == []
        process.send_signal(signum)
        process.communicate(timeout=RUN_BOUND)
    finally:
        process.kill()
    assert process.returncode in (128 + signum, -signum)
    assert _files_holding(roots, needle) == [], "the private key was written to disk"
    assert kubeconfig_dir.exists()


LINGERING_APP_END = """
import atexit, threading
from tau_tui.startup.leaving import leave_if_threads_linger
atexit.register(lambda: print("exit clean-up ran", flush=True))
stop = threading.Event()
threading.Thread(target=lambda: stop.wait(), name="like-textual-input").start()  # never told to stop
leave_if_threads_linger(7, grace_s=0.2)
print("not reached", flush=True)
"""


def test_an_app_end_that_a_thread_outlives_leaves_through_the_exit_clean_up():
    """A non-daemon thread still alive after the app ended (Textual's input thread on a terminal
    that went away) would keep the interpreter waiting for ever; the process leaves without it."""
    result = subprocess.run([sys.executable, "-c", LINGERING_APP_END], capture_output=True, text=True,
                            timeout=RUN_BOUND, stdin=subprocess.DEVNULL)
    assert result.returncode == 7, result.stderr
    assert result.stdout.splitlines() == ["exit clean-up ran"]


def test_an_app_end_without_lingering_threads_returns_as_usual():
    script = LINGERING_APP_END.replace("stop.wait()", "None")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=RUN_BOUND, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["not reached", "exit clean-up ran"]
