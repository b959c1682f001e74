"""The agent's remaining writes, bounded on the real kube-apiserver (tier 1) with its pod-bound
token (issue #44, item 17; manifests/agent/admission-policy.yaml):

- an admin's cordon stays, whatever sequence of its own PATCHes the agent sends (its own
  managedFields rewritten, or a server-side apply of the same value, then an uncordon);
- Events of other reporters about its Node (kubelet, node controller, a person) are not its to patch;
- one Event per node and reason: `<node>.gpuhealth.<reason>`, the reason from a fixed set;
- each GPU condition once: no copies;
- a lastTransitionTime or lastHeartbeatTime it changes is the request's time within 60 s, and it
  cannot move the time the server stamps on its nodes/status managedFields entry.

Each refusal is a real write that comes back 403 with the policy's message and leaves the object as
it was, read back as admin. Fixtures (the node, the agent's client, node actions) are those of
test_agent_node_fields_harness.py.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_agent.budget import EventLimiter, event_name
from tau_agent.config import Budget
from tau_agent.kube import FIELD_MANAGER, MERGE_PATCH, STRATEGIC_MERGE, KubernetesWriter
from tau_gpuhealth.names import (
    ANNOTATION_CORDON_REASON,
    ANNOTATION_CORDON_TIMESTAMP,
    ANNOTATION_CORDONED_BY,
    CONDITION_UNHEALTHY,
)

from . import test_agent_node_fields_harness as node_fields
from .harness_support import EVENTS_NAMESPACE
from .test_agent_node_fields_harness import NODE, _cordon_request, _kubectl, _now, node_of, refused, without_volatile

pytestmark = [pytest.mark.harness, pytest.mark.t1]

# The node-fields module's fixtures, for this module's own node and agent (module scope: set up here anew).
plane, applied, agent_core, node_actions = (node_fields.plane, node_fields.applied, node_fields.agent_core,
                                            node_fields.node_actions)

APPLY_PATCH = "application/apply-patch+yaml"
OWN_MANAGED_FIELDS = "may not rewrite its own managedFields"
ONLY_ITS_OWN_CORDON = "only when it cordoned"


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uncordoned_by_admin(admin) -> None:
    k8s.CoreV1Api(admin).patch_node(NODE, {"spec": {"unschedulable": None}, "metadata": {"annotations": {
        ANNOTATION_CORDONED_BY: None, ANNOTATION_CORDON_REASON: None, ANNOTATION_CORDON_TIMESTAMP: None}}},
        _content_type=MERGE_PATCH)


# --- an admin's cordon stays -----------------------------------------------------------------------


def _own_entry_owning_unschedulable(node: dict) -> list[dict]:
    """The Node's managedFields with the agent's own entry on the Node made to own spec.unschedulable."""
    managed = copy.deepcopy(node["metadata"]["managedFields"])
    own = next(m for m in managed if m["manager"] == FIELD_MANAGER and not m.get("subresource"))
    own.setdefault("fieldsV1", {}).setdefault("f:spec", {})["f:unschedulable"] = {}
    return managed


CLAIMS = {
    "its own managedFields entry made to own spec.unschedulable": lambda core, node: core.patch_node(
        NODE, {"metadata": {"managedFields": _own_entry_owning_unschedulable(node)}}, field_manager=FIELD_MANAGER,
        _content_type=MERGE_PATCH),
    "a server-side apply of the same spec.unschedulable": lambda core, node: core.patch_node(
        NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}, "spec": {"unschedulable": True}},
        field_manager=FIELD_MANAGER, force=True, _content_type=APPLY_PATCH),
}


@pytest.mark.parametrize("claim", list(CLAIMS))
def test_no_sequence_of_its_own_patches_lifts_a_cordon_a_person_took_over(plane, admin, node_actions, claim):
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    writer.apply_node_actions(_cordon_request(True), now=_now())
    try:
        _kubectl(plane, "uncordon", NODE)
        _kubectl(plane, "cordon", NODE)  # a person's cordon now; the agent's annotations stay behind
        before = node_of(admin)
        assert before["metadata"]["annotations"][ANNOTATION_CORDONED_BY] == FIELD_MANAGER
        refused(lambda: CLAIMS[claim](node_actions, before), OWN_MANAGED_FIELDS)
        assert without_volatile(node_of(admin)) == without_volatile(before)
        refused(lambda: node_actions.patch_node(NODE, {"spec": {"unschedulable": False}}, field_manager=FIELD_MANAGER,
                                                _content_type=MERGE_PATCH), ONLY_ITS_OWN_CORDON)
        assert node_of(admin)["spec"]["unschedulable"] is True
    finally:
        _uncordoned_by_admin(admin)


def test_the_agent_still_cordons_and_lifts_its_own_cordon(admin, node_actions):
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    try:
        writer.apply_node_actions(_cordon_request(True), now=_now())
        assert node_of(admin)["spec"]["unschedulable"] is True
        writer.apply_node_actions(_cordon_request(False), now=_now())
        assert not node_of(admin)["spec"].get("unschedulable")
    finally:
        _uncordoned_by_admin(admin)


@pytest.mark.parametrize("off", [timedelta(hours=-2), timedelta(minutes=10)], ids=["backdated", "ahead"])
def test_a_cordon_timestamp_is_the_requests_time(admin, node_actions, off):
    """The TUI's cordon budget counts cordons by cordon-timestamp: one backdated out of the window (or
    put ahead) is refused, and the Node stays as it was."""
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    before = node_of(admin)
    try:
        refused(lambda: writer.apply_node_actions(_cordon_request(True), now=(datetime.now(UTC) + off).timestamp()),
                "within 60 s of the request's time")
        assert without_volatile(node_of(admin)) == without_volatile(before)
    finally:
        _uncordoned_by_admin(admin)


# --- Events: its own, one per reason -------------------------------------------------------------------

OTHER_REPORTERS = {
    "kubelet": {"source": {"component": "kubelet", "host": NODE}, "reportingComponent": "kubelet",
                "reportingInstance": NODE, "reason": "Rebooted"},
    "node controller": {"source": {"component": "node-controller"}, "reportingComponent": "node-controller",
                        "reason": "NodeNotReady"},
    "a person": {"reason": "Maintenance"},
}


@pytest.mark.parametrize("reporter", list(OTHER_REPORTERS))
def test_the_agent_may_not_patch_another_reporters_event_about_its_node(admin, agent_core, reporter):
    core = k8s.CoreV1Api(admin)
    name = f"{NODE}.{reporter.replace(' ', '-')}"
    core.create_namespaced_event(EVENTS_NAMESPACE, {
        "metadata": {"name": name, "namespace": EVENTS_NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": NODE},
        "message": f"written by {reporter}", "type": "Warning", **OTHER_REPORTERS[reporter]})
    try:
        before = admin.sanitize_for_serialization(core.read_namespaced_event(name, EVENTS_NAMESPACE))
        for patch in ({"message": "rewritten by the agent", "count": 99},
                      {"source": {"component": FIELD_MANAGER}, "reportingComponent": "tau-tui.io/tau-agent",
                       "reportingInstance": NODE, "message": "claimed as the agent's own"}):
            refused(lambda p=patch: agent_core.patch_namespaced_event(name, EVENTS_NAMESPACE, p, field_manager=FIELD_MANAGER,
                                                                      _content_type=MERGE_PATCH),
                    "never another reporter")
        assert admin.sanitize_for_serialization(core.read_namespaced_event(name, EVENTS_NAMESPACE)) == before
    finally:
        core.delete_namespaced_event(name, EVENTS_NAMESPACE)


def _agents_event(name: str, reason: str) -> dict:
    """An Event body as the agent's writer makes it, under ``name`` and ``reason``."""
    return {"metadata": {"name": name, "namespace": EVENTS_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": NODE}, "reason": reason,
            "message": "x", "type": "Warning", "count": 1, "source": {"component": FIELD_MANAGER, "host": NODE},
            "reportingComponent": "tau-tui.io/tau-agent", "reportingInstance": NODE}


def test_the_agent_keeps_one_event_per_node_and_reason(admin, agent_core):
    core = k8s.CoreV1Api(admin)
    writer = KubernetesWriter(agent_core.api_client, NODE, EVENTS_NAMESPACE)
    limiter = EventLimiter(Budget(), NODE, start=0)
    for gpu in ("GPU-a", "GPU-b"):
        limiter.offer(gpu, "GPUUnhealthy", "Warning", f"{gpu}: healthy -> unhealthy", 0.0)
    limiter.offer("GPU-a", "GpuXid79", "Warning", "XID 79", 0.0)
    for record in limiter.due(0):  # the agent's own writes: accepted
        writer.write_event(record)
    names = {event_name(NODE, "GPUUnhealthy"), event_name(NODE, "GpuXid79")}
    try:
        for name, reason, body in (
            (f"{NODE}.gpuhealth.0001", "GPUUnhealthy", None),  # a name of its choosing
            (f"{NODE}.gpuhealth.0002", "GPUUnhealthy", None),
            (event_name(NODE, "WhateverItLikes"), "WhateverItLikes", None),  # a reason outside the set
            (event_name(NODE, "GpuXid1000"), "GpuXid1000", None),
            ("", "GPUUnhealthy", {"generateName": f"{NODE}.gpuhealth."}),  # a name the server picks
        ):
            event = _agents_event(name, reason)
            if body is not None:
                event["metadata"] = {**body, "namespace": EVENTS_NAMESPACE}
            refused(lambda e=event: agent_core.create_namespaced_event(EVENTS_NAMESPACE, e, field_manager=FIELD_MANAGER),
                    "one event per reason")
        with pytest.raises(ApiException) as again:  # the same reason again: the same object, only bumped
            agent_core.create_namespaced_event(EVENTS_NAMESPACE, _agents_event(event_name(NODE, "GpuXid79"), "GpuXid79"),
                                               field_manager=FIELD_MANAGER)
        assert again.value.status == 409
        mine = [e for e in core.list_namespaced_event(EVENTS_NAMESPACE).items
                if e.involved_object.name == NODE and (e.source and e.source.component) == FIELD_MANAGER]
        assert {e.metadata.name for e in mine} == names
        unhealthy = core.read_namespaced_event(event_name(NODE, "GPUUnhealthy"), EVENTS_NAMESPACE)
        assert unhealthy.count == 2 and "(and 1 more GPU(s) with GPUUnhealthy" in unhealthy.message
    finally:
        for name in names:
            core.delete_namespaced_event(name, EVENTS_NAMESPACE)


# --- GPU conditions: once each, at the request's time ---------------------------------------------------


def test_the_agent_may_not_write_copies_of_a_gpu_condition(admin, agent_core):
    before = node_of(admin)
    others = [c for c in before["status"]["conditions"] if c["type"] != CONDITION_UNHEALTHY]
    copies = [{"type": CONDITION_UNHEALTHY, "status": "True", "reason": f"Copy{i}", "message": "x"} for i in range(3)]
    refused(lambda: agent_core.patch_node_status(NODE, {"status": {"conditions": others + copies}},
                                                 field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH), "no copies")
    assert without_volatile(node_of(admin)) == without_volatile(before)


def _unhealthy(status: str, transition: str, heartbeat: str) -> dict:
    return {"status": {"conditions": [{"type": CONDITION_UNHEALTHY, "status": status, "reason": "XID79",
                                       "message": "set by the bounded-writes test", "lastTransitionTime": transition,
                                       "lastHeartbeatTime": heartbeat}]}}


def _write_status(core, patch: dict) -> None:
    core.patch_node_status(NODE, patch, field_manager=FIELD_MANAGER, _content_type=STRATEGIC_MERGE)


def test_a_condition_time_the_agent_changes_is_the_requests(admin, agent_core):
    now = datetime.now(UTC)
    _write_status(agent_core, _unhealthy("False", _stamp(now), _stamp(now)))  # its own time: accepted
    for transition, heartbeat in ((_stamp(now - timedelta(days=400)), _stamp(now)),  # a transition backdated
                                  (_stamp(now + timedelta(hours=1)), _stamp(now)),  # or put ahead
                                  (_stamp(now), "2099-01-01T00:00:00Z")):  # a heartbeat that never goes stale
        before = node_of(admin)
        refused(lambda t=transition, h=heartbeat: _write_status(agent_core, _unhealthy("True", t, h)),
                "only to the time of the request")
        assert without_volatile(node_of(admin)) == without_volatile(before)
    later = datetime.now(UTC)
    _write_status(agent_core, _unhealthy("True", _stamp(later), _stamp(later)))  # a real transition: accepted
    _write_status(agent_core, _unhealthy("True", _stamp(later), _stamp(datetime.now(UTC))))  # a heartbeat: accepted


def test_the_agent_may_not_move_the_time_on_its_status_entry(admin, agent_core, node_actions):
    now = datetime.now(UTC)
    _write_status(agent_core, _unhealthy("False", _stamp(now), _stamp(now)))
    before = node_of(admin)
    managed = copy.deepcopy(before["metadata"]["managedFields"])
    own_status = next(m for m in managed if m["manager"] == FIELD_MANAGER and m.get("subresource") == "status")
    own_status["time"] = "2020-01-01T00:00:00Z"
    refused(lambda: node_actions.patch_node(NODE, {"metadata": {"managedFields": managed}}, field_manager=FIELD_MANAGER,
                                            _content_type=MERGE_PATCH), OWN_MANAGED_FIELDS)
    assert without_volatile(node_of(admin)) == without_volatile(before)
    refused(lambda: _write_status(agent_core, _unhealthy("True", "2020-01-01T00:00:00Z", _stamp(now))),
            "only to the time of the request")
