"""The garbage collector's settings for a process that holds a whole cluster in memory.

CPython's cyclic collector walks every tracked object on a full collection, on whichever thread
happens to allocate, the UI thread included.  A `large` cluster's cache is about 700,000 objects,
and a pane building 100,000 cells triggered several full collections per refresh (measured: the
queue pane's read took 4.2 s with the default settings, 1.7 s without them).  So the app collects
young objects less often, and once the backend's first sync is done it moves what that built (the
cache, which lives as long as the connection) out of the collector's sight with ``gc.freeze``.
Reference counting still frees everything as before; only cycles among frozen objects would stay."""

from __future__ import annotations

import gc

#: One young collection per 50,000 allocations (CPython's default: 700); older generations as usual.
YOUNG_THRESHOLD = 50_000
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 20


_tuned = False


def tune_collector() -> None:
    """For the ``tau-tui`` process only (its entry point calls it): a test process that builds
    hundreds of apps keeps the default collector and never freezes."""
    global _tuned
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
    _tuned = True


def settle_heap() -> int:
    """Collect once, then freeze every object alive now (the synced cache).  Returns how many
    objects are frozen (0: the collector was not tuned for this process).  Call from a worker
    thread: the collection itself takes a moment."""
    if not _tuned:
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
