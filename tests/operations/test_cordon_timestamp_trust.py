"""The drain budget believes a cordon-timestamp only when the node agent wrote it.

Nodes here go through the cache's own strip of managedFields first, as they do in the app: what
survives it (the owners of the annotation) is what the budget decides on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tau_gpuhealth.names import AGENT_COMPONENT, ANNOTATION_CORDON_TIMESTAMP, ANNOTATION_CORDONED_BY
from tau_tui.core.cluster.convert import strip_managed_fields
from tau_tui.core.operations.drain import check_drain_budget, trusted_cordon_time

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
CORDONED = (NOW - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entry(manager: str, annotations: tuple[str, ...], subresource: str | None = None) -> dict:
    fields: dict = {"f:spec": {"f:unschedulable": {}}}
    if annotations:
        fields["f:metadata"] = {"f:annotations": {f"f:{key}": {} for key in annotations}}
    entry = {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-12-04T11:58:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    return entry | ({"subresource": subresource} if subresource else {})


def _node(name: str, cordoned_by: str | None, owner: str | None) -> dict:
    annotations = {ANNOTATION_CORDON_TIMESTAMP: CORDONED}
    if cordoned_by is not None:
        annotations[ANNOTATION_CORDONED_BY] = cordoned_by
    managed = [_entry("kubelet", (), "status"), _entry("kube-controller-manager", ("node.alpha.kubernetes.io/ttl",))]
    if owner is not None:
        managed.append(_entry(owner, (ANNOTATION_CORDON_TIMESTAMP, ANNOTATION_CORDONED_BY)))
    return strip_managed_fields({
        "metadata": {"name": name, "annotations": annotations, "managedFields": managed},
        "spec": {"unschedulable": True},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    })


def test_the_strip_keeps_only_the_owners_of_the_cordon_timestamp():
    node = _node("g1", AGENT_COMPONENT, AGENT_COMPONENT)
    assert node["metadata"]["managedFields"] == [{
        "manager": AGENT_COMPONENT, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{ANNOTATION_CORDON_TIMESTAMP}": {}}}}}]
    assert strip_managed_fields(node) == node  # stripping twice changes nothing


def test_a_node_without_the_annotation_keeps_no_managed_fields():
    node = strip_managed_fields({"metadata": {"name": "g", "annotations": {"a": "b"},
                                              "managedFields": [_entry("kubelet", ("a",))]}})
    assert "managedFields" not in node["metadata"]


@pytest.mark.parametrize(("cordoned_by", "owner", "why"), [
    ("admin", AGENT_COMPONENT, "cordoned-by is 'admin', not tau-agent"),
    (None, "kubectl-annotate", "cordoned-by is None, not tau-agent"),
    (AGENT_COMPONENT, "kubectl-annotate", "written by kubectl-annotate, not tau-agent"),
    (AGENT_COMPONENT, None, "who wrote it is unknown (no field owner)"),
])
def test_a_timestamp_not_written_by_the_agent_is_not_a_recent_drain(cordoned_by, owner, why):
    forged = _node("g1", cordoned_by, owner)
    assert trusted_cordon_time(forged) == (None, why)
    budget = check_drain_budget("g0", [forged, _node("g0", None, None)], NOW)
    assert budget.recently_drained == []
    assert budget.untrusted_cordon_times == [f"g1: {why}"]
    assert budget.unavailable == ["g1"]  # still cordoned: still counted out of service


def test_the_agents_own_timestamp_is_a_recent_drain():
    budget = check_drain_budget("g0", [_node("g1", AGENT_COMPONENT, AGENT_COMPONENT)], NOW)
    assert budget.recently_drained == ["g1"] and budget.untrusted_cordon_times == []
    assert trusted_cordon_time(_node("g1", AGENT_COMPONENT, AGENT_COMPONENT))[0] == NOW - timedelta(minutes=2)
