"""The driver output of simulated Ray jobs, and the one command a simulated Ray head runs:
``ray job logs <jobId> [--follow]`` (``kubectl exec <head> -c ray-head -- ...``).

A Ray job's driver starts when its head runs and ends with it; its output is generated lazily up
to the simulated "now", like a container log, and printed without timestamps, as the Ray CLI prints
it.  A head with a log-offload sidecar (a container whose name has ``log-offload``) serves the same
output as that container's log, timestamped, so it stays readable after the head's ``ray-head`` ended."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest
from tau_tui.core.cluster.logspool.timestamps import without_timestamps
from tau_tui.core.sim.simlogs import ContainerLog, SimLogReader

HEAD_CONTAINER = "ray-head"
LOG_OFFLOAD_MARKER = "log-offload"
#: The driver starts this long after its head (``ray job submit`` once the cluster is ready).
DRIVER_DELAY_NS = 3_000_000_000


def is_ray_head(pod: Mapping[str, Any]) -> bool:
    return ((pod.get("metadata") or {}).get("labels") or {}).get("ray.io/node-type") == "head"


def offload_sidecars(pod: Mapping[str, Any]) -> list[str]:
    return [c["name"] for c in (pod.get("spec") or {}).get("containers") or () if LOG_OFFLOAD_MARKER in c.get("name", "")]


class DriverLogs:
    """Driver outputs by (namespace, Ray job id)."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, str], ContainerLog] = {}

    def start(self, namespace: str, job_id: str, seed: int, head_start_ns: int, interval_ns: int) -> ContainerLog:
        key = (namespace, job_id)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = ContainerLog(style="ray-driver", seed=seed, start_ns=head_start_ns + DRIVER_DELAY_NS,
                                                interval_ns=interval_ns)
        return log

    def stop(self, namespace: str, job_id: str, at_ns: int, failed: bool) -> None:
        log = self.logs.get((namespace, job_id))
        if log is not None and not log.finished:
            log.stop(at_ns, (f"Job '{job_id}' failed" if failed else f"Job '{job_id}' succeeded",))


def ray_job_logs_command(request: ExecRequest) -> tuple[str, bool]:
    """The job id and ``--follow`` of ``ray job logs JOB_ID [--follow]``; anything else fails as a
    shell would (exit 127), naming the one command the simulation runs."""
    command = list(request.command)
    names = [part for part in command[3:] if not part.startswith("-")]
    if command[:3] != ["ray", "job", "logs"] or len(names) != 1:
        raise ApiFailure(500, "NonZeroExitCode",
                         f"{' '.join(command)}: command terminated with non-zero exit code 127 (a simulated Ray head "
                         "runs only `ray job logs JOB_ID [--follow]`)")
    return names[0], "--follow" in command or "-f" in command


class UntimedOutput:
    """A driver log as ``ray job logs`` prints it: the lines without their timestamps."""

    def __init__(self, reader: SimLogReader):
        self._reader = reader

    def __iter__(self) -> Iterator[bytes]:
        yield from without_timestamps(self._reader)

    def close(self) -> None:
        self._reader.close()


def open_driver_exec(request: ExecRequest, log: ContainerLog | None, job_id: str, follow: bool, lock: threading.RLock,
                     changed: threading.Condition, now_ns: Callable[[], int], break_generation: Callable[[], int],
                     head_gone: Callable[[], bool]) -> UntimedOutput:
    if log is None:
        raise ApiFailure(500, "NonZeroExitCode", f"ray job logs {job_id}: Job {job_id} does not exist on the cluster")
    reader = SimLogReader(log, LogChunkRequest(request.namespace, request.pod, request.container, follow=follow), lock,
                          changed, now_ns, break_generation, lambda: log.finished or head_gone())
    return UntimedOutput(reader)
