"""Background XID listener: an NVML event set and a wait loop on its own thread.

XIDs arrive on a queue that the agent loop drains each tick. The loop updates a heartbeat on
every pass; a wait that never comes back shows up as a stale heartbeat (a finding).
"""

from __future__ import annotations

import ctypes
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from tau_gpuhealth.samples import XidObservation

from .nvml_reader import ERR_GPU_IS_LOST, ERR_TIMEOUT, NvmlReader, describe, error_code

log = logging.getLogger(__name__)


def _direct_call(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class XidWatcher:
    def __init__(
        self,
        reader: NvmlReader,
        wait_ms: int = 5000,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        on_xid: Callable[[], None] | None = None,
    ):
        self.reader = reader
        self.nvml = reader.nvml
        self.wait_ms = wait_ms
        self.clock = clock
        self.monotonic = monotonic
        self.on_xid = on_xid
        self.observations: queue.SimpleQueue[XidObservation] = queue.SimpleQueue()
        self.last_pass = monotonic()
        self.last_error: str | None = None
        self.unsupported_gpus: list[int] = []
        self._event_set: Any = None
        self._uuids: dict[Any, tuple[int, str | None]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- thread control --

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="xid-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            if self.step():
                backoff = 1.0
            else:
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)

    # -- one pass (also driven directly by tests) --

    def step(self) -> bool:
        """One setup-or-wait pass. Returns False when the caller should back off."""
        self.last_pass = self.monotonic()
        nv = self.nvml
        if self._event_set is None:
            try:
                self._setup()
            except Exception as exc:
                self._error(f"XID event registration failed: {describe(exc)}")
                self._event_set = None
                return False
            if self._event_set is None:
                return False
        try:
            data = nv.nvmlEventSetWait(self._event_set, self.wait_ms)
        except nv.NVMLError as exc:
            code = error_code(exc)
            if code == ERR_TIMEOUT:
                return True
            self._error(f"XID wait failed: {describe(exc)}")
            if code != ERR_GPU_IS_LOST:
                self._teardown()
            return False
        self.last_pass = self.monotonic()
        if int(getattr(data, "eventType", 0)) & 0x8:
            index, uuid = self._identify(data.device)
            self.observations.put(
                XidObservation(xid=int(data.eventData), time=self.clock(), gpu_uuid=uuid, gpu_index=index)
            )
            if self.on_xid is not None:
                self.on_xid()
        return True

    def _error(self, message: str) -> None:
        if message != self.last_error:  # log each distinct failure once, not every retry
            log.warning("%s", message)
        self.last_error = message

    def drain(self) -> list[XidObservation]:
        items = []
        while True:
            try:
                items.append(self.observations.get_nowait())
            except queue.Empty:
                return items

    def stale_for(self) -> float:
        return self.monotonic() - self.last_pass

    # -- internals --

    def _setup(self) -> None:
        nv = self.nvml
        self.reader.init(_direct_call)
        count = int(nv.nvmlDeviceGetCount())
        handles = []
        self._uuids = {}
        for index in range(count):
            try:
                handle = nv.nvmlDeviceGetHandleByIndex(index)
            except nv.NVMLError:
                continue  # a lost GPU is reported by the poll loop
            handles.append(handle)
            try:
                uuid = nv.nvmlDeviceGetUUID(handle)
            except nv.NVMLError:
                uuid = None
            self._uuids[self._handle_key(handle)] = (index, uuid)
        if not handles:
            self.last_error = "no GPU handle to register for XID events"
            return
        self._event_set, self.unsupported_gpus = self.reader.create_xid_event_set(_direct_call, handles)
        self.last_error = None

    def _teardown(self) -> None:
        if self._event_set is not None:
            try:
                self.nvml.nvmlEventSetFree(self._event_set)
            except Exception:
                pass
        self._event_set = None

    @staticmethod
    def _handle_key(handle: Any) -> Any:
        try:  # real handles are ctypes pointers: compare them by address
            return ("ptr", ctypes.cast(handle, ctypes.c_void_p).value)
        except (TypeError, ctypes.ArgumentError):
            return handle

    def _identify(self, device: Any) -> tuple[int | None, str | None]:
        known = self._uuids.get(self._handle_key(device))
        if known is not None:
            return known
        try:
            uuid = self.nvml.nvmlDeviceGetUUID(device)
        except Exception:
            uuid = None
        for index, known_uuid in self._uuids.values():
            if known_uuid == uuid:
                return index, uuid
        return None, uuid
