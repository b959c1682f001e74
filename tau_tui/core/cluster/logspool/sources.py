"""What a log stream reads from, and what its followers hand back to it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from .log_requests import ExecRequest, LogChunkRequest, LogRequest
from .spool import LogSpool


class ClosableIterator(Protocol):
    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class LogSource(Protocol):
    """What a backend provides to a log stream.  The last three serve a run's stream only (a RayJob's
    driver output, a followed run's new pods and its end)."""

    def resolve_log_targets(self, request: LogRequest) -> list[tuple[str, str]]:
        """``(pod, container)`` pairs in display order (Ray head first)."""

    def open_container_log(self, request: LogChunkRequest) -> ClosableIterator:
        """Raw bytes of one container log, every line prefixed by an
        RFC3339Nano timestamp and a space (``timestamps=true``)."""

    def container_finished(self, namespace: str, pod: str, container: str) -> bool:
        """True when this container will write no more (terminated, pod gone)."""

    def open_driver_log(self, request: LogRequest, follow: bool) -> DriverOutput:
        """The driver output of RayJob ``request.ray_job`` (no timestamps); raises
        :class:`DriverUnavailable` when it cannot be read (yet)."""

    def run_finished(self, request: LogRequest) -> bool:
        """True once the run (``request.job`` or ``request.ray_job``) has ended or is gone."""

    def open_pod_exec(self, request: ExecRequest) -> ClosableIterator:
        """The stdout of a command run in a container; raises when it fails."""


class DriverOutput(Protocol):
    """A RayJob driver's output as one read (or follow) gives it."""

    #: The Ray job it belongs to (``status.jobId``): a retried RayJob's next attempt has another.
    job_id: str
    #: Where it was read: ``ray job logs`` in the head, or the head's log-offload sidecar.
    where: str

    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class DriverUnavailable(Exception):
    """The driver output cannot be read now: ``retry`` while the run may still get a head (queued,
    starting), not when it never will (the head gone and no sidecar)."""

    def __init__(self, reason: str, retry: bool):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


# A line waiting in the merge heap: (ns, source order, seq, queued at (monotonic), UTF-8 line). A
# plain tuple: the heap compares in C, and (ns, order, seq) is unique, so the line is never compared.
Entry = tuple[int, int, int, float, bytes]


class FollowerHost(Protocol):
    """What a follower thread reaches of its stream."""

    source: LogSource
    request: LogRequest
    spool: LogSpool
    _stopped: threading.Event

    def newest_ns(self) -> int:
        """The newest line time handed to the merge so far (0: none)."""

    def _push(self, follower: Follower, batch: list[Entry]) -> None: ...
    def _source_done(self, follower: Follower) -> None: ...
    def _note_connected(self) -> None: ...
    def _note_reconnect(self, follower: Follower) -> None: ...


class Follower(Protocol):
    """One source of lines (a container, a RayJob's driver) as the merge sees it."""

    order: int
    pod: str
    container: str
    pushed_ns: int
    finished: bool
    connected: bool
    error: str
    #: False for a source whose line times are its own arrival times (the driver, once its history
    #: is in): the merge does not wait for it.
    holds_watermark: bool

    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...
    def abort(self) -> None: ...
    def finish(self) -> None: ...
