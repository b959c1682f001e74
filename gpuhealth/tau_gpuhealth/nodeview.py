"""Reading what the agent published, for the TUI: a Node's conditions and its GPUNodeHealth
object combined into one verdict that fails closed (no report or a stale heartbeat is unknown).

The GPU conditions other writers put on the node (TauGrid's NPD and gpu-metrics-collector, GKE,
AKS; :mod:`tau_gpuhealth.nodeconditions`) are judged too: a node without tau-agent
gets their verdict, and where both exist the worst wins and both are listed in ``sources``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_gpuhealth.names import (
    CONDITION_DEGRADED,
    CONDITION_UNHEALTHY,
    STALE_AFTER_PERIODS,
)
from tau_gpuhealth.nodeconditions import (
    DEADLINE_MARGIN,
    SourceHealth,
    fresh_until,
    parse_time,
    stale_deadlines,
    third_party_health,
)
from tau_gpuhealth.report import NodeHealth
from tau_gpuhealth.verdicts import Verdict


class NodeHealthView(BaseModel):
    """What the TUI shows for one node: the verdict, why, and whether the data is stale."""

    node_name: str
    verdict: Verdict
    reason: str
    message: str
    stale: bool
    last_heartbeat: datetime | None = None
    detail: NodeHealth | None = None
    #: Every writer that judged this node, worst first (tau-agent, taugrid-npd, ...).
    sources: list[SourceHealth] = []


def view_from_node(
    node: dict[str, Any],
    health_object: dict[str, Any] | None,
    now: datetime,
    heartbeat_period_s: float = 300,
) -> NodeHealthView:
    """Combine a Node (as JSON), its GPUNodeHealth object and the GPU conditions of other
    writers into one truthful verdict.

    Fails closed: no conditions, a stale heartbeat or an unreadable object gives unknown.
    """
    agent = _agent_view(node, health_object, now, heartbeat_period_s)
    others = third_party_health(node, now)
    if not others:
        if agent.reason != "NoAgentReport":
            agent.sources = [_as_source(agent)]
        return agent
    if agent.reason == "NoAgentReport":
        # No tau-agent here: the other writers' conditions are the verdict.
        top = others[0]
        return NodeHealthView(node_name=agent.node_name, verdict=top.verdict, reason=top.reason,
                              message=f"{top.label}: {top.message}", stale=top.stale, detail=agent.detail,
                              last_heartbeat=top.last_heartbeat, sources=others)
    sources = sorted([_as_source(agent), *others], key=lambda s: -s.verdict.rank)  # stable: the agent first on ties
    top = sources[0]
    if top.source == "tau-agent":
        agent.sources = sources
        return agent
    return NodeHealthView(node_name=agent.node_name, verdict=top.verdict, reason=top.reason,
                          message=f"{top.label}: {top.message}", stale=top.stale,
                          last_heartbeat=agent.last_heartbeat, detail=agent.detail, sources=sources)


def _as_source(view: NodeHealthView) -> SourceHealth:
    return SourceHealth(source="tau-agent", label="tau-agent", verdict=view.verdict, reason=view.reason,
                        message=view.message, stale=view.stale)


def _stale_after_s(heartbeat_period_s: float) -> float:
    return STALE_AFTER_PERIODS * heartbeat_period_s


def view_holds_until(node: dict[str, Any], now: datetime, heartbeat_period_s: float = 300) -> datetime | None:
    """Until when :func:`view_from_node` of this Node surely gives the view it gives at ``now``: the
    last fresh moment of the next heartbeat in it to go stale (None: none will; the view holds while
    the Node is the same).  Staleness is the only part of the view that moves with the clock."""
    conditions = (node.get("status") or {}).get("conditions") or []
    agent = {c.get("type"): c for c in conditions}.get(CONDITION_UNHEALTHY)  # as _agent_view reads it
    heartbeat = parse_time(agent.get("lastHeartbeatTime")) if agent is not None else None
    deadlines = stale_deadlines(node)
    agent_fresh_until = fresh_until(heartbeat, _stale_after_s(heartbeat_period_s)) if heartbeat is not None else None
    if agent_fresh_until is not None:
        deadlines.append(agent_fresh_until)
    # a heartbeat not stale yet, whose last surely fresh moment may be just behind `now`, holds no longer
    return min((d for d in deadlines if d + DEADLINE_MARGIN >= now), default=None)


def _agent_view(
    node: dict[str, Any],
    health_object: dict[str, Any] | None,
    now: datetime,
    heartbeat_period_s: float,
) -> NodeHealthView:
    name = (node.get("metadata") or {}).get("name", "")
    conditions = {c.get("type"): c for c in ((node.get("status") or {}).get("conditions") or [])}
    unhealthy = conditions.get(CONDITION_UNHEALTHY)
    degraded = conditions.get(CONDITION_DEGRADED)
    detail: NodeHealth | None = None
    if health_object is not None:
        try:
            detail = NodeHealth.model_validate(health_object.get("status") or {})
        except ValidationError:
            detail = None
    if unhealthy is None:
        return NodeHealthView(
            node_name=name,
            verdict=Verdict.UNKNOWN,
            reason="NoAgentReport",
            message="the GPU health agent has not reported on this node",
            stale=True,
            detail=detail,
        )
    heartbeat = parse_time(unhealthy.get("lastHeartbeatTime"))
    stale = heartbeat is None or (now - heartbeat).total_seconds() > _stale_after_s(heartbeat_period_s)
    if stale:
        return NodeHealthView(
            node_name=name,
            verdict=Verdict.UNKNOWN,
            reason="AgentHeartbeatStale",
            message=f"last agent heartbeat {heartbeat.isoformat() if heartbeat else 'never'}; "
            "the agent may not be running",
            stale=True,
            last_heartbeat=heartbeat,
            detail=detail,
        )
    if unhealthy.get("status") == "True":
        verdict, source = Verdict.UNHEALTHY, unhealthy
    elif unhealthy.get("status") == "Unknown":
        verdict, source = Verdict.UNKNOWN, unhealthy
    elif degraded is not None and degraded.get("status") == "True":
        verdict, source = Verdict.DEGRADED, degraded
    elif degraded is not None and degraded.get("status") == "Unknown":
        verdict, source = Verdict.UNKNOWN, degraded
    else:
        verdict, source = Verdict.HEALTHY, unhealthy
    return NodeHealthView(
        node_name=name,
        verdict=verdict,
        reason=str(source.get("reason", "")),
        message=str(source.get("message", "")),
        stale=False,
        last_heartbeat=heartbeat,
        detail=detail,
    )
