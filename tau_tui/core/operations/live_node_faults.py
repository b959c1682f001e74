"""Every node's GPU health judgement and fault, kept current from the cache's change journal.

A read that wants every node's fault (the Runs pane's, on each refresh) would otherwise look at
every node each time: 10,000 at the largest scale.  :meth:`LiveNodeFaults.current` looks only at the
nodes its cursor on the cache's change feed names since its last call and at those whose judgement's
heartbeat deadline passed (kept in a heap); every node when the cursor says so (the first time, a
journal that does not reach back, another backend) or when the clock went back (a replay's seek).

Not thread safe: one reader thread owns an instance; the judgements come from the shared
:class:`~tau_tui.core.operations.node_health_memo.NodeHealthMemo`."""

from __future__ import annotations

import heapq
from datetime import datetime
from typing import TYPE_CHECKING

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.operations.node_health_memo import NodeHealthMemo, NodeJudgement

if TYPE_CHECKING:
    from tau_tui.core.operations.gpufaults import NodeGpuFault


class LiveNodeFaults:
    def __init__(self, memo: NodeHealthMemo) -> None:
        self.memo = memo
        self._cursor = JournalCursor(ResourceKind.NODE)
        self._read_at: datetime | None = None
        #: name → the judgement held for the node now
        self.judged: dict[str, NodeJudgement] = {}
        self._faults: dict[str, NodeGpuFault] = {}
        #: (the moment a judgement stops holding, node name); stale entries are skipped when popped
        self._deadlines: list[tuple[datetime, str]] = []
        #: Nodes whose judgement the last :meth:`current` replaced or dropped, and whether it looked
        #: at every node (then a reader builds everything again).
        self.moved: set[str] = set()
        self.full = False
        #: Nodes looked at, and reads of every node (tests bound a read's work by them).
        self.nodes_looked_at = 0
        self.full_reads = 0

    def current(self, backend: ClusterBackend, now: datetime) -> dict[str, NodeGpuFault]:
        """node → its GPU fault at ``now``, as :func:`~tau_tui.core.operations.gpufaults.node_gpu_faults`
        gives for the nodes the cache holds (a change made meanwhile is read next time)."""
        self.moved = set()
        if self._read_at is None or now < self._read_at:  # the clock went back: judged again
            self._cursor.forget()
        changed = self._cursor.read(backend).keys
        if changed is None:
            self._read_all(backend, now)
        else:
            self.full = False
            # the deadlines passed first: a judgement made now may hold until just before now (a
            # margin), and is then looked at again next time
            due = {name for _, name in changed}
            while self._deadlines and self._deadlines[0][0] < now:
                until, name = heapq.heappop(self._deadlines)
                held = self.judged.get(name)
                if held is not None and held.holds_until == until:
                    due.add(name)
            for name in due:
                self._look_at(backend, name, now)
        self._read_at = now
        return dict(self._faults)

    def _read_all(self, backend: ClusterBackend, now: datetime) -> None:
        self.full = True
        self.full_reads += 1
        self.moved = set(self.judged)
        self.judged, self._faults, self._deadlines = {}, {}, []
        for node in backend.views(ResourceKind.NODE):
            if isinstance(node, NodeView):
                self._hold(node, now)
        self.memo.forget_all_but(set(self.judged))

    def _look_at(self, backend: ClusterBackend, name: str, now: datetime) -> None:
        node = backend.get(ResourceKind.NODE, name)
        if isinstance(node, NodeView):
            self._hold(node, now)
            return
        self.nodes_looked_at += 1
        self.moved.add(name)
        self.judged.pop(name, None)
        self._faults.pop(name, None)
        self.memo.forget(name)

    def _hold(self, node: NodeView, now: datetime) -> None:
        self.nodes_looked_at += 1
        judged = self.memo.judgement(node, now)
        name = node.name
        if self.judged.get(name) is not judged:
            self.moved.add(name)
            self.judged[name] = judged
            if judged.holds_until is not None:
                heapq.heappush(self._deadlines, (judged.holds_until, name))
        if judged.fault is not None:
            self._faults[name] = judged.fault
        else:
            self._faults.pop(name, None)
