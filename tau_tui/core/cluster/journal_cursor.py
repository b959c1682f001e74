"""A reader's place in the cache's one change feed: the journal of one kind.

Every reader that keeps something made from the cache between its reads (the queue pane's rows,
the run index, the GPU faults, the estimated positions, the evidence recorder) asks its cursor
what changed since its last read and gets either the keys that did or "read everything": the
first read (the cursor primes the journal, which then follows the kind), a read of another
backend, one after :meth:`JournalCursor.forget`, one the journal no longer reaches back to, and
one after more changes than a :attr:`JournalCursor.cost_ratio`-th of the kind's objects, when
reading each changed object would cost more than reading them all.  The generation and the keys
are taken together under the cache's lock, before the reader reads any object: a change made
while it reads is named again next time, never missed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tau_tui.core.cluster.kinds import ResourceKind

Key = tuple[str, str]
#: Reading one changed object (a look-up, the reader's own update) costs about this many times
#: what one object of a whole read does: past a quarter of the kind, a whole read is cheaper.
INCREMENTAL_COST = 4


class ChangeFeed(Protocol):
    """Where a cursor reads (a backend, or its cache): :meth:`~tau_tui.core.cluster.interfaces.Watcher.changes`."""

    def changes(self, kind: ResourceKind, since: int | None, cost_ratio: int = 1) -> tuple[int, set[Key] | None]: ...
    def generation(self, kind: ResourceKind) -> int: ...


@dataclass(frozen=True, slots=True)
class Changes:
    """What a cursor's read found: the generation it read at, and the keys changed since the last
    read (None: read everything)."""

    generation: int
    keys: set[Key] | None

    @property
    def everything(self) -> bool:
        return self.keys is None


class JournalCursor:
    """One reader's place in ``kind``'s journal (one thread reads it)."""

    def __init__(self, kind: ResourceKind, cost_ratio: int = INCREMENTAL_COST) -> None:
        self.kind = kind
        self.cost_ratio = cost_ratio
        self._source: ChangeFeed | None = None
        self._generation: int | None = None
        #: Reads that said "read everything", and keys handed over (tests bound a reader's work by them).
        self.full_reads = 0
        self.keys_read = 0

    @property
    def generation(self) -> int | None:
        """The generation the last read was at (None: none yet, or forgotten)."""
        return self._generation

    def read(self, source: ChangeFeed) -> Changes:
        """What changed in ``source`` since the last read; the cursor is at the generation read now."""
        since = self._generation if source is self._source else None
        generation, keys = source.changes(self.kind, since, self.cost_ratio)
        self._source, self._generation = source, generation
        if keys is None:
            self.full_reads += 1
        else:
            self.keys_read += len(keys)
        return Changes(generation, keys)

    def peek(self, source: ChangeFeed) -> bool:
        """Whether ``source`` moved since the last read (no read)."""
        return source is not self._source or source.generation(self.kind) != self._generation

    def forget(self) -> None:
        """The next read is "read everything" (what the reader kept no longer holds)."""
        self._generation = None
