"""The executor the app's thread workers run in: daemon threads, and a shutdown that waits for none.

Textual runs a thread worker in the event loop's default executor.  The standard one's threads
are joined when the loop closes and again at the interpreter's exit, so a worker blocked in a
network call (a server that accepts and never answers) or a long wait held the quit for minutes.
Here a call still running at quit is left to end with the process; calls not yet begun are
cancelled.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(ThreadPoolExecutor):
    """At most ``max_workers`` daemon threads (the standard executor's default number).

    A ThreadPoolExecutor by type only: asyncio's ``set_default_executor`` asks for one; none of
    its machinery (non-daemon threads, the join at exit) is used."""

    def __init__(self, max_workers: int | None = None, thread_name_prefix: str = "tau-worker") -> None:
        # The base class's __init__ is not called: it would register the pool for the exit-time join.
        self._limit = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._prefix = thread_name_prefix
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._numbers = itertools.count()
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._calls.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._workers) < self._limit:
                worker = threading.Thread(target=self._work, name=f"{self._prefix}-{next(self._numbers)}", daemon=True)
                self._workers.append(worker)
                worker.start()
        return future

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args, kwargs = call
            del call
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as err:  # noqa: BLE001  (handed to whoever awaits the future)
                    future.set_exception(err)
                else:
                    future.set_result(result)
            del future, fn, args, kwargs
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel what has not begun; never wait for a running call (``wait`` is not honoured)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = len(self._workers)
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                break
            if call is not None:
                call[0].cancel()
        for _ in range(workers):
            self._calls.put(None)  # an idle worker ends; a busy one ends after its call
