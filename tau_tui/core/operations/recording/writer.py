"""The session recorder: every write a backend makes to its cache, plus its visibility answers,
into a compressed recording file (``format.py``), on a core thread of its own.

It taps the layer both backends share (the :class:`~tau_tui.core.cluster.cache.ObjectCache` and
:attr:`BaseBackend.visibility_tap`), so the simulator and the real backend record the same
format.  A tapped write only queues references (the cache's raw objects are never changed
once stored); redaction, JSON and gzip happen on the writer thread, so neither the UI nor
an informer ever waits on the disk.  The compressor is flushed at least every
``flush_every_s`` seconds: an app killed while recording leaves a file that replays up to
its last flush."""

from __future__ import annotations

import gzip
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from tau_tui.core.cluster.cache import CacheSnapshot, Key, PodAllocation
from tau_tui.core.cluster.changes import ConnectionState, ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.recording import format as fmt
from tau_tui.core.operations.redaction import redact, redact_object

#: A queued record: (seconds, operation, payload); payload fields are redacted when written.
_Queued = tuple[float, str, dict[str, Any]]
_STOP: _Queued = (0.0, "", {})
#: gzip's default (9) costs several times the CPU for a few per cent: a recording is written all session.
COMPRESS_LEVEL = 5
#: Keyframes no more often than this many times the last one's writing time (recorded seconds).
KEYFRAME_COST_FACTOR = 30
#: A recording is readable by its owner only, whatever the umask.
RECORDING_MODE = 0o600


def _dumps(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str).encode() + b"\n"


