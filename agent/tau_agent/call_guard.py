"""Per-call deadline for NVML: a call that does not return is a finding, not a stuck agent.

NVML calls go through ctypes and release the GIL, so a hung call blocks only its own thread.
A batch of calls for one GPU runs on a worker thread; the caller watches the start time of the
call in progress and gives up on the worker when that call passes its deadline. The abandoned
worker exits when (if ever) the call returns; until then its key (GPU) is reported as hung and
no new call is sent to it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")

Caller = Callable[..., Any]


class CallHung(Exception):
    def __init__(self, call: str, key: str):
        super().__init__(f"NVML call {call} for {key} did not return within its deadline")
        self.call = call
        self.key = key


class _Worker:
    def __init__(self, guard: CallGuard):
        self.guard = guard
        self.jobs: queue.SimpleQueue[tuple[str, Callable[[Caller], Any], threading.Event, list[Any]]] = queue.SimpleQueue()
        self.current: tuple[str, float] | None = None
        self.current_key: str | None = None
        self.abandoned = False
        self.thread = threading.Thread(target=self._loop, name="nvml-call-worker", daemon=True)
        self.thread.start()

    def call(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        self.current = (name, self.guard.monotonic())
        try:
            return fn(*args)
        finally:
            self.current = None

    def _loop(self) -> None:
        while True:
            key, job, done, box = self.jobs.get()
            self.current_key = key
            try:
                box.append((True, job(self.call)))
            except BaseException as exc:  # handed back to the caller
                box.append((False, exc))
            done.set()
            if self.abandoned:
                self.guard._release(self)
                return
            self.current_key = None


class CallGuard:
    def __init__(self, timeout_s: float, max_abandoned: int = 4, monotonic: Callable[[], float] = time.monotonic):
        self.timeout_s = timeout_s
        self.max_abandoned = max_abandoned
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._stuck: dict[str, tuple[str, _Worker]] = {}  # key -> (call name, worker)

    def stuck_calls(self) -> dict[str, str]:
        with self._lock:
            return {key: call for key, (call, _w) in self._stuck.items()}

    def run(self, key: str, job: Callable[[Caller], T]) -> T:
        """Run job(call) on the worker; call(name, fn, *args) performs one watched NVML call."""
        with self._lock:
            if key in self._stuck:
                raise CallHung(self._stuck[key][0], key)
            if len(self._stuck) >= self.max_abandoned:
                raise CallHung("(too many hung NVML calls; not calling NVML)", key)
            if self._worker is None:
                self._worker = _Worker(self)
            worker = self._worker
        done = threading.Event()
        box: list[Any] = []
        worker.jobs.put((key, job, done, box))
        step = max(self.timeout_s / 4, 0.001)
        while not done.wait(step):
            current = worker.current
            if current is not None and self.monotonic() - current[1] > self.timeout_s:
                with self._lock:
                    if done.is_set():
                        break
                    worker.abandoned = True
                    self._stuck[key] = (current[0], worker)
                    self._worker = None
                raise CallHung(current[0], key)
        ok, value = box[0]
        if ok:
            return cast(T, value)  # the worker boxed job(call)'s result
        raise value

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            for key, (_call, w) in list(self._stuck.items()):
                if w is worker:
                    del self._stuck[key]
