"""The app's thread workers run in daemon threads that a shutdown does not wait for (#33)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tau_tui.startup.daemon_executor import DaemonThreadPool

GUARD_S = 30.0


def test_results_and_errors_reach_the_caller():
    pool = DaemonThreadPool(max_workers=2)
    assert pool.submit(lambda a, b: a + b, 2, b=3).result(GUARD_S) == 5
    failing = pool.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(GUARD_S)
    pool.shutdown()


def test_shutdown_leaves_a_blocked_call_behind_and_cancels_what_has_not_begun():
    release = threading.Event()
    pool = DaemonThreadPool(max_workers=1)
    blocked = pool.submit(release.wait)
    queued = pool.submit(lambda: "never run")
    while not blocked.running():
        threading.Event().wait(0.01)
    pool.shutdown(wait=True)  # returns although the call still blocks
    assert blocked.running() and not blocked.done()
    assert queued.cancelled()
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("tau-worker"))
    with pytest.raises(RuntimeError):
        pool.submit(print)
    release.set()
    assert blocked.result(GUARD_S) is True


def test_at_most_max_workers_threads_and_idle_ones_are_reused():
    pool = DaemonThreadPool(max_workers=3, thread_name_prefix="tau-worker-reuse")
    for _ in range(20):
        pool.submit(lambda: None).result(GUARD_S)
    gate = threading.Barrier(3, timeout=GUARD_S)
    for future in [pool.submit(gate.wait) for _ in range(3)]:
        future.result(GUARD_S)
    assert len([t for t in threading.enumerate() if t.name.startswith("tau-worker-reuse")]) == 3
    pool.shutdown()


def test_an_event_loop_closes_without_waiting_for_its_blocked_executor_call():
    release = threading.Event()
    started = threading.Event()

    def blocked() -> None:
        started.set()
        release.wait()

    async def main() -> None:
        asyncio.get_running_loop().run_in_executor(None, blocked)
        await asyncio.get_running_loop().run_in_executor(None, started.wait)

    closed = threading.Event()

    def run_and_close() -> None:
        with asyncio.Runner(loop_factory=lambda: _loop_with(DaemonThreadPool())) as runner:
            runner.run(main())
        closed.set()

    # In a thread of its own, so that a close that waits for the blocked call fails here, not hangs.
    runner_thread = threading.Thread(target=run_and_close, daemon=True)
    runner_thread.start()
    try:
        # The Runner's close (shutdown_default_executor) returned while the call still blocks.
        assert closed.wait(GUARD_S), "the event loop's close waited for the blocked executor call"
        assert started.is_set()
    finally:
        release.set()
        runner_thread.join(GUARD_S)


def _loop_with(pool: DaemonThreadPool) -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_default_executor(pool)
    return loop
