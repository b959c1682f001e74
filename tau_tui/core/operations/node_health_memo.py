"""Each node's GPU health view and fault, kept while its Node view is the same object and the clock
is before the next moment a heartbeat in it goes stale.

The Runs and Nodes panes and the evidence recorder judge nodes' GPU health on their reads.  A
judgement moves only when the node changes (the cache then holds a new view) or a heartbeat ages out
(:func:`~tau_gpuhealth.nodeview.view_holds_until`), so a read works out only those
(:class:`~tau_tui.core.operations.live_node_faults.LiveNodeFaults` also looks at only those).  A
clock that went back (a replay moved to an earlier moment) works the node out again.  Reads and
writes are single dictionary operations, safe from the panes' and the recorder's threads."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tau_tui.core.cluster.view_types import NodeView

if TYPE_CHECKING:  # GPU health (its pydantic models) loads with the first judgement, in a reading thread
    from tau_gpuhealth.nodeview import NodeHealthView
    from tau_tui.core.operations.gpufaults import NodeGpuFault


@dataclass(frozen=True, slots=True)
class NodeJudgement:
    """One node's judgement at ``judged_at``, and until when it holds."""


    node: NodeView
    view: NodeHealthView | None
    fault: NodeGpuFault | None
    judged_at: datetime
    #: None: the judgement holds while the node is the same object
    holds_until: datetime | None


class NodeHealthMemo:
    def __init__(self) -> None:
        self._entries: dict[str, NodeJudgement] = {}
        #: Nodes judged (tests bound a read's work by it).
        self.computed = 0

    def _judged(self, node: NodeView, now: datetime) -> NodeJudgement:
        hit = self._entries.get(node.name)
        if hit is not None and hit.node is node and hit.judged_at <= now \
                and (hit.holds_until is None or now <= hit.holds_until):
            return hit
        from tau_gpuhealth.nodeview import view_holds_until
        from tau_tui.core.operations.gpufaults import fault_of, heartbeat_period_of, node_health_view

        view = node_health_view(node, now)
        judged = NodeJudgement(node, view, fault_of(node, view) if view is not None else None, now,
                         view_holds_until(dict(node.raw), now, heartbeat_period_of(node)) if view is not None else None)
        self._entries[node.name] = judged
        self.computed += 1
        return judged

    def judgement(self, node: NodeView, now: datetime) -> NodeJudgement:
        """The node's view and fault at ``now``, worked out again only when they may have moved."""
        return self._judged(node, now)

    def view(self, node: NodeView, now: datetime) -> NodeHealthView | None:
        """:func:`~tau_tui.core.operations.gpufaults.node_health_view`, worked out again only when it may have moved."""
        return self._judged(node, now).view

    def fault(self, node: NodeView, now: datetime) -> NodeGpuFault | None:
        """One node's GPU fault (None: none), worked out again only when it may have moved."""
        return self._judged(node, now).fault

    def forget(self, name: str) -> None:
        """A node that is gone (a reader that does not see every node drops it this way)."""
        self._entries.pop(name, None)

    def forget_all_but(self, names: set[str]) -> None:
        """Forget the nodes not in ``names`` (a reader that saw every node: the others are gone)."""
        if len(names) < len(self._entries):
            for name in list(self._entries):
                if name not in names:
                    self._entries.pop(name, None)

    def faults(self, nodes: Iterable[NodeView], now: datetime) -> dict[str, NodeGpuFault]:
        """:func:`~tau_tui.core.operations.gpufaults.node_gpu_faults`, from the kept judgements."""
        out: dict[str, NodeGpuFault] = {}
        names: set[str] = set()
        for node in nodes:
            names.add(node.name)
            fault = self._judged(node, now).fault
            if fault is not None:
                out[node.name] = fault
        self.forget_all_but(names)  # nodes gone (the caller saw every node)
        return out
