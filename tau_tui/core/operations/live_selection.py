"""The objects of one kind that a test picks (a node's pods, its events), kept current from the
cache's change feed (a :class:`~tau_tui.core.cluster.journal_cursor.JournalCursor`): every object
when the cursor says so (the first time, or when the journal does not reach back), then only the
objects changed since the last call.  A pane that shows a few objects out of a large
cluster's list so reads what changed, not the list.  Not thread safe: one reader thread owns an
instance."""

from __future__ import annotations

from collections.abc import Callable

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import ObjectView

Key = tuple[str, str]


class LiveSelection:
    def __init__(self, kind: ResourceKind, picks: Callable[[ObjectView], bool]) -> None:
        self.kind = kind
        self.picks = picks
        self._cursor = JournalCursor(kind)
        self._held: dict[Key, ObjectView] = {}
        #: Whole lists read, and objects read one by one (tests bound a read's work by them).
        self.full_reads = 0
        self.objects_read = 0

    def current(self, backend: ClusterBackend) -> list[ObjectView]:
        """The objects picked, in the cache's order (namespace, name)."""
        kind = self.kind
        changed = self._cursor.read(backend).keys
        if changed is None:
            self.full_reads += 1
            self._held = {view.key: view for view in backend.views(kind) if self.picks(view)}
        else:
            held = self._held
            for namespace, name in changed:
                view = backend.get(kind, name, namespace or None)
                if view is not None and self.picks(view):
                    held[(namespace, name)] = view
                else:
                    held.pop((namespace, name), None)
            self.objects_read += len(changed)
        return [self._held[key] for key in sorted(self._held)]
