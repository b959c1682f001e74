"""What to stream: a whole run's logs, and one container's stream as the backend sees it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class LogRequest:
    """What to stream.  Give exactly one of ``pods``, ``job`` or ``ray_job``.

    * ``job``: pods with label ``job-name=<job>``;
    * ``ray_job``: as TauGrid reads a RayJob: the driver's output first (``ray job logs <jobId>`` in
      the head, else the head's log-offload sidecar; ``driver``), then the head and workers of
      ``status.rayClusterName`` via ``ray.io/cluster`` (head first, ``ray.io/node-type``;
      ``containers``);
    * several pods/containers are merged by timestamp, each line prefixed
      ``[pod/container]`` (``[driver]`` for the driver); ``prefix`` prefixes even one source.

    With ``follow``, a ``job`` or ``ray_job`` stream also picks up the run's new pods (a retried
    Job's next pod) and ends once the run has ended, after a last read of every source.
    ``tail_lines=None`` means all lines; ``since_seconds`` limits age (the driver's output has no
    timestamps: ``since_seconds`` leaves it whole, ``tail_lines`` keeps its last lines)."""

    namespace: str
    pods: tuple[str, ...] = ()
    job: str | None = None
    ray_job: str | None = None
    container: str | None = None
    all_containers: bool = False
    previous: bool = False
    follow: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    tail_lines: int | None = None
    driver: bool = True
    containers: bool = True
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """A command run in a container (``kubectl exec POD -c CONTAINER -- COMMAND``); its stdout is read."""

    namespace: str
    pod: str
    container: str
    command: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LogChunkRequest:
    """One container stream as the backend's raw log source sees it
    (always requested with server timestamps, for merge and resume)."""

    namespace: str
    pod: str
    container: str
    previous: bool = False
    follow: bool = False
    since_time: datetime | None = None
    since_seconds: int | None = None
    tail_lines: int | None = None
