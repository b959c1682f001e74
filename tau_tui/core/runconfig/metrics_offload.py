"""`metrics.history` and `metrics.offload`: what TauGrid renders for them, and its rules.

With `metrics.offload.enabled`, the run's pod (a Job's one pod, a RayJob's head) gets the
`metrics-offload` sidecar, which runs `taugrid-portal experiment offload metrics` on the JSONL history
files and remote-writes their rows (to adx-mon on the node, `http://${NODE_IP}:3100/receive`); the
entrypoint is wrapped so that it starts once the sidecar is ready and, when it ends, writes a
completion marker the sidecar turns into the terminal `tau/run_status` row.  The sidecar's image is
the platform's (`TAU_METRICS_OFFLOAD_IMAGE`, a taugrid-portal image pinned by digest): there is no
default, so without one the key is refused, never rendered to a container that cannot start.
`metrics.history` alone is recorded on the object (`tau.azure.com/metrics-history`), resolved.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import DiagnosticError, shown
from tau_tui.core.runconfig.profiler import output_dir
from tau_tui.core.runconfig.resolve import METRICS_OFFLOAD_IMAGE_ENV, Resolution
from tau_tui.core.runconfig.schema import TauConfig

TAU = "tau.azure.com"
DURABLE_ROOT = "/data"
SIDECAR_COMMAND = "/usr/local/bin/taugrid-portal"
DEFAULT_SOURCE = "stellar-online"
DEFAULT_REMOTE_WRITE = "http://${NODE_IP}:3100/receive"
DEFAULT_INTERVAL = "10s"
RUNTIME_VOLUME = "tau-metrics-runtime"
RUNTIME_DIR = "/var/run/tau"
READY_FILE = f"{RUNTIME_DIR}/metrics-ready"
DONE_FILE = f"{RUNTIME_DIR}/metrics-done"
COMPLETION_FILE = f"{RUNTIME_DIR}/metrics-completion.json"
READY_TIMEOUT_S = 120
DONE_TIMEOUT_S = 120
HISTORY_ANNOTATION = f"{TAU}/metrics-history"
SESSION_ANNOTATION = f"{TAU}/metrics-session-id"
PINNED = "@sha256:"

ReportProblem = Callable[[tuple[Any, ...], str, str], None]

# Waits for the sidecar, runs the entrypoint ("$@"), writes the completion marker, waits for the
# sidecar to confirm the terminal row.  POSIX sh: the image need not have bash.
WRAPPER = f"""ready={READY_FILE}; done_file={DONE_FILE}; completion={COMPLETION_FILE}
i=0; while [ ! -f "$ready" ] && [ "$i" -lt {READY_TIMEOUT_S} ]; do sleep 1; i=$((i+1)); done
state=succeeded; reason=workload-entrypoint-exit
if [ ! -f "$ready" ]; then
  echo "metrics offloader not ready after {READY_TIMEOUT_S}s" >&2; status=124; state=failed; reason=metrics-offloader-not-ready
else
  "$@" & child=$!
  trap 'kill -TERM "$child" 2>/dev/null; state=cancelled; reason=workload-termination' TERM INT
  wait "$child"; status=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
  trap - TERM INT
  if [ "$state" = succeeded ] && [ "$status" -ne 0 ]; then state=failed; fi
fi
printf '{{"state":"%s","reason":"%s","message":"entrypoint exited with code %s","completed_at":"%s"}}\\n' \\
  "$state" "$reason" "$status" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$completion.tmp.$$" && mv -f "$completion.tmp.$$" "$completion"
