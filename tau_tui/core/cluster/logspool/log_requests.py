"""What to stream: a whole run's logs, and one container's stream as the backend sees it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class LogRequest:
    """What to stream.  Give exactly one of ``pods``, ``job`` or ``ray_job``.

    * ``job``: pods with label ``job-name=<job>``;
    * ``ray_job``: head and workers of ``status.rayClusterName`` via
      ``ray.io/cluster`` (head first, ``ray.io/node-type``);
    * several pods/containers are merged by timestamp, each line prefixed
      ``[pod/container]``.

    ``tail_lines=None`` means all lines; ``since_seconds`` limits age."""

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
