"""ClusterBackend over a simulated cluster that runs in its own process (``cluster_process.py``).

The same SimulatedBackend serves it there, so RBAC, scopes, outages and error messages are the
in-process backend's; this process holds only the cache (fed by the relayed writes, on a thread of
its own, as a watch feeds the real backend's) and calls the primitives. A write returns once its
effect is in this cache, as it does in one process. If the other process ends, every view turns
stale and says why, and calls fail with that reason."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus, ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest
from tau_tui.core.sim.cache_relay import RelayReplayer
from tau_tui.core.sim.cluster_process import SimulatedClusterProcess
from tau_tui.core.sim.process_wire import LOG, SESSION_WRITES, WATCH, decode_error

#: The longest a write waits for its effect to reach this process's cache.
WRITE_SEEN_TIMEOUT_S = 30.0
#: Foreground notes closer together than this are not sent again (each claim would otherwise send one).
FOREGROUND_BUSY_RESEND_S = 0.1
#: How long closing waits for the server to end the session (quitting the app waits for it).
CLOSE_TIMEOUT_S = 2.0


class MirroredClock:
    """The simulated cluster's clock, as its last batch told it (running on in real time)."""

    def __init__(self, now: datetime, monotonic: float, running: bool) -> None:
        self._base = (now, monotonic)
        self.running = running

    def set(self, now: datetime, monotonic: float) -> None:
        self._base = (now, monotonic)

    def now(self) -> datetime:
        now, monotonic = self._base
        return now + timedelta(seconds=time.monotonic() - monotonic) if self.running else now


