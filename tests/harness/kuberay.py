"""The KubeRay operator for tier 2, and what stands in for the Ray processes KWOK cannot run.

KWOK runs no container, so a RayCluster's head has no Ray dashboard and no `ray` CLI. Two stand-ins,
both on 127.0.0.1, take their place; the operator itself is the real one (`bash harness/build.sh
kuberay`, the version Kueue's go.mod requires):

* :class:`FakeRayDashboard`, the head's job API (`/api/jobs/...`). The operator reaches a head's
  dashboard at `http://<cluster>-head-svc.<ns>.svc.cluster.local:8265`, a name that resolves nowhere
  here; it is started with `HTTP_PROXY` pointing at this server, which answers such a request itself
  (an absolute URI on the request line names the head service). A Ray job exists once the operator
  first asks for it (its submitter pod, run by KWOK, would have submitted it then); it is RUNNING with
  the driver output `RAY_DRIVER_LINES` until a test ends it (:meth:`FakeRayDashboard.finish`) or the
  operator stops it (a cancelled RayJob).
* a `ray` command for `kubectl exec <head> -c ray-head -- ray job logs JOB [--follow]`: KWOK's
  ClusterExec runs it on this host, as the user nobody, in an empty directory of its own, and only for
  containers named `ray-head`; it prints the job's driver output from the dashboard above.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .processes import ManagedProcess, free_port

if TYPE_CHECKING:
    from .controlplane import ControlPlane

RAY_DRIVER_LINES = [f"tau-harness ray driver line {n}" for n in range(1, 4)]
TERMINAL_STATUSES = ("SUCCEEDED", "FAILED", "STOPPED")
HEAD_CONTAINER = "ray-head"
#: The unprivileged user KWOK runs the stand-in `ray` as (nobody on Debian).
EXEC_USER = 65534
STARTUP_TIMEOUT = 120.0

RAY_CLI = '''#!/usr/bin/python3
"""`ray job logs JOB_ID [--follow]` as the Ray CLI prints it, read from the harness's stand-in Ray
dashboard at $RAY_ADDRESS (tests/harness/kuberay.py); KWOK's exec runs it for a Ray head."""
import json, os, sys, time, urllib.error, urllib.request

def get(path):
    with urllib.request.urlopen(os.environ["RAY_ADDRESS"] + path, timeout=10) as answer:
        return json.load(answer)

args = sys.argv[1:]
names = [a for a in args[2:] if not a.startswith("-")]
if args[:2] != ["job", "logs"] or len(names) != 1:
    print("usage: ray job logs JOB_ID [--follow]", file=sys.stderr)
    sys.exit(2)
job, follow, sent = names[0], "--follow" in args or "-f" in args, 0
while True:
    try:
        status = get(f"/api/jobs/{job}")["status"]  # before the logs: a final status means complete logs
        logs = get(f"/api/jobs/{job}/logs").get("logs", "")
    except urllib.error.HTTPError as err:
        if err.code == 404:
            print(f"Job {job} does not exist on the cluster", file=sys.stderr)
            sys.exit(1)
        raise
    sys.stdout.write(logs[sent:])
    sys.stdout.flush()
    sent = len(logs)
    if not follow or status in ("SUCCEEDED", "FAILED", "STOPPED"):
        break
    time.sleep(0.2)
