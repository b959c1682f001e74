"""Cluster-wide GPU faults in one line, for the panes a user opens first (issue #11:
``--demo faults`` opened on a queue that looked healthy)."""

from __future__ import annotations

from collections.abc import Iterable

from tau_tui.core.cluster.view_types import GpuHealthView

#: verdicts worth a line on every queue/runs screen (unknown is shown on the Nodes pane)
FAULT_VERDICTS = ("unhealthy", "degraded")


def gpu_problems(reports: Iterable[GpuHealthView]) -> dict[str, str]:
    """node → "unhealthy (Xid79)" for every node whose agent reports a GPU problem."""
    problems: dict[str, str] = {}
    for report in reports:
        status = report.status or {}
        verdict = str(status.get("verdict") or "")
        if verdict not in FAULT_VERDICTS:
            continue
        codes = sorted({str(r.get("code")) for gpu in status.get("gpus") or () for r in gpu.get("reasons") or ()
                        if r.get("code")} | {str(r.get("code")) for r in status.get("reasons") or () if r.get("code")})
        problems[report.node_name or report.name] = f"{verdict} ({', '.join(codes)})" if codes else verdict
    return problems


def fault_summary(problems: dict[str, str], shown: int = 3) -> str | None:
    """``⚠ GPU faults: 2 nodes unhealthy (gpu-node-1, gpu-node-6), 1 degraded (gpu-node-4)``
    (one line at 80 columns for a fault or two; the Nodes pane has the details)."""
    if not problems:
        return None
    parts: list[str] = []
    for verdict in FAULT_VERDICTS:
        nodes = sorted(n for n, p in problems.items() if p.startswith(verdict))
        if nodes:
            names = ", ".join(nodes[:shown]) + (f", +{len(nodes) - shown} more" if len(nodes) > shown else "")
            noun = "" if parts else (" nodes" if len(nodes) > 1 else " node")  # "2 nodes unhealthy (..), 1 degraded (..)"
            parts.append(f"{len(nodes)}{noun} {verdict} ({names})")
    return "⚠ GPU faults: " + ", ".join(parts)
