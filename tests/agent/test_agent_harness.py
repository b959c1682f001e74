"""tau-agent against the real control plane (tier 2: kube-apiserver + KWOK GPU nodes).

- `kubectl apply -k manifests/agent` succeeds;
- an agent (fake NVML, real Kubernetes writer) using a pod-bound service account token for a
  KWOK GPU node writes that node's GPUUnhealthy/GPUDegraded conditions, its GPUNodeHealth
  object and Events;
- negative security: node A's agent identity is denied writing node B's status, node B's
  health object and Events about node B; a token without the node-name claim is denied too.
"""

from __future__ import annotations

import random
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_agent.agent import Agent
from tau_agent.call_guard import CallGuard
from tau_agent.collector import Collector
from tau_agent.kube import APPLY_PATCH, STRATEGIC_MERGE, KubernetesWriter, health_object_body
from tau_agent.nvml_reader import NvmlReader
from tau_gpuhealth.names import API_GROUP, API_VERSION, HEALTH_PLURAL

from .fake_nvml import FakeNvml, h100_node
from .harness_support import (
    EVENTS_NAMESPACE,
    NAMESPACE,
    SERVICE_ACCOUNT,
    agent_client,
    agent_manifests_applied,
    conditions_of,
    token_client,
    wait_for,
)
from .sim import FakeClock, fast_config

pytestmark = [pytest.mark.harness, pytest.mark.t2]

NODE_A = "agent-test-gpu-a"
NODE_B = "agent-test-gpu-b"


@pytest.fixture(scope="module")
def plane(t2):
    """The control plane under test: tier 2 (KWOK runs the GPU nodes)."""
    return t2


@pytest.fixture(scope="module")
def applied(plane, admin):
    with agent_manifests_applied(plane, admin, [NODE_A, NODE_B]) as output:
        yield output


def test_apply_k_manifests_agent_succeeds(applied):
    for expected in ("customresourcedefinition.apiextensions.k8s.io/gpunodehealths.tau-tui.io",
                     "daemonset.apps/tau-agent", "validatingadmissionpolicy", "clusterrole.rbac.authorization.k8s.io/tau-agent"):
        assert expected in applied


def test_agent_reports_conditions_health_object_and_events_for_its_kwok_node(plane, admin, applied):
    before = set(conditions_of(admin, NODE_A))
    api = agent_client(plane, admin, NODE_A)
    clock = FakeClock(time.time())
    nvml = FakeNvml(h100_node(8))
    config = fast_config(events_namespace=EVENTS_NAMESPACE)
    collector = Collector(NvmlReader(nvml), CallGuard(1.0), boot_id=lambda: "harness-boot")
    writer = KubernetesWriter(api, NODE_A, EVENTS_NAMESPACE)
    agent = Agent(config, collector, writer, node_name=NODE_A, clock=clock, rng=random.Random(1))
    agent.start()
    assert agent.expected_count == 8  # read from the node label nvidia.com/gpu.count
    agent.tick(clock.now)
    conds = wait_for(lambda: (c := conditions_of(admin, NODE_A)) and "GPUUnhealthy" in c and c, "agent conditions")
    assert conds["GPUUnhealthy"].status == "False" and conds["GPUDegraded"].status == "False"
    assert before <= set(conds)  # the kubelet's (KWOK's) conditions are untouched

    # GPU 3 falls off the bus: after the debounce the change is written.
    from tau_gpuhealth.samples import XidObservation

    nvml.gpus[3].lost = True
    agent.model.record_xid(XidObservation(xid=79, time=clock.now, gpu_uuid=nvml.gpus[3].uuid, gpu_index=3))
    for _ in range(10):
        clock.now += 5
        agent.tick(clock.now)
    conds = conditions_of(admin, NODE_A)
    assert conds["GPUUnhealthy"].status == "True", conds["GPUUnhealthy"]
    assert conds["GPUUnhealthy"].reason in ("GpuLost", "XID79")
    assert "gpu3" in conds["GPUUnhealthy"].message

    obj = k8s.CustomObjectsApi(admin).get_cluster_custom_object(API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_A)
    assert obj["status"]["verdict"] == "unhealthy"
    assert len(obj["status"]["gpus"]) == 8
    assert obj["status"]["gpus"][3]["verdict"] == "unhealthy"

    events = k8s.CoreV1Api(admin).list_namespaced_event(
        EVENTS_NAMESPACE, field_selector=f"involvedObject.name={NODE_A}").items
    assert "GPUUnhealthy" in {e.reason for e in events}


def test_agent_identity_of_node_a_cannot_write_node_b(plane, admin, applied):
    api = agent_client(plane, admin, NODE_A)
    core = k8s.CoreV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    patch = {"status": {"conditions": [{"type": "GPUUnhealthy", "status": "True", "reason": "Forged",
                                        "message": "written by another node's agent"}]}}
    # A new admission policy is enforced once the API server's policy informer has synced
    # (about a second): wait for that with a dry-run request, which persists nothing.
    def policy_enforced():
        try:
            core.patch_node_status(NODE_B, patch, dry_run="All", _content_type=STRATEGIC_MERGE)
        except ApiException as err:
            return err.status == 403
        return False

    wait_for(policy_enforced, "the ValidatingAdmissionPolicy to be enforced", timeout=30)

    # Allowed: its own node.
    core.patch_node_status(NODE_A, patch, field_manager="tau-agent", _content_type=STRATEGIC_MERGE)
    custom.patch_cluster_custom_object(
        API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_A,
        health_object_body(NODE_A, {"verdict": "unknown", "observedAt": "2026-01-01T00:00:00Z"}),
        field_manager="tau-agent", force=True, _content_type=APPLY_PATCH)

    with pytest.raises(ApiException) as denied:
        core.patch_node_status(NODE_B, patch, field_manager="tau-agent", _content_type=STRATEGIC_MERGE)
    assert denied.value.status == 403 and "only its own node" in denied.value.body
    assert "GPUUnhealthy" not in conditions_of(admin, NODE_B)

    with pytest.raises(ApiException) as denied:
        custom.patch_cluster_custom_object(
            API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_B,
            health_object_body(NODE_B, {"verdict": "healthy", "observedAt": "2026-01-01T00:00:00Z"}),
            field_manager="tau-agent", force=True, _content_type=APPLY_PATCH)
    assert denied.value.status == 403
    with pytest.raises(ApiException) as missing:
        k8s.CustomObjectsApi(admin).get_cluster_custom_object(API_GROUP, API_VERSION, HEALTH_PLURAL, NODE_B)
    assert missing.value.status == 404

    with pytest.raises(ApiException) as denied:
        core.create_namespaced_event(EVENTS_NAMESPACE, {
            "metadata": {"name": "forged", "namespace": EVENTS_NAMESPACE},
            "involvedObject": {"kind": "Node", "name": NODE_B, "apiVersion": "v1"},
            "reason": "GPUHealthy", "message": "forged", "type": "Normal",
        })
    assert denied.value.status == 403

    # Same service account, token without a pod binding (no node-name claim): denied, fail closed.
    unbound_token = k8s.CoreV1Api(admin).create_namespaced_service_account_token(
        SERVICE_ACCOUNT, NAMESPACE, {"spec": {"audiences": [plane.server], "expirationSeconds": 600}}).status.token
    with pytest.raises(ApiException) as denied:
        k8s.CoreV1Api(token_client(plane, admin, unbound_token)).patch_node_status(
            NODE_A, patch, _content_type=STRATEGIC_MERGE)
    assert denied.value.status == 403 and "node-name claim" in denied.value.body
