"""The Nodes pane's rows, kept between reads so that a read costs what changed, not the node count.

A row is built again only for a node the cache's journal names, one whose health judgement's
heartbeat deadline passed (both from :class:`~tau_tui.core.operations.live_node_faults.LiveNodeFaults`),
one whose "runs hit" moved (:class:`~tau_tui.core.operations.live_runs_hit.LiveRunsHit`) and one
whose heartbeat age ("HB") reads otherwise now (a heap of the moments each next ticks over).  The
order (worst verdict first, then name) is kept by bisection, and the table's update covers those
rows alone (``plan_changed_rows``).  What a read hands the UI thread (the keys in order, the cells,
the filter texts, the nodes) is never changed after: the next read makes its next version from the
changes (``FrozenMap``, ``OrderedKeys``), so a read copies nothing of the node count.  Every row is
built again the first time, when the freshness turns stale or back, when the fault reader read
every node, and after a read that stopped half way."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text

from tau_gpuhealth.verdicts import Verdict
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.frozen_map import FrozenMap
from tau_tui.core.operations.live_node_faults import LiveNodeFaults
from tau_tui.core.operations.live_runs_hit import LiveRunsHit
from tau_tui.core.operations.node_health_memo import NodeHealthMemo, NodeJudgement
from tau_tui.core.ordered_keys import Move, OrderedKeys
from tau_tui.widgets.cell_text import age, age_changes_at, one_line
from tau_tui.widgets.keyed_table import Matchable
from tau_tui.widgets.node_cells import gpu_summary, telemetry_summary, verdict_cell_for
from tau_tui.widgets.status_text import status_text
from tau_tui.widgets.table_plan import Row, RowsView, TablePlan, TableState, plan_changed_rows

#: Worst first: the order of the rows.
RANK = {None: 9, Verdict.UNHEALTHY: 0, Verdict.UNKNOWN: 1, Verdict.DEGRADED: 2, Verdict.HEALTHY: 3}
#: An age's next tick is taken a little early: a row built again too soon only shows the same text.
_AGE_EARLY_S = 0.001


def filter_text(name: str, health: Any, stale: bool) -> str:
    """What ``/`` matches for a node: its name, the verdict word as shown, and the reason only when
    it explains a problem.  A healthy node's reason is negative text ("NoUnhealthyGPUs: no unhealthy
    GPU") that ``/unhealthy`` would otherwise match on every healthy node (issue #11)."""
    if health is None:
        return f"{name} no GPUs"
    word = "unknown stale" if stale and health.verdict is Verdict.HEALTHY else health.verdict.value
    if health.verdict is Verdict.HEALTHY:
        return f"{name} {word}"
    return f"{name} {word} {health.reason} {health.message or ''}"


def runs_hit_cell(runs: list[str]) -> Text:
    """``✗ 2: team/a, team/b`` (the first two named; the drill-down and /filter find the rest)."""
    if not runs:
        return Text("—")
    shown = ", ".join(runs[:2]) + (f", +{len(runs) - 2}" if len(runs) > 2 else "")
    return Text(f"✗ {len(runs)}: {shown}", style="bold")


@dataclass
class NodesRead:
    rows: Sequence[Row]
    nodes: Mapping[str, NodeView]
    matchable: Mapping[str, Matchable]
    #: verdict word as counted in the status line → nodes
    counts: dict[str, int]
    #: The table's update, or None when the pane plans every row (the table is sorted, or shows its notice).
    plan: TablePlan | None
    full: bool


