"""Which keys of a kind changed after a generation, for readers that read only those
(:meth:`~tau_tui.core.cluster.cache.ObjectCache.changes`, through
:class:`~tau_tui.core.cluster.journal_cursor.JournalCursor`).

A kind's journal holds each key once, with the generation of its last change, oldest change first:
a key changed a thousand times since a reader's last look is one entry, so what a reader is handed
is bounded by the keys that changed, never by how often they did.  It keeps at least
:data:`JOURNAL_LEAST` keys and as many as twice the kind's objects (keys of objects removed since
fall out first, being the oldest): a reader further behind than that would be handed about every
object anyway, and reads the kind whole."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from tau_tui.core.cluster.kinds import ResourceKind

Key = tuple[str, str]
#: Keys a kind's journal keeps at the least, however few objects the kind has.
JOURNAL_LEAST = 16_384


class ChangeJournals:
    """Per kind asked about: each key stored or removed since, by the generation of its last change,
    and the newest generation the journal has dropped.  Not thread-safe: the cache calls it under
    its lock."""

    def __init__(self) -> None:
        self._journals: dict[ResourceKind, OrderedDict[Key, int]] = {}
        self._forgot: dict[ResourceKind, int] = {}

    def follows(self, kind: ResourceKind) -> bool:
        return kind in self._journals

    def start(self, kind: ResourceKind, current: int) -> None:
        """Journal ``kind`` from generation ``current`` on (what came before is not known)."""
        if kind not in self._journals:
            self._journals[kind] = OrderedDict()
            self._forgot[kind] = current

    def changed_since(self, kind: ResourceKind, generation: int, current: int, most: int | None = None) -> set[Key] | None:
        """The keys changed after ``generation``; None when the journal does not reach back that far,
        ``generation`` is not one this kind had, or more than ``most`` keys changed (a reader is
        better off reading everything).  Costs the keys changed (at most ``most`` + 1 looked at)."""
        journal = self._journals.get(kind)
        if journal is None or generation < self._forgot[kind] or generation > current:
            return None
        keys: set[Key] = set()
        for key, changed_at in reversed(journal.items()):
            if changed_at <= generation:
                break
            if most is not None and len(keys) >= most:
                return None
            keys.add(key)
        return keys

    def note(self, kind: ResourceKind, generation: int, key: Key, objects: int) -> None:
        """``key`` changed at ``generation``; the kind holds ``objects`` objects now."""
        journal = self._journals.get(kind)
        if journal is None:
            return
        journal[key] = generation
        journal.move_to_end(key)
        self._trim(kind, journal, objects)

    def note_many(self, kind: ResourceKind, first: int, keys: Sequence[Key], objects: int) -> None:
        """``keys`` changed at generations ``first``, ``first + 1``...: as many :meth:`note` calls."""
        journal = self._journals.get(kind)
        if journal is None or not keys:
            return
        move = journal.move_to_end
        for offset, key in enumerate(keys):
            journal[key] = first + offset
            move(key)
        self._trim(kind, journal, objects)

    def _trim(self, kind: ResourceKind, journal: OrderedDict[Key, int], objects: int) -> None:
        kept = max(JOURNAL_LEAST, 2 * objects)
        while len(journal) > kept:
            _, dropped = journal.popitem(last=False)
            if dropped > self._forgot[kind]:
                self._forgot[kind] = dropped
