"""Which keys of a kind changed after a generation, for readers that read only those
(:meth:`~tau_tui.core.cluster.cache.ObjectCache.changed_since`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from tau_tui.core.cluster.kinds import ResourceKind

Key = tuple[str, str]
#: Changes a kind's journal keeps: at 200 changes a second, over a minute's worth; a reader further
#: behind reads everything again.
JOURNAL_KEPT = 16_384


class ChangeJournals:
    """Per kind asked about: ``(generation, key)`` of each object stored or removed since, and the
    newest generation the journal has dropped.  Not thread-safe: the cache calls it under its lock."""

    def __init__(self) -> None:
        self._journals: dict[ResourceKind, deque[tuple[int, Key]]] = {}
        self._forgot: dict[ResourceKind, int] = {}

    def changed_since(self, kind: ResourceKind, generation: int, current: int) -> set[Key] | None:
        journal = self._journals.get(kind)
        if journal is None:
            self._journals[kind] = deque(maxlen=JOURNAL_KEPT)
            self._forgot[kind] = current
            return None
        if generation < self._forgot[kind] or generation > current:
            return None
        keys: set[Key] = set()
        for changed_at, key in reversed(journal):
            if changed_at <= generation:
                break
            keys.add(key)
        return keys

    def note(self, kind: ResourceKind, generation: int, key: Key) -> None:
        journal = self._journals.get(kind)
        if journal is not None:
            if len(journal) == journal.maxlen:
                self._forgot[kind] = journal[0][0]
            journal.append((generation, key))

    def note_many(self, kind: ResourceKind, first: int, keys: Sequence[Key]) -> None:
        """``keys`` changed at generations ``first``, ``first + 1``...: as many :meth:`note` calls,
        in time proportional to what the journal keeps, not to ``len(keys)``."""
        journal = self._journals.get(kind)
        if journal is None or not keys:
            return
        kept = journal.maxlen or JOURNAL_KEPT
        dropped = len(journal) + len(keys) - kept
        if dropped > 0:  # the newest entry dropped: an old one, or one of these
            self._forgot[kind] = journal[dropped - 1][0] if dropped <= len(journal) else first + dropped - 1 - len(journal)
        skipped = max(0, len(keys) - kept)
        journal.extend((first + skipped + i, key) for i, key in enumerate(keys[skipped:]))