class NodeRows:
    def __init__(self) -> None:
        self.faults: LiveNodeFaults | None = None
        self.hits = LiveRunsHit()
        self._whole = False  # the rows below are whole (the last read ran to its end)
        self._stale: bool | None = None
        # handed to the UI thread with each read: never changed, only made anew from the changes
        self._cells: FrozenMap[str, list[Any]] = FrozenMap()
        self._matchable: FrozenMap[str, Matchable] = FrozenMap()
        self._nodes: FrozenMap[str, NodeView] = FrozenMap()
        self._keys = OrderedKeys()  # the names in the order below
        self._order: list[tuple[int, str]] = []  # (rank, name), sorted; the reader's own
        self._rank: dict[str, int] = {}
        self._word: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._hit: dict[str, list[str]] = {}
        self._age_due: dict[str, float] = {}
        self._ages: list[tuple[float, str]] = []
        self._planned_source: Any = None
        #: Rows built and full reads (tests bound a read's work by them).
        self.rows_built = 0
        self.full_reads = 0

    def read(self, backend: ClusterBackend, memo: NodeHealthMemo, now: datetime, stale: bool,
             table: TableState | None, notice: Any, keep_reading: Callable[[], None]) -> NodesRead:
        if self.faults is None or self.faults.memo is not memo:
            self.faults = LiveNodeFaults(memo)
        whole, self._whole = self._whole, False  # until this read is done: one stopped half way keeps nothing
        # Likewise the plan the table took: only one that planned() confirms after this read may be extended.
        planned_source, self._planned_source = self._planned_source, None
        faults = self.faults.current(backend, now)
        keep_reading()
        hit = self.hits.current(backend, faults)
        full = not whole or self.faults.full or stale != self._stale
        hit_was, self._stale, self._hit = self._hit, stale, hit
        changed: dict[str, list[Any]] = {}
        removed: list[str] = []
        if full:
            self.full_reads += 1
            self._forget()
            built = _Built({}, {}, {}, [])
            for count, (name, judged) in enumerate(sorted(self.faults.judged.items())):
                if count % 256 == 255:
                    keep_reading()
                self._put(built, name, judged, now, stale, placed=False)
            self._order.sort()
            self._cells, self._matchable, self._nodes = (FrozenMap(built.cells), FrozenMap(built.matchable),
                                                         FrozenMap(built.nodes))
            self._keys = OrderedKeys(name for _, name in self._order)
        else:
            dirty = set(self.faults.moved)
            dirty.update(name for name in hit.keys() | hit_was.keys() if hit.get(name) != hit_was.get(name))
            now_ts = now.timestamp() + _AGE_EARLY_S
            while self._ages and self._ages[0][0] <= now_ts:
                due, name = heapq.heappop(self._ages)
                if self._age_due.get(name) == due:
                    dirty.add(name)
            draft = _Built(self._cells.draft(), self._matchable.draft(), self._nodes.draft(), [])
            for count, name in enumerate(dirty):
                if count % 256 == 255:
                    keep_reading()
                held = self.faults.judged.get(name)
                self._drop(draft, name, held)
                if held is not None:
                    changed[name] = self._put(draft, name, held, now, stale, placed=True)
                else:
                    removed.append(name)
            if dirty:
                self._cells, self._matchable, self._nodes = (draft.cells.freeze(), draft.matchable.freeze(),
                                                             draft.nodes.freeze())
                self._keys = self._keys.moved(draft.moves) if draft.moves else self._keys
        plan = None
        if not full and notice is None and table is not None and table.source is planned_source:
            plan = plan_changed_rows(table, self._keys, changed, removed, self._matchable)
        self._whole = True
        return NodesRead(RowsView(self._keys, self._cells), self._nodes, self._matchable, dict(self._counts), plan,
                         full)

    def planned(self, plan: TablePlan) -> None:
        """The read's table update (the next read plans only its changed rows when the table took it)."""
        self._planned_source = plan.source

    def _forget(self) -> None:
        self._rank, self._word, self._age_due = {}, {}, {}
        self._order, self._ages, self._counts = [], [], {}

    def _drop(self, built: _Built, name: str, judged: NodeJudgement | None) -> None:
        """Take the node's row out before it is built again from ``judged`` (None: it is gone); its
        place in the order stays when its rank does."""
        rank = self._rank.get(name)
        if rank is None:
            return
        if judged is None or _rank_of(judged) != rank:
            del self._rank[name]
            del self._order[bisect_left(self._order, (rank, name))]
            built.moves.append(("remove", name))
        if judged is None:
            built.cells.pop(name)
            built.matchable.pop(name)
            built.nodes.pop(name)
        self._age_due.pop(name, None)
        word = self._word.pop(name, None)
        if word is not None:
            self._counts[word] -= 1
            if not self._counts[word]:
                del self._counts[word]

    def _put(self, built: _Built, name: str, judged: NodeJudgement, now: datetime, stale: bool,
             placed: bool) -> list[Any]:
        """Build the node's row into ``built``; ``placed``: put it in the order now (else the caller sorts)."""
        self.rows_built += 1
        node, health = judged.node, judged.view
        runs = self._hit.get(name, [])
        built.matchable[name] = (f"{filter_text(name, health, stale)} {' '.join(runs)}", node.labels)
        rank = _rank_of(judged)
        if health is None:
            verdict_cell, reason, hb = Text("– no GPUs"), "", "—"
            temp = util = ecc = xids = "—"
        else:
            word = "unknown" if stale and health.verdict is Verdict.HEALTHY else health.verdict.value
            self._word[name] = word
            self._counts[word] = self._counts.get(word, 0) + 1
            verdict_cell = verdict_cell_for(health.verdict.value, stale)
            # whole (to 300 characters): the row cuts it to its column, the line under the table shows it all
            reason = one_line(f"{health.reason}: {health.message}" if health.message else health.reason, 300)
            if health.last_heartbeat:
                hb = age((now - health.last_heartbeat).total_seconds())
                due = self._age_due[name] = age_changes_at(health.last_heartbeat, now)
                heapq.heappush(self._ages, (due, name))
            else:
                hb = "never"
            temp, util, ecc, xids = telemetry_summary(health.detail)
        sched = status_text("cordoned") if node.unschedulable else Text("schedulable" if node.ready else "✗ NotReady")
        cells = [name, verdict_cell, runs_hit_cell(runs), gpu_summary(node), temp, util, ecc, xids, hb, sched, reason]
        if not placed:  # a full read: the caller sorts
            self._rank[name] = rank
            self._order.append((rank, name))
        elif self._rank.get(name) != rank:  # new, or ``_drop`` took it out of the order (its rank moved)
            self._rank[name] = rank
            index = bisect_left(self._order, (rank, name))
            self._order.insert(index, (rank, name))
            built.moves.append(("insert", index, name))
        built.cells[name], built.nodes[name] = cells, node
        return cells


def _rank_of(judged: NodeJudgement) -> int:
    return RANK[judged.view.verdict if judged.view else None]


@dataclass
class _Built:
    """Where a read puts the rows it builds: plain dictionaries on a full read, drafts of the
    FrozenMaps the last read handed over on a read of the changes (with the moves in the order)."""

    cells: Any
    matchable: Any
    nodes: Any
    moves: list[Move]
