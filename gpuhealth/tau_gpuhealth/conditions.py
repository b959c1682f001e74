"""What the agent publishes from a verdict: the GPUUnhealthy / GPUDegraded node conditions and one
Event per verdict transition."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from tau_gpuhealth.names import (
    CONDITION_DEGRADED,
    CONDITION_UNHEALTHY,
    MESSAGE_LIMIT,
)
from tau_gpuhealth.report import GpuHealth, HealthReason, NodeHealth
from tau_gpuhealth.verdicts import Verdict, worst


@dataclass(frozen=True)
class Transition:
    gpu_key: str  # "node" for node-level
    gpu_index: int | None
    before: Verdict | None
    after: Verdict
    reason: str  # event reason, e.g. GPUUnhealthy
    message: str


_TRANSITION_REASON = {
    Verdict.HEALTHY: "GPUHealthy",
    Verdict.DEGRADED: "GPUDegraded",
    Verdict.UNHEALTHY: "GPUUnhealthy",
    Verdict.UNKNOWN: "GPUHealthUnknown",
}


def transitions(before: NodeHealth | None, after: NodeHealth) -> list[Transition]:
    """Per-GPU and node-level verdict changes between two evaluations."""
    result: list[Transition] = []
    old = {(g.uuid or f"index-{g.index}"): g for g in (before.gpus if before else [])}
    for gpu in after.gpus:
        key = gpu.uuid or f"index-{gpu.index}"
        prev = old.get(key)
        prev_verdict = prev.verdict if prev else (None if before is None else Verdict.HEALTHY)
        if prev_verdict is gpu.verdict or (prev_verdict is None and gpu.verdict is Verdict.HEALTHY):
            continue
        summary = "; ".join(f"{r.code}: {r.message} ({r.action.value})" for r in gpu.reasons) or "no findings"
        was = prev_verdict.value if prev_verdict else "new"
        result.append(
            Transition(
                key,
                gpu.index,
                prev_verdict,
                gpu.verdict,
                _TRANSITION_REASON[gpu.verdict],
                _cap(f"{gpu.label}: {was} -> {gpu.verdict.value}: {summary}"),
            )
        )
    old_node_codes = {r.code for r in before.reasons} if before else set()
    new_node_codes = {r.code for r in after.reasons}
    if new_node_codes != old_node_codes:
        node_verdict = worst(r.severity for r in after.reasons) if after.reasons else Verdict.HEALTHY
        summary = "; ".join(f"{r.code}: {r.message}" for r in after.reasons) or "node-level findings cleared"
        result.append(
            Transition("node", None, None, node_verdict, _TRANSITION_REASON[node_verdict], _cap(summary))
        )
    return result


def _cap(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"




class ConditionState(BaseModel):
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str


def _summarise(pairs: list[tuple[GpuHealth | None, HealthReason]]) -> str:
    parts = []
    for gpu, reason in pairs:
        where = gpu.label if gpu else "node"
        parts.append(f"{where}: {reason.message} ({reason.action.value})")
    return _cap("; ".join(parts))


def node_conditions(health: NodeHealth) -> list[ConditionState]:
    """GPUUnhealthy and GPUDegraded, problem polarity: True means a problem; Unknown when unreadable."""
    pairs = health.all_reasons()
    unhealthy = [(g, r) for g, r in pairs if r.severity is Verdict.UNHEALTHY]
    degraded = [(g, r) for g, r in pairs if r.severity is Verdict.DEGRADED]
    unknown = [(g, r) for g, r in pairs if r.severity is Verdict.UNKNOWN]
    unreadable = not health.nvml_available or bool(unknown)

    if unhealthy:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="True", reason=unhealthy[0][1].code, message=_summarise(unhealthy)
        )
    elif unreadable:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="Unknown", reason=unknown[0][1].code, message=_summarise(unknown)
        )
    else:
        cond_unhealthy = ConditionState(
            type=CONDITION_UNHEALTHY, status="False", reason="GPUsHealthy", message="no unhealthy GPU"
        )

    if degraded:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="True", reason=degraded[0][1].code, message=_summarise(degraded)
        )
    elif unreadable:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="Unknown", reason=unknown[0][1].code, message=_summarise(unknown)
        )
    else:
        cond_degraded = ConditionState(
            type=CONDITION_DEGRADED, status="False", reason="NoDegradedGPUs", message="no degraded GPU"
        )
    return [cond_unhealthy, cond_degraded]