class ProcessSimulatedBackend(BaseBackend):
    """One session of the simulated cluster in ``process``; ``owns_process``: closing this backend
    stops that process (the demo), otherwise whoever started it does (tests with several sessions)."""

    def __init__(self, process: SimulatedClusterProcess, *, identity: str | None = None,
                 namespace: str | None = None, context: str | None = None, owns_process: bool = False) -> None:
        self.process = process
        self.identity = identity
        self.owns_process = owns_process
        self._namespace = namespace
        self._context = context
        self._clock: MirroredClock | None = None
        super().__init__(ObjectCache(self._now))
        self._replayer = RelayReplayer(self.cache)
        self._applied = 0
        self._applied_changed = threading.Condition()
        self._synced = threading.Event()
        self._closing = False
        self._lost = False
        self._watch: Connection | None = None
        self._relay_thread: threading.Thread | None = None
        self._session: int | None = None
        self._foreground_busy_sent = 0.0

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        if self._watch is not None:
            return
        conn = self.process.connect(WATCH, self.identity, self._namespace, self._context)
        try:
            hello = conn.recv()
        except (OSError, EOFError):
            conn.close()
            raise self.process.gone() from None
        if hello[0] == "err":  # the session could not be made (an unknown context, say)
            conn.close()
            raise decode_error(hello[1])
        self._session, realtime, now, monotonic = hello
        self._clock = MirroredClock(now, monotonic, realtime)
        self._watch = conn
        self._relay_thread = threading.Thread(target=self._follow, args=(conn,), name="tau-sim-relay", daemon=True)
        self._relay_thread.start()
        self._context = self._call("current_context")

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            if self._session is not None and not self._lost:
                # the server then ends this session's stream; short: quitting waits for it
                self.process.call(self._session, "close", timeout=CLOSE_TIMEOUT_S)
        except Exception:  # the other process may be gone already: nothing left to close there
            pass
        if self._relay_thread is not None:
            self._relay_thread.join(timeout=WRITE_SEEN_TIMEOUT_S if not self.owns_process else 2.0)
        if self._watch is not None and (self._relay_thread is None or not self._relay_thread.is_alive()):
            self._watch.close()  # never under a thread still reading it
        if self.owns_process:
            self.process.stop()

    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        return self._synced.wait(timeout) and not self._lost

    def foreground_busy(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        if until - self._foreground_busy_sent >= FOREGROUND_BUSY_RESEND_S:
            self._foreground_busy_sent = until
            self.process.note_foreground_busy(until)

    def _follow(self, conn: Connection) -> None:
        """Apply the relayed writes as they come (this backend's watch)."""
        try:
            while True:
                for op in conn.recv():
                    mark = self._replayer.apply(op)
                    if mark is not None:
                        self._reached(*mark)
        except (OSError, EOFError):
            if not self._closing:
                self._went_away()
        except Exception as err:  # a tap (a session recording) failed on this thread: the cache no longer follows
            if not self._closing:
                self.cache.attach_tap(None)  # what failed is told nothing more
                self._went_away(f"this app stopped following it: {type(err).__name__}: {err}")

    def _reached(self, seq: int, now: datetime, monotonic: float) -> None:
        if self._clock is not None:
            self._clock.set(now, monotonic)
        with self._applied_changed:
            self._applied = seq
            self._applied_changed.notify_all()
        if not self._synced.is_set():
            self._synced.set()
            self.process.note_synced()

    def _went_away(self, reason: str | None = None) -> None:
        """The simulated cluster's process ended (or this one stopped following it): keep what is
        cached, marked stale, and say why."""
        self._lost = True
        if reason is None:
            reason = self.process.gone_reason(wait_s=2.0)  # its socket closes just before it is reaped
        for kind in ResourceKind:
            if self.cache.view_state(kind).status is ViewStatus.READY:
                self.cache.set_state(kind, ViewStatus.ERROR, f"the simulated cluster is unreachable: {reason}")
        self.cache.set_connection(ConnectionState(ConnectionStatus.STALE, self._context, self._now(),
                                                  f"the simulated cluster is unreachable: {reason}"))
        with self._applied_changed:
            self._applied_changed.notify_all()
        self._synced.set()

    # -- calls -------------------------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        if self._lost or self._session is None:
            raise self.process.gone()
        result, marks = self.process.call(self._session, name, *args)
        # A write returns once its effect is cached, except on the relay thread itself (a tap
        # that writes), which would wait for its own work.
        if name in SESSION_WRITES and threading.current_thread() is not self._relay_thread:
            if not self.wait_for_batch(marks.get(self._session, 0)) and self._lost:
                raise self.process.gone()
        return result

    def wait_for_batch(self, seq: int, timeout: float = WRITE_SEEN_TIMEOUT_S) -> bool:
        """Block until the batch ``seq`` of this session is in the cache (False: timed out or lost)."""
        deadline = time.monotonic() + timeout
        with self._applied_changed:
            while self._applied < seq and not self._lost:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._applied_changed.wait(left)
            return not self._lost

    @property
    def session(self) -> int | None:
        return self._session

    def contexts(self) -> builtins.list[str]:
        return list(self._call("contexts"))

    @property
    def current_context(self) -> str | None:
        return self._context

    def who_am_i(self) -> dict[str, Any] | None:
        return self._call("who_am_i")  # type: ignore[no-any-return]

    def use_context(self, name: str) -> None:
        self._call("use_context", name)
        self._context = name

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def use_namespace(self, namespace: str | None) -> None:
        self._call("use_namespace", namespace)
        self._namespace = namespace

    # -- primitives ------------------------------------------------------------------

    def _now(self) -> datetime:
        clock = self._clock
        return clock.now() if clock is not None else datetime.now(UTC)

    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        return self._call("_api_get", rt, name, namespace)  # type: ignore[no-any-return]

    def _api_list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None,
                  field_selector: str | None = None) -> list[dict[str, Any]]:
        return self._call("_api_list", rt, namespace, label_selector, field_selector)  # type: ignore[no-any-return]

    def _api_create(self, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        return self._call("_api_create", rt, namespace, dict(body), dry_run)  # type: ignore[no-any-return]

    def _api_delete(self, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None:
        self._call("_api_delete", rt, name, namespace, dry_run)

    def _api_patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any],
                   dry_run: bool) -> dict[str, Any]:
        return self._call("_api_patch", rt, name, namespace, dict(patch), dry_run)  # type: ignore[no-any-return]

    def _api_evict(self, name: str, namespace: str, dry_run: bool, grace_period_seconds: int | None) -> None:
        self._call("_api_evict", name, namespace, dry_run, grace_period_seconds)

    def _server_version(self) -> dict[str, Any]:
        return self._call("_server_version")  # type: ignore[no-any-return]

    def _visibility_get(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        return self._call("_visibility_get", path, dict(query))  # type: ignore[no-any-return]

    def open_container_log(self, request: LogChunkRequest) -> RelayedLog:
        return self._relayed(request)

    def open_pod_exec(self, request: ExecRequest) -> RelayedLog:
        return self._relayed(request)

    def _relayed(self, request: LogChunkRequest | ExecRequest) -> RelayedLog:
        """A container log or a command's output, streamed from the simulated cluster's process."""
        if self._lost or self._session is None:
            raise self.process.gone()
        conn = self.process.connect(LOG, self._session, request)
        try:
            answer = conn.recv()
        except (OSError, EOFError):
            conn.close()
            raise self.process.gone() from None
        if answer[0] == "err":
            conn.close()
            raise decode_error(answer[1])
        return RelayedLog(conn)


class RelayedLog:
    """A container log streamed from the simulated cluster's process; closable from another thread."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            while True:
                try:
                    message = self._conn.recv()
                except (OSError, EOFError):
                    if self.closed:
                        return
                    raise ConnectionResetError("the simulated cluster's log stream ended with its process") from None
                if message[0] == "data":
                    yield message[1]
                elif message[0] == "end":
                    return
                else:  # the stream's own failure (a broken stream, say), as the server raised it
                    raise decode_error(message[1])
        finally:
            self._conn.close()

    def close(self) -> None:
        """Ask the other process to end the stream; the iterator then ends."""
        if self.closed:
            return
        self.closed = True
        try:
            self._conn.send(("close",))
        except OSError:
            pass
