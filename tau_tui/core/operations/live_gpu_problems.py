"""The nodes whose agent reports a GPU problem (:func:`~tau_tui.core.operations.gpufaults.gpu_problems`),
kept current from the cache's change feed (a :class:`~tau_tui.core.cluster.journal_cursor.JournalCursor`).

The queue and Runs panes put the cluster's GPU faults in their banner on every read; going over
every GPUNodeHealth report for it costs the node count.  :meth:`LiveGpuProblems.current` reads only
the reports changed since its last call (every one when its cursor says so: the first time, for
another backend, or when the journal does not reach back).  Not thread safe: one reader thread owns an instance."""

from __future__ import annotations

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.journal_cursor import JournalCursor
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import GpuHealthView
from tau_tui.core.operations.gpufaults import gpu_problems

Key = tuple[str, str]


class LiveGpuProblems:
    def __init__(self) -> None:
        self._cursor = JournalCursor(ResourceKind.GPU_HEALTH)
        #: node → the reports naming it that report a problem, by key (the last key's wins, as in a list)
        self._by_node: dict[str, dict[Key, str]] = {}
        self._node_of: dict[Key, str] = {}
        #: Reads of every report, and reports read one by one (tests bound a read's work by them).
        self.full_reads = 0
        self.objects_read = 0

    def current(self, backend: ClusterBackend) -> dict[str, str]:
        """What ``gpu_problems(backend.gpu_health())`` gives."""
        kind = ResourceKind.GPU_HEALTH
        changed = self._cursor.read(backend).keys
        if changed is None:
            self.full_reads += 1
            self._by_node, self._node_of = {}, {}
            for report in backend.views(kind):
                self._put(report.key, report)
        else:
            for namespace, name in changed:
                self._put((namespace, name), backend.get(kind, name, namespace or None))
            self.objects_read += len(changed)
        return {node: reports[max(reports)] for node, reports in self._by_node.items()}

    def _put(self, key: Key, report: object) -> None:
        node = self._node_of.pop(key, None)
        if node is not None:
            reports = self._by_node[node]
            del reports[key]
            if not reports:
                del self._by_node[node]
        if isinstance(report, GpuHealthView):
            for node, problem in gpu_problems((report,)).items():
                self._node_of[key] = node
                self._by_node.setdefault(node, {})[key] = problem