class SessionRecorder:
    """Records one backend into ``path`` from :meth:`start` until :meth:`close`.

    ``keyframe_every_s`` (recorded time) and ``keyframe_every_records`` bound how much a seek
    has to read: a new keyframe (and gzip member) starts when either is reached.  A big cluster
    stretches both: never more records than the keyframe holds objects, never more often than
    ``KEYFRAME_COST_FACTOR`` times what writing the last keyframe took (the ``large`` scenario's
    takes seconds of the writer's CPU)."""

    def __init__(self, backend: BaseBackend, path: str | os.PathLike[str], *, source: str,
                 keyframe_every_s: float = 60.0, keyframe_every_records: int = 5000,
                 flush_every_s: float = 1.0, now: Callable[[], datetime] | None = None) -> None:
        self.backend = backend
        self.path = Path(path)
        self.source = source
        self.keyframe_every_s = keyframe_every_s
        self.keyframe_every_records = keyframe_every_records
        self.flush_every_s = flush_every_s
        self._now = now or backend._now
        self._queue: queue.SimpleQueue[_Queued] = queue.SimpleQueue()
        self._lock = threading.RLock()
        self._last_t = 0.0
        self._keyframe_t = 0.0
        self._since_keyframe = 0
        self._keyframe_objects = 0
        self._keyframe_cost_s = 0.0
        self._visibility: dict[str, dict[str, Any]] = {}
        self._thread: threading.Thread | None = None
        self._file: IO[bytes] | None = None
        self._member: gzip.GzipFile | None = None
        self._closed = False
        #: Records written so far (keyframes included) and keyframes (gzip members) begun.
        self.records_written = 0
        self.keyframes_written = 0
        #: Why the recording stopped early (the disk is full, ...), else None.
        self.error: str | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> SessionRecorder:
        """Create the file (never over an existing one), write the header and the first keyframe,
        and start tapping.  Raises :class:`RecordingError` naming the file when it cannot."""
        try:
            # 0600 from the start: a recording holds whole cluster snapshots (never a chmod after writing).
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), RECORDING_MODE)
            self._file = os.fdopen(fd, "wb")  # closed by the writer thread
        except FileExistsError:
            raise fmt.RecordingError(f"{self.path} already exists: choose another file name for --record "
                                     "(a recording is never overwritten)") from None
        except OSError as err:
            raise fmt.RecordingError(f"cannot create {self.path}: {err.strerror or err}; "
                                     "check that its directory exists and is writable") from None
        try:
            identity = self.backend.who_am_i()
        except Exception:  # who the user was is a detail of the header, not a reason not to record
            identity = None
        contexts = self.backend.contexts()
        header = {"format": fmt.FORMAT, "version": fmt.VERSION, "source": self.source,
                  "context": self.backend.current_context, "contexts": contexts,
                  "namespace": self.backend.namespace,
                  "identity": {k: identity[k] for k in ("username", "groups") if k in identity} if identity else None,
                  "started": fmt.seconds(self._now())}
        self._thread = threading.Thread(target=self._write_loop, args=(header,), name="tau-recorder", daemon=True)
        self._thread.start()
        self.backend.cache.attach_tap(self)
        self.backend.visibility_tap = self._visibility_answered
        return self

    def close(self) -> None:
        """Stop tapping, write what is queued and close the file (idempotent)."""
        with self._lock:
            if self._closed:
                return
            if self._thread is not None:
                self._record(fmt.END, {}, keyframe_due=False)
            self._closed = True
        self.backend.cache.attach_tap(None)
        if self.backend.visibility_tap == self._visibility_answered:
            self.backend.visibility_tap = None
        self._queue.put(_STOP)
        if self._thread is not None:
            self._thread.join()

    # -- the tap (called under the cache's lock: queue and return) -----------------------

    def attached(self, snapshot: CacheSnapshot) -> None:
        with self._lock:
            self._keyframe(snapshot, self._stamp())

    def replaced(self, kind: ResourceKind, items: list[dict[str, Any]]) -> None:
        self._record(fmt.REPLACE, {"kind": kind.name, "items": items})

    def applied(self, kind: ResourceKind, event_type: str, obj: dict[str, Any]) -> None:
        self._record(fmt.APPLY, {"kind": kind.name, "event": event_type, "obj": obj})

    def cleared(self, kind: ResourceKind, status: ViewStatus, message: str) -> None:
        self._record(fmt.CLEAR, {"kind": kind.name, "status": status.value, "message": message})
        self._record(fmt.SCOPE, self._scope())

    def state_set(self, kind: ResourceKind, status: ViewStatus, message: str) -> None:
        self._record(fmt.STATE, {"kind": kind.name, "status": status.value, "message": message})

    def connection_set(self, state: ConnectionState) -> None:
        self._record(fmt.CONNECTION, fmt.encode_connection(state))

    def pod_allocations_replaced(self, allocations: dict[Key, PodAllocation] | None) -> None:
        encoded = None if allocations is None else {fmt.encode_key(k): fmt.encode_allocation(v) for k, v in allocations.items()}
        self._record(fmt.PODS, {"allocations": encoded})

    def pod_allocation_set(self, key: Key, allocation: PodAllocation | None) -> None:
        self._record(fmt.POD, {"key": fmt.encode_key(key), "allocation": fmt.encode_allocation(allocation)})

    def _visibility_answered(self, suffix: str, items: list[dict[str, Any]] | None, why: str) -> None:
        self._record(fmt.VISIBILITY, {"suffix": suffix, "items": items, "why": why}, keyframe_due=False)

    # -- queueing ----------------------------------------------------------------------

    def _stamp(self) -> float:
        """The backend's time, never earlier than the last record's (threads race to the lock)."""
        self._last_t = max(self._last_t, fmt.seconds(self._now()))
        return self._last_t

    def _scope(self) -> dict[str, Any]:
        return {"context": self.backend.current_context, "namespace": self.backend.namespace}

    def _record(self, op: str, payload: dict[str, Any], keyframe_due: bool = True) -> None:
        with self._lock:
            if self._closed:
                return
            t = self._stamp()
            if op == fmt.VISIBILITY:
                self._visibility[payload["suffix"]] = {"items": payload["items"], "why": payload["why"]}
            self._queue.put((t, op, payload))
            self._since_keyframe += 1
            if keyframe_due and (t - self._keyframe_t >= max(self.keyframe_every_s, KEYFRAME_COST_FACTOR * self._keyframe_cost_s)
                                 or self._since_keyframe >= max(self.keyframe_every_records, self._keyframe_objects)):
                self._keyframe(self.backend.cache.snapshot(), t)  # the cache's lock is held: consistent

    def _keyframe(self, snapshot: CacheSnapshot, t: float) -> None:
        payload = {
            "raw": {kind.name: items for kind, items in snapshot.raw.items() if items},
            "states": {kind.name: fmt.encode_state(state) for kind, state in snapshot.states.items()},
            "connection": fmt.encode_connection(snapshot.connection),
            "pods": None if snapshot.pod_allocations is None else
            {fmt.encode_key(k): fmt.encode_allocation(v) for k, v in snapshot.pod_allocations.items()},
            "visibility": dict(self._visibility),
            "positions": fmt.encode_histories(self.backend.tracker.export()),
            "scope": self._scope(),
        }
        self._queue.put((t, fmt.KEYFRAME, payload))
        self._keyframe_objects = sum(len(items) for items in snapshot.raw.values())
        self._keyframe_t = t
        self._since_keyframe = 0

    # -- the writer thread ---------------------------------------------------------------

    def _write_loop(self, header: dict[str, Any]) -> None:
        assert self._file is not None
        last_flush = time.monotonic()
        try:
            pending_header: dict[str, Any] | None = header
            while True:
                try:
                    t, op, payload = self._queue.get(timeout=self.flush_every_s)
                except queue.Empty:
                    self._flush()
                    last_flush = time.monotonic()
                    continue
                if not op:
                    break
                if self.error is not None:
                    continue  # keep draining: the tap must never block on a full queue
                started = time.monotonic()
                if op == fmt.KEYFRAME:
                    self._new_member()
                    if pending_header is not None:
                        self._write(_dumps(pending_header))
                        pending_header = None
                    self.keyframes_written += 1
                self._write(_dumps({"t": t, "op": op, **self._redacted(op, payload)}))
                self.records_written += 1
                if op == fmt.KEYFRAME:
                    self._keyframe_cost_s = time.monotonic() - started
                if time.monotonic() - last_flush >= self.flush_every_s:
                    self._flush()
                    last_flush = time.monotonic()
        except OSError as err:
            self.error = f"recording to {self.path} stopped: {err.strerror or err}"
        finally:
            try:
                if self._member is not None:
                    self._member.close()
                self._file.close()
            except OSError as err:
                self.error = self.error or f"recording to {self.path} could not be closed: {err.strerror or err}"

    def _new_member(self) -> None:
        """Each keyframe opens a gzip member of its own: the reader seeks to it by its offset."""
        assert self._file is not None
        if self._member is not None:
            self._member.close()  # writes the member's trailer; the file stays open
        self._member = gzip.GzipFile(fileobj=self._file, mode="wb", mtime=0, compresslevel=COMPRESS_LEVEL)

    def _write(self, line: bytes) -> None:
        try:
            assert self._member is not None
            self._member.write(line)
        except OSError as err:
            self.error = f"recording to {self.path} stopped: {err.strerror or err}"

    def _flush(self) -> None:
        if self._member is not None and self.error is None:
            try:
                self._member.flush()  # a sync flush: what is written so far can be decompressed
                assert self._file is not None
                self._file.flush()
            except OSError as err:
                self.error = f"recording to {self.path} stopped: {err.strerror or err}"

    @staticmethod
    def _redacted(op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Credentials out of every object and message (the cache's objects are not changed)."""
        if op == fmt.KEYFRAME:
            return {**payload, "raw": redact_object(payload["raw"]),
                    "connection": SessionRecorder._redacted(fmt.CONNECTION, payload["connection"]),
                    "states": {k: [s, redact(m)] for k, (s, m) in payload["states"].items()}}
        if op in (fmt.REPLACE, fmt.APPLY, fmt.VISIBILITY):
            redacted: dict[str, Any] = redact_object(payload)
            return redacted
        if "message" in payload:
            return {**payload, "message": redact(payload["message"] or "")}
        return payload
