"""A :class:`~tau_tui.core.operations.run_index.RunIndex` kept current from the cache's change journal.

Building the index reads every Workload, pod and event (20,000 of each at ``--demo large``: a
sizeable part of a second of the interpreter, which the UI thread shares).  A reader that looks
at a few runs after each batch of changes (the evidence recorder, while the cluster churns at 200
changes/s) would rebuild it several times a second.  :meth:`LiveRunIndex.current` instead reads
only the objects its cursors on the cache's change feed name since the last call, and the whole
lists only when a cursor says so (the first time, or when the journal does not reach back).

Not thread safe: one reader thread owns an instance."""

from __future__ import annotations

from collections.abc import Callable

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import EventView, ObjectView, PodView, WorkloadView
from tau_tui.core.operations.run_index import Key, RunIndex

#: The kinds the index holds, and the view type each must be.
INDEXED_KINDS: dict[ResourceKind, type[ObjectView]] = {
    ResourceKind.WORKLOAD: WorkloadView, ResourceKind.POD: PodView, ResourceKind.EVENT: EventView}


class LiveRunIndex:
    def __init__(self, backend: ClusterBackend) -> None:
        self.backend = backend
        self._index = RunIndex()
        #: Per kind: its place in the change feed, and the views the index holds (to remove them again).
        self._cursors = {kind: JournalCursor(kind) for kind in INDEXED_KINDS}
        self._views: dict[ResourceKind, dict[Key, ObjectView]] = {kind: {} for kind in INDEXED_KINDS}
        #: Reads of a whole kind, and objects read one by one (tests bound the work by them).
        self.full_reads = 0
        self.objects_read = 0
        #: What the last :meth:`current` changed in the index: (the view it held, the view it holds
        #: now) per object, None for none; and whether it read a kind whole (then the Runs pane
        #: reads every run again, rather than look for the runs those objects are of).
        self.moved: list[tuple[ObjectView | None, ObjectView | None]] = []
        self.relisted = False

    def current(self) -> RunIndex:
        """The index as the cache holds the objects now (a change made meanwhile is read next time)."""
        self.moved = []
        self.relisted = False
        for kind in INDEXED_KINDS:
            changed = self._cursors[kind].read(self.backend).keys
            move = self._mover(kind)
            if changed is None:
                self.full_reads += 1
                self.relisted = True
                listed = {view.key: view for view in self.backend.views(kind)}
                held = self._views[kind]
                for key in [key for key in held if key not in listed]:
                    move(key, None)
                for key, view in listed.items():
                    if held.get(key) is not view:
                        move(key, view)
            else:
                for namespace, name in changed:
                    move((namespace, name), self.backend.get(kind, name, namespace or None))
                self.objects_read += len(changed)
        return self._index

    def _mover(self, kind: ResourceKind) -> Callable[[Key, ObjectView | None], None]:
        """For ``kind``: a function that makes the index hold a view under a key from now on (None: nothing)."""
        held, view_type, index, moved = self._views[kind], INDEXED_KINDS[kind], self._index, self.moved

        def move(key: Key, view: ObjectView | None) -> None:
            old = held.pop(key, None)
            if old is not None:
                index.remove(old)
            if view is not None and not isinstance(view, view_type):
                view = None
            if view is not None:
                held[key] = view
                index.put(view)
            if old is not view:
                moved.append((old, view))

        return move