i=0; while [ ! -f "$done_file" ] && [ "$i" -lt {DONE_TIMEOUT_S} ]; do sleep 1; i=$((i+1)); done
[ -f "$done_file" ] || {{ echo "metrics offloader did not confirm the terminal row within {DONE_TIMEOUT_S}s" >&2; [ "$status" -ne 0 ] || status=125; }}
exit "$status"
"""


def under_durable_root(path: str) -> bool:
    clean = posixpath.normpath(path)
    return clean == DURABLE_ROOT or clean.startswith(DURABLE_ROOT + "/")


def check_metrics(c: TauConfig, engine: str, err: ReportProblem) -> None:
    m = c.metrics
    for index, entry in enumerate(m.history):
        if entry.startswith("/") and not under_durable_root(entry):
            err(("metrics", "history", index), f"absolute history paths must be under /data (got {shown(entry)})", "use a path relative to storage.output, or under /data")
        if ".." in entry.split("/"):
            err(("metrics", "history", index), f"must not contain '..' (got {shown(entry)})", "use a path inside the output directory")
    if not m.offload.enabled:
        return
    needs = [
        (("metrics", "history"), bool(m.history), "add a metrics.history entry"),
        (("experiment", "project"), bool(c.experiment.project), "set experiment.project"),
        (("experiment", "name"), bool(c.experiment.name), "set experiment.name"),
        (("run", "entrypoint"), bool(c.run.entrypoint), "set run.entrypoint"),
        (("storage", "data_pvc"), bool(c.storage.data_pvc), "set storage.data_pvc: the offload spool and history live on it"),
    ]
    for path, ok, hint in needs:
        if not ok:
            err(("metrics", "offload", "enabled"), f"offload needs {'.'.join(path)}", hint)
    if engine == "job" and c.execution.nodes > 1:
        err(("metrics", "offload", "enabled"), "offload needs a single-pod Job (execution.nodes is > 1)", "disable offload or run on one node")
    if c.storage.output is not None and not under_durable_root(c.storage.output):
        err(("storage", "output"), f"must be under /data for metrics offload (got {shown(c.storage.output)})",
            "the sidecar reads the history from the data PVC mounted at /data")


def resolved_history(c: TauConfig, output: str | None) -> list[str]:
    base = output_dir(c, output)
    return [posixpath.normpath(e if e.startswith("/") else posixpath.join(base, e)) for e in c.metrics.history]


def history_annotations(loaded: LoadedConfig, r: Resolution) -> dict[str, str]:
    if not loaded.config.metrics.history:
        return {}
    return {HISTORY_ANNOTATION: json.dumps(resolved_history(loaded.config, r.output), separators=(",", ":"))}


@dataclass(frozen=True)
class Offload:
    """The parts a renderer adds to the pod that runs the entrypoint."""

    sidecar: dict[str, Any]
    volume: dict[str, Any]
    mount: dict[str, Any]
    annotations: dict[str, str]

    def wrap(self, command: list[str]) -> list[str]:
        return ["sh", "-c", WRAPPER, "tau-metrics-entrypoint", *command]

    def wrap_shell(self, command: str) -> str:
        return f"sh -c {shlex.quote(WRAPPER)} tau-metrics-entrypoint {command}"


def offload_for(loaded: LoadedConfig, r: Resolution, session_id: str) -> Offload | None:
    """The sidecar and wrapper of an enabled offload, or None.  Refused here (with the key and why)
    when the platform's image is missing or not pinned, or no workspace is resolved."""
    c = loaded.config
    if not c.metrics.offload.enabled:
        return None
    path = ("metrics", "offload", "enabled")
    image = r.metrics_offload_image
    if not image:
        raise DiagnosticError([loaded.diagnostic(path, f"cannot be honoured: the metrics-offload sidecar needs the platform's "
                                                 f"taugrid-portal image and {METRICS_OFFLOAD_IMAGE_ENV} is not set",
                                                 f"export {METRICS_OFFLOAD_IMAGE_ENV}=REGISTRY/taugrid-portal@sha256:DIGEST, or disable offload")])
    if PINNED not in image:
        raise DiagnosticError([loaded.diagnostic(path, f"{METRICS_OFFLOAD_IMAGE_ENV} must be pinned by digest (got {shown(image)})",
                                                 "use REGISTRY/taugrid-portal@sha256:DIGEST")])
    if not r.workspace:
        raise DiagnosticError([loaded.diagnostic(path, "needs a resolved TauWorkspace (rows are tagged with it)",
                                                 "set policy.workspace, or submit with --workspace / a primary workspace")])
    out_dir = output_dir(c, r.output)
    args = ["experiment", "offload", "metrics", "--watch", "--run", str(c.run.name),
            "--project", str(c.experiment.project), "--experiment", str(c.experiment.name),
            "--group", c.experiment.group or "default", "--source", DEFAULT_SOURCE,
            "--out", f"{out_dir}/.tau/metrics/{session_id}/offload", "--completion-file", COMPLETION_FILE,
            "--interval", DEFAULT_INTERVAL, "--remote-write-endpoint", DEFAULT_REMOTE_WRITE, "--baseline-existing-history",
            "--ready-file", READY_FILE, "--done-file", DONE_FILE]
    for entry in resolved_history(c, r.output):
        args += ["--history", entry]
    for key, value in (("tau_namespace", r.namespace), ("tau_workspace", r.workspace)):
        args += ["--tag", f"{key}={value}"]
    args += ["--status-artifact-uri", out_dir]
    mount = {"name": RUNTIME_VOLUME, "mountPath": RUNTIME_DIR}
    sidecar = {
        "name": "metrics-offload",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [SIDECAR_COMMAND],
        "args": args,
        "env": [{"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                {"name": "TAU_EXP_STORE", "value": f"{RUNTIME_DIR}/metrics/{session_id}/expstore"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "data", "mountPath": DURABLE_ROOT}, dict(mount)],
    }
    return Offload(sidecar, {"name": RUNTIME_VOLUME, "emptyDir": {}}, mount, {SESSION_ANNOTATION: session_id})
