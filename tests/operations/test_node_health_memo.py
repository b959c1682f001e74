"""The shared memo of nodes' GPU health: the same judgements as working each node out afresh, at
every moment around the heartbeat deadlines, and work only for nodes that changed or aged out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tau_gpuhealth.names import STALE_AFTER_PERIODS
from tau_gpuhealth.nodeconditions import packaged_mapping
from tau_tui.core.cluster.convert import gpu_health_view, node_view
from tau_tui.core.cluster.view_types import NodeView
from tau_tui.core.operations.gpufaults import DEFAULT_HEARTBEAT_S, node_gpu_faults, node_health_view
from tau_tui.core.operations.node_health_memo import NodeHealthMemo
from tests import builders
from tests.builders import node_condition as condition

T0 = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
AGENT_STALE = timedelta(seconds=STALE_AFTER_PERIODS * DEFAULT_HEARTBEAT_S)
MAPPING = packaged_mapping()
NPD_STALE = timedelta(seconds=MAPPING.stale_after_periods * MAPPING.heartbeat_seconds)


def gpu_node(name: str, *conditions: dict[str, Any], period_s: Any = None) -> NodeView:
    """A GPU node; ``period_s``: the heartbeat period its agent's GPUNodeHealth report states."""
    obj = builders.node(name, *conditions, gpus=8, uid=f"uid-{name}", resource_version="1")
    report = None if period_s is None else gpu_health_view(
        {"metadata": {"name": name}, "spec": {"nodeName": name}, "status": {"heartbeatPeriodS": period_s}})
    return node_view(obj, {}, report)


def nodes_of_every_kind() -> list[NodeView]:
    """Agent healthy, agent unhealthy, a writer other than the agent reporting a fault (its heartbeat
    ages out at another moment than the agent's), both, and none."""
    npd_beat = T0 + timedelta(seconds=40)
    return [
        gpu_node("agent-healthy", condition("GPUUnhealthy", "False", T0, "AllGPUsHealthy")),
        gpu_node("agent-unhealthy", condition("GPUUnhealthy", "True", T0 + timedelta(seconds=10), "Xid79")),
        gpu_node("npd-fault", condition("XIDErrors", "True", npd_beat)),
        gpu_node("both", condition("GPUUnhealthy", "False", T0 + timedelta(seconds=20), "AllGPUsHealthy"),
                 condition("GPUECC", "True", npd_beat)),
        gpu_node("no-report"),
        # a report with its own period, one no date can hold, and a heartbeat in the year 9999
        gpu_node("period-60", condition("GPUUnhealthy", "True", T0 + timedelta(seconds=30), "Xid48"), period_s=60.0000003),
        gpu_node("period-inf", condition("GPUUnhealthy", "True", T0, "Xid79"), period_s="inf"),
        gpu_node("period-huge", condition("GPUUnhealthy", "True", T0, "Xid79"), period_s=1e300),
        gpu_node("year-9999", condition("GPUUnhealthy", "True", datetime(9999, 12, 31, 23, 59, tzinfo=UTC), "Xid79"),
                 condition("XIDErrors", "True", datetime(9999, 12, 31, 23, 59, tzinfo=UTC))),
    ]


def moments() -> list[datetime]:
    """Just before, at and just after every deadline the nodes above have, and between them."""
    tick = timedelta(milliseconds=1)
    deadlines = [T0 + AGENT_STALE, T0 + timedelta(seconds=10) + AGENT_STALE, T0 + timedelta(seconds=20) + AGENT_STALE,
                 T0 + timedelta(seconds=40) + NPD_STALE, T0 + timedelta(seconds=30 + STALE_AFTER_PERIODS * 60.0000003)]
    out = [T0, T0 + timedelta(seconds=60)]
    for deadline in deadlines:
        out += [deadline - tick, deadline - timedelta(microseconds=1), deadline, deadline + timedelta(microseconds=1),
                deadline + tick]
    return sorted(out)


def test_the_memo_judges_every_node_as_a_fresh_judgement_does_at_every_moment_around_its_deadlines():
    nodes = nodes_of_every_kind()
    memo = NodeHealthMemo()
    for now in moments():
        assert memo.faults(nodes, now) == node_gpu_faults(nodes, now), now
        for node in nodes:
            kept, fresh = memo.view(node, now), node_health_view(node, now)
            assert kept is not None and fresh is not None
            assert kept.model_dump() == fresh.model_dump(), (node.name, now)


def test_a_node_is_judged_again_only_when_it_changed_or_a_heartbeat_in_it_aged_out():
    nodes = nodes_of_every_kind()
    memo = NodeHealthMemo()
    memo.faults(nodes, T0 + timedelta(seconds=60))
    assert memo.computed == len(nodes)
    for seconds in (61, 90, 104):  # no deadline passed (the first: "period-60" at 30 + 150 s): nothing judged again
        memo.faults(nodes, T0 + timedelta(seconds=seconds))
    assert memo.computed == len(nodes)
    memo.faults(nodes, T0 + timedelta(seconds=181))  # "period-60" went stale
    assert memo.computed == len(nodes) + 1
    memo.faults(nodes, T0 + timedelta(seconds=300))
    assert memo.computed == len(nodes) + 1
    changed = gpu_node("agent-healthy", condition("GPUUnhealthy", "True", T0 + timedelta(seconds=300), "Xid48"))
    faults = memo.faults([changed, *nodes[1:]], T0 + timedelta(seconds=301))
    assert memo.computed == len(nodes) + 2 and faults["agent-healthy"].reason == "Xid48"
    # past the first agent's deadline: the nodes whose heartbeats aged out are judged again, no other
    later = T0 + timedelta(seconds=10) + AGENT_STALE + timedelta(seconds=1)
    computed = memo.computed
    faults = memo.faults([changed, *nodes[1:]], later)
    assert memo.computed == computed + 1  # "agent-unhealthy": its heartbeat went stale
    assert "agent-unhealthy" not in faults  # stale is unknown, and unknown is blamed on no run
    assert memo.view(nodes[1], later).reason == "AgentHeartbeatStale"


def test_the_memo_judges_as_a_fresh_judgement_does_when_the_clock_goes_back_and_forth_across_deadlines():
    nodes = nodes_of_every_kind()
    memo = NodeHealthMemo()
    walk = moments()
    for now in [*reversed(walk), *walk[::3], *reversed(walk[1::2])]:  # replays seek back and forth
        assert memo.faults(nodes, now) == node_gpu_faults(nodes, now), now


def test_a_clock_moved_back_judges_again_and_nodes_gone_are_forgotten():
    nodes = nodes_of_every_kind()
    memo = NodeHealthMemo()
    stale_at = T0 + timedelta(seconds=10) + AGENT_STALE + timedelta(seconds=1)
    assert "agent-unhealthy" not in memo.faults(nodes, stale_at)
    assert "agent-unhealthy" in memo.faults(nodes, T0 + timedelta(seconds=60))  # a replay moved back
    memo.faults(nodes[:2], T0 + timedelta(seconds=61))
    assert len(memo._entries) == 2