'''


@dataclass
class RayJobRecord:
    """One Ray job as the stand-in dashboard holds it."""

    job_id: str
    head_service: str
    status: str = "RUNNING"
    message: str = ""
    lines: list[str] = field(default_factory=lambda: list(RAY_DRIVER_LINES))
    start_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    end_ms: int = 0
    stop_requests: int = 0

    def info(self) -> dict:
        answer = {"job_id": self.job_id, "submission_id": self.job_id, "status": self.status,
                  "entrypoint": "python /script/main.py", "message": self.message, "start_time": self.start_ms}
        if self.end_ms:
            answer["end_time"] = self.end_ms
        return answer


class FakeRayDashboard:
    """The Ray heads' job API for the operator (as its HTTP proxy) and for the stand-in `ray` CLI."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self.jobs: dict[str, RayJobRecord] = {}
        self.requests: list[tuple[str, str]] = []  # (method, URL as sent), for a test's assertions
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="tau-harness-ray-dashboard", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- for tests -----------------------------------------------------------------------
    def job(self, job_id: str) -> RayJobRecord | None:
        with self._lock:
            return self.jobs.get(job_id)

    def append(self, job_id: str, *lines: str) -> None:
        """More driver output of a running job."""
        with self._lock:
            self.jobs[job_id].lines.extend(lines)

    def finish(self, job_id: str, status: str = "SUCCEEDED", message: str = "") -> None:
        """End the job as Ray would report it (SUCCEEDED or FAILED), with a last driver line."""
        with self._lock:
            record = self.jobs[job_id]
            record.lines.append(f"Job '{job_id}' {status.lower()}")
            record.status, record.message, record.end_ms = status, message, int(time.time() * 1000)

    # -- the API -----------------------------------------------------------------------
    def answer(self, method: str, target: str) -> tuple[int, dict]:
        url = urlsplit(target)
        # The operator's requests come through the proxy with the head service in the URL; the CLI's direct.
        head_service = url.hostname.split(".")[0] if url.hostname and url.hostname != "127.0.0.1" else ""
        parts = [p for p in url.path.split("/") if p]
        with self._lock:
            self.requests.append((method, target))
            if parts[:2] != ["api", "jobs"]:
                return 404, {"message": f"no such endpoint {url.path}"}
            if len(parts) == 2:
                return 200, [record.info() for record in self.jobs.values()]  # type: ignore[return-value]
            job_id = parts[2]
            record = self.jobs.get(job_id)
            if record is None and head_service and method == "GET" and len(parts) == 3:
                record = self.jobs[job_id] = RayJobRecord(job_id, head_service)
            if record is None:
                return 404, {"message": f"Job {job_id} does not exist"}
            if method == "GET" and len(parts) == 3:
                return 200, record.info()
            if method == "GET" and parts[3:] == ["logs"]:
                return 200, {"logs": "".join(f"{line}\n" for line in record.lines)}
            if method == "POST" and parts[3:] == ["stop"]:
                record.stop_requests += 1
                stopped = record.status not in TERMINAL_STATUSES
                if stopped:
                    record.lines.append(f"Job '{job_id}' was stopped")
                    record.status, record.end_ms = "STOPPED", int(time.time() * 1000)
                return 200, {"stopped": stopped}
            if method == "DELETE" and len(parts) == 3:
                del self.jobs[job_id]
                return 200, {"deleted": True}
            return 404, {"message": f"no such endpoint {method} {url.path}"}


def _handler_for(dashboard: FakeRayDashboard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            code, body = dashboard.answer(self.command, self.path)
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _reply

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    return Handler


def ray_cli_dir(dashboard: FakeRayDashboard) -> Path:
    """A directory of its own (0755, outside the plane's 0700 state dir, so nobody can run from it)
    holding the stand-in `ray`; removed with :func:`remove_ray_cli_dir`."""
    directory = Path(tempfile.mkdtemp(prefix="tau-harness-ray-cli-"))
    directory.chmod(0o755)
    cli = directory / "ray"
    cli.write_text(RAY_CLI)
    cli.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return directory


def remove_ray_cli_dir(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)


def ray_head_exec(dashboard: FakeRayDashboard, cli_dir: Path) -> dict:
    """KWOK's ClusterExec: an exec into a `ray-head` container runs on this host as nobody, in the
    CLI's directory, with RAY_ADDRESS naming the stand-in dashboard (no other container execs)."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterExec",
        "metadata": {"name": "tau-harness-ray-head"},
        "spec": {"execs": [{
            "containers": [HEAD_CONTAINER],
            "local": {"workDir": str(cli_dir),
                      "envs": [{"name": "RAY_ADDRESS", "value": dashboard.url}],
                      "securityContext": {"runAsUser": EXEC_USER, "runAsGroup": EXEC_USER}},
        }]},
    }


def start_kuberay(plane: ControlPlane, dashboard: FakeRayDashboard) -> ManagedProcess:
    """The operator on the plane's admin kubeconfig: no leader election, no metrics listener, its
    probes on 127.0.0.1, every request to a head's dashboard through `dashboard` (HTTP_PROXY; the
    apiserver on 127.0.0.1 is never proxied)."""
    probe = free_port()
    proxy = {"HTTP_PROXY": dashboard.url, "http_proxy": dashboard.url,
             "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "KUBECONFIG": plane.kubeconfig}
    proc = ManagedProcess(f"{plane.name}/kuberay-operator", [
        str(plane.binaries.ray_operator),
        f"--kubeconfig={plane.kubeconfig}",
        "--metrics-addr=0",
        f"--health-probe-bind-address=127.0.0.1:{probe}",
        "--enable-leader-election=false",
        "--log-stdout-encoder=console",
    ], plane.logs_dir / "kuberay-operator.log", env=proxy)
    proc.start()
    url = f"http://127.0.0.1:{probe}/readyz"
    # The probe itself must not go through the proxy: this process's own environment may name one.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    proc.wait_until(lambda: opener.open(url, timeout=2).status == 200, "/readyz ok", STARTUP_TIMEOUT)
    return proc


def kwok_process_env(cli_dir: Path) -> dict[str, str]:
    """KWOK looks its exec command up on its own PATH: the stand-in `ray` first."""
    return {"PATH": f"{cli_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"}
