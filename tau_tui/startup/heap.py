"""The garbage collector's settings for a process that holds a whole cluster in memory.

CPython's cyclic collector walks every tracked object on a full collection, on whichever thread
happens to allocate, the UI thread included, and holds the interpreter while it does.  A `large`
cluster's cache is about 800,000 objects, and a pane building 100,000 cells triggered several
full collections per refresh (measured: the queue pane's read took 4.2 s with the default
settings, 1.7 s without them).  So once the backend's first sync is done the app moves what that
built (the cache, which lives as long as the connection) out of the collector's sight with
``gc.freeze``.

Then the cluster keeps changing, and what survives piles up again.  Measured on ``--demo large``
(collector callbacks, 40 s of typing after the freeze): with one young collection per 50,000
allocations, a young collection paused every thread for up to 113 ms and a middle one up to 913 ms;
with 10,000 and 5 they were 44 and 76 ms, but two full collections of 0.9 and 1.4 s came instead.
So young collections are small and frequent, full collections never start on their own, and the
app collects and freezes again on its own terms (:func:`settle_heap`) when nobody is pressing keys
(``app_components/heap_upkeep.py``).  Reference counting still frees everything as before; cycles
among frozen objects wait for the next settle that unfreezes first (:data:`FULL_SETTLE_EVERY_S`)."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tau_tui.core.heap_trim import return_free_memory
from tau_tui.startup.collection_log import log_collections, note_line

#: One young collection per 10,000 allocations (CPython's default: 700), a middle one per 5 young.
YOUNG_THRESHOLD = 10_000
MIDDLE_THRESHOLD = 5
#: Full collections are the app's (settle_heap, when keys are quiet), never an allocation's.
OLD_THRESHOLD = 1_000_000_000


#: At most this often a settle collects the frozen objects too (a walk of everything alive)...
FULL_SETTLE_EVERY_S = 60.0
#: ...and only once keys have been quiet this long: every thread waits for that walk (0.9 s at
#: `large`, seconds at `xl`; benchmarks/app_keys_tmux.py), so it waits for a person who stepped away,
#: not one reading the screen between two keys.
FULL_SETTLE_QUIET_S = 30.0

_tuned = False
_last_full_at = time.monotonic()
#: Reads holding the young and middle collections off (:func:`collections_held`), and its lock.
_holds = 0
_holds_lock = threading.Lock()


def tune_collector() -> None:
    """For the ``tau-tui`` process only (its entry point calls it): a test process that builds
    hundreds of apps keeps the default collector and never freezes."""
    global _tuned
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
    _tuned = True
    log_collections()


def settle_heap(keys_quiet_s: float = float("inf"), collect: bool = True) -> int:
    """Collect once, then freeze every object alive now (the synced cache, and later what survived
    since the last settle).  Returns how many objects are frozen (0: the collector was not tuned for
    this process).  Call from a worker thread: the collection walks every object not yet frozen, and
    every one when a full settle is due and keys have been quiet ``keys_quiet_s`` >= FULL_SETTLE_QUIET_S.
    ``collect=False`` only freezes (no walk): for the first sync, which ends while a person may be
    pressing keys and whose new cache a collection would walk whole (seconds at `xl`); its cyclic
    garbage waits for the first full settle."""
    global _last_full_at
    if not _tuned:
        return 0
    now = time.monotonic()
    full = collect and now - _last_full_at >= FULL_SETTLE_EVERY_S and keys_quiet_s >= FULL_SETTLE_QUIET_S
    if full:
        # frozen objects that became cyclic garbage since (replaced rows, views) are only found
        # by a collection that sees them: without it they pile up for as long as the cluster changes
        _last_full_at = now
        gc.unfreeze()
    started = time.perf_counter()
    if collect:
        gc.collect()
    gc.freeze()
    collected = time.perf_counter()
    return_free_memory()  # what the collection and the build before it freed leaves the process
    frozen = gc.get_freeze_count()
    note_line({"settle": "full" if full else "since the last" if collect else "freeze only", "collect_s": collected - started,
               "trim_s": time.perf_counter() - collected, "frozen": frozen})
    return frozen


@contextmanager
def collections_held() -> Iterator[None]:
    """No collection starts on its own inside, and what was built inside is frozen after it (tuned
    process only; any thread, nested or at once).  A pane's first read builds 20,000 rows and
    statuses that stay alive: each young and middle collection during it walked what it had built
    so far again (a quarter of a cold Runs read), and one collection after it walked all of it
    (0.3 s).  Frozen, they are freed by reference counting as before when the pane drops them; a
    cycle that became garbage since the last settle stays, once per pane's first read."""
    global _holds
    if not _tuned:
        yield
        return
    with _holds_lock:
        _holds += 1
        if _holds == 1:
            gc.disable()
    try:
        yield
    finally:
        with _holds_lock:
            _holds -= 1
            if _holds == 0:
                gc.freeze()
                gc.enable()
