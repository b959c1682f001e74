"""Cells the Nodes pane and the node drill-down share: the GPU health verdict
of a node (fail closed when stale), its GPU allocation and telemetry summaries."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from tau_gpuhealth.nodeview import NodeHealthView
from tau_gpuhealth.report import NodeHealth
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.operations.gpufaults import node_health_view
from tau_tui.widgets.status_text import status_text


def node_health(node: NodeView, now: datetime) -> NodeHealthView | None:
    """None for nodes without GPUs (no verdict to give)."""
    return node_health_view(node, now)


def gpu_summary(node: NodeView) -> str:
    parts = []
    for name, usage in sorted(node.gpu.items()):
        allocated = "?" if usage.allocated is None else f"{usage.allocated:g}"
        parts.append(f"{allocated}/{usage.capacity:g} {name.replace('nvidia.com/', '')}")
    return " ".join(parts) or "—"


def telemetry_summary(detail: NodeHealth | None) -> tuple[str, str, str, str]:
    """(max temperature, mean utilisation, ECC volatile dbe/sbe, recent XIDs); ``—`` when unknown."""
    if detail is None:
        return "—", "—", "—", "—"
    temps = [g.telemetry.temperature_c for g in detail.gpus if g.telemetry and g.telemetry.temperature_c is not None]
    utils = [g.telemetry.utilization_gpu for g in detail.gpus if g.telemetry and g.telemetry.utilization_gpu is not None]
    dbe = [g.telemetry.ecc_volatile_dbe for g in detail.gpus if g.telemetry and g.telemetry.ecc_volatile_dbe is not None]
    sbe = [g.telemetry.ecc_volatile_sbe for g in detail.gpus if g.telemetry and g.telemetry.ecc_volatile_sbe is not None]
    xids = sorted({r.code[3:] for _, r in detail.all_reasons() if r.code.lower().startswith("xid")})
    temp = f"{max(temps):.0f}°C" if temps else "—"
    util = f"{sum(utils) / len(utils):.0f}%" if utils else "—"
    ecc = f"{sum(dbe)}/{sum(sbe)}" if dbe or sbe else "—"
    ecc_reasons = [r for _, r in detail.all_reasons() if "ecc" in r.code.lower()]
    if ecc == "—" and ecc_reasons:
        ecc = "⚠ " + ecc_reasons[0].code
    return temp, util, ecc, ",".join(xids) or "none"


def verdict_cell_for(word: str, stale: bool) -> Text:
    """A verdict from data that may be out of date never reads healthy (fail closed)."""
    if not stale:
        return status_text(word)
    if word == "healthy":
        return status_text("unknown", "stale (last: healthy)")
    return status_text(word, f"{word} (stale)")
