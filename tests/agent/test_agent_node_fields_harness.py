"""What the agent may change on its own Node, proven on the real kube-apiserver (tier 1).

The ValidatingAdmissionPolicy `tau-agent-gpu-fields-only` (manifests/agent/admission-policy.yaml):
- `nodes/status`: only the GPUUnhealthy / GPUDegraded conditions may change;
- `nodes` (RBAC only with the node-actions component): only its own taint
  `tau-tui.io/gpu-unhealthy` (NoSchedule/PreferNoSchedule, one at most), `spec.unschedulable` and
  its own cordon annotations.

Every request here carries the agent's pod-bound service account token for NODE (the DaemonSet's
identity, node-name claim included); each refusal is a real write that must come back 403 and
leave the Node as it was, read back with the admin client. Tier 1 has no kubelet: the admin
client writes a kubelet's status (Ready and pressure conditions, addresses, daemon endpoints,
nodeInfo) once, so every field has something to protect.
"""

from __future__ import annotations

import contextlib
import copy
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_agent.budget import EventRecord, event_name
from tau_agent.kube import FIELD_MANAGER, MERGE_PATCH, STRATEGIC_MERGE, KubernetesWriter, NodeActionRequest
from tau_gpuhealth.names import (
    ANNOTATION_CORDON_REASON,
    ANNOTATION_CORDON_TIMESTAMP,
    ANNOTATION_CORDONED_BY,
    CONDITION_DEGRADED,
    CONDITION_UNHEALTHY,
    TAINT_UNHEALTHY_KEY,
)
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.drain import check_drain_budget

from .harness_support import (
    EVENTS_NAMESPACE,
    TEST_TAINT,
    agent_client,
    agent_manifests_applied,
    conditions_of,
    kubectl_binary,
    token_client,
    wait_for,
)

pytestmark = [pytest.mark.harness, pytest.mark.t1]

NODE = "agent-fields-gpu-a"
NODE_ACTIONS_COMPONENT = Path(__file__).resolve().parents[2] / "manifests" / "agent" / "node-actions"
CONDITIONS_ONLY = "only the GPUUnhealthy and GPUDegraded conditions"


def kubelet_status() -> dict:
    now = "2026-01-01T00:00:00Z"
    conditions = [
        {"type": kind, "status": status, "reason": reason, "message": reason,
         "lastHeartbeatTime": now, "lastTransitionTime": now}
        for kind, status, reason in (("Ready", "True", "KubeletReady"),
                                     ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                     ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                     ("PIDPressure", "False", "KubeletHasSufficientPID"))
    ]
    return {"status": {
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}, {"type": "Hostname", "address": NODE}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.8.0",
                     "osImage": "Ubuntu 24.04", "containerRuntimeVersion": "containerd://2.1.0",
                     "kubeletVersion": "v1.35.4", "kubeProxyVersion": "", "operatingSystem": "linux",
                     "architecture": "amd64"},
    }}


@pytest.fixture(scope="module")
def plane(t1):
    return t1


@pytest.fixture(scope="module")
def applied(plane, admin):
    with agent_manifests_applied(plane, admin, [NODE]) as output:
        k8s.CoreV1Api(admin).patch_node_status(NODE, kubelet_status(), _content_type=STRATEGIC_MERGE)
        yield output


@pytest.fixture(scope="module")
def agent_core(plane, admin, applied):
    """CoreV1Api as node NODE's agent, once the new policy is enforced (its informer syncs)."""
    core = k8s.CoreV1Api(agent_client(plane, admin, NODE))

    def policy_enforced():
        try:
            core.patch_node_status(NODE, {"metadata": {"labels": {"probe": "x"}}}, dry_run="All",
                                   _content_type=STRATEGIC_MERGE)
        except ApiException as err:
            return err.status == 403 and "labels" in err.body
        return False

    wait_for(policy_enforced, "the tau-agent-gpu-fields-only policy to be enforced", timeout=30)
    return core


def node_of(admin) -> dict:
    return admin.sanitize_for_serialization(k8s.CoreV1Api(admin).read_node(NODE))


def refused(call, message: str) -> None:
    with pytest.raises(ApiException) as denied:
        call()
    assert denied.value.status == 403, denied.value.body
    assert message in denied.value.body, denied.value.body


def without_volatile(node: dict) -> dict:
    """The Node minus the bookkeeping the API server rewrites on any accepted write."""
    node = copy.deepcopy(node)
    for key in ("resourceVersion", "managedFields", "generation"):
        node["metadata"].pop(key, None)
    return node


def gpu_condition(kind: str, status: str, reason: str) -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": "set by the node-fields test"}


# --- nodes/status: only the GPU conditions -------------------------------------------------------


def _ready(node: dict) -> dict:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def _other_condition(node: dict) -> dict:
    return next(c for c in node["status"]["conditions"] if c["type"] not in ("Ready", CONDITION_UNHEALTHY,
                                                                              CONDITION_DEGRADED))


STATUS_REFUSALS = {
    "add a label": (lambda n: {"metadata": {"labels": {"forged": "x"}}}, "labels"),
    "change a label": (lambda n: {"metadata": {"labels": {"nvidia.com/gpu.count": "16"}}}, "labels"),
    "remove a label": (lambda n: {"metadata": {"labels": {"nvidia.com/gpu.present": None}}}, "labels"),
    "add an annotation": (lambda n: {"metadata": {"annotations": {"forged": "x"}}}, "annotation"),
    "add a cordon annotation": (lambda n: {"metadata": {"annotations": {ANNOTATION_CORDONED_BY: "tau-agent"}}},
                                "annotation"),
    "set Ready False": (lambda n: {"status": {"conditions": [{**_ready(n), "status": "False",
                                                              "reason": "Forged"}]}}, CONDITIONS_ONLY),
    "change another condition": (lambda n: {"status": {"conditions": [{**_other_condition(n), "status": "True",
                                                                       "reason": "Forged"}]}}, CONDITIONS_ONLY),
    "add another condition type": (lambda n: {"status": {"conditions": [
        gpu_condition("GPUHealthUnknown", "True", "Forged")]}}, CONDITIONS_ONLY),
    "remove Ready": (lambda n: {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}},
                     CONDITIONS_ONLY),
    "change capacity": (lambda n: {"status": {"capacity": {"nvidia.com/gpu": "16"}}}, "capacity"),
    "change allocatable": (lambda n: {"status": {"allocatable": {"nvidia.com/gpu": "0"}}}, "allocatable"),
    "add an address": (lambda n: {"status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.9"}]}},
                       "addresses"),
    "change nodeInfo": (lambda n: {"status": {"nodeInfo": {"kubeletVersion": "v0.0.0-forged"}}}, "nodeInfo"),
    "change daemonEndpoints": (lambda n: {"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 1}}}},
                               "daemon endpoints"),
}
MANAGED_FIELDS = "managedFields"


def _conditions_with(node: dict, replace: dict[str, dict] | None = None, reverse: bool = False) -> dict:
    """The whole conditions list (merge patch replaces lists whole): `replace` swaps entries by type."""
    conditions = [(replace or {}).get(c["type"], c) for c in node["status"]["conditions"]]
    return {"status": {"conditions": conditions[::-1] if reverse else conditions}}


def _forged_entry() -> dict:
    return {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2020-01-01T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}}}}


# Attacks that keep the size and membership of the other conditions, and managedFields forgeries:
# (patch, expected refusal, content type, field manager). Each is otherwise a well-formed agent write.
STATUS_LIST_REFUSALS = {
    "copy Ready over DiskPressure": (lambda n: _conditions_with(n, {"DiskPressure": _ready(n)}), CONDITIONS_ONLY,
                                     MERGE_PATCH, FIELD_MANAGER),
    "reorder the conditions": (lambda n: _conditions_with(n, reverse=True), CONDITIONS_ONLY, MERGE_PATCH,
                               FIELD_MANAGER),
    "write its conditions as the kubelet": (lambda n: {"status": {"conditions": [
        gpu_condition(CONDITION_UNHEALTHY, "False", "Healthy")]}}, MANAGED_FIELDS, STRATEGIC_MERGE, "kubelet"),
}


@pytest.mark.parametrize("change", list(STATUS_REFUSALS))
def test_agent_may_not_change_on_nodes_status(admin, agent_core, change):
    make_patch, message = STATUS_REFUSALS[change]
    before = node_of(admin)
    refused(lambda: agent_core.patch_node_status(NODE, make_patch(before), field_manager=FIELD_MANAGER,
                                                 _content_type=STRATEGIC_MERGE), message)
    assert without_volatile(node_of(admin)) == without_volatile(before)


@pytest.mark.parametrize("forgery", ["clear", "add a kubelet entry"])
def test_managed_fields_cannot_be_cleared_or_forged_through_nodes_status(admin, agent_core, forgery):
    """Whichever stops it (the API server ignores managedFields on nodes/status; the policy refuses
    a change to another manager's entry), the other managers' entries stay as they were."""
    before = node_of(admin)
    others = [m for m in before["metadata"]["managedFields"] if m["manager"] != FIELD_MANAGER]
    assert others
    managed = [{}] if forgery == "clear" else before["metadata"]["managedFields"] + [_forged_entry()]
    try:
        agent_core.patch_node_status(NODE, {"metadata": {"managedFields": managed}, "status": {"conditions": [
            gpu_condition(CONDITION_UNHEALTHY, "False", f"Forgery{len(managed)}")]}},
            field_manager=FIELD_MANAGER, _content_type=STRATEGIC_MERGE)
    except ApiException as err:
        assert err.status == 403 and MANAGED_FIELDS in err.body, err.body
    after = node_of(admin)["metadata"]["managedFields"]
    assert [m for m in after if m["manager"] != FIELD_MANAGER] == others


@pytest.mark.parametrize("change", list(STATUS_LIST_REFUSALS))
def test_agent_may_not_rewrite_conditions_or_field_owners_on_nodes_status(admin, agent_core, change):
    make_patch, message, content_type, manager = STATUS_LIST_REFUSALS[change]
    before = node_of(admin)
    assert len(before["status"]["conditions"]) >= 4 and before["metadata"]["managedFields"]
    refused(lambda: agent_core.patch_node_status(NODE, make_patch(before), field_manager=manager,
                                                 _content_type=content_type), message)
    assert node_of(admin) == before  # managedFields and resourceVersion included: nothing was written


def test_agent_may_set_its_gpu_conditions_on_nodes_status(admin, agent_core):
    before = node_of(admin)
    for unhealthy, degraded in (("True", "True"), ("False", "Unknown")):
        agent_core.patch_node_status(NODE, {"status": {"conditions": [
            gpu_condition(CONDITION_UNHEALTHY, unhealthy, "XID79"),
            gpu_condition(CONDITION_DEGRADED, degraded, "RowRemapPending"),
        ]}}, field_manager=FIELD_MANAGER, _content_type=STRATEGIC_MERGE)
        conditions = conditions_of(admin, NODE)
        assert conditions[CONDITION_UNHEALTHY].status == unhealthy
        assert conditions[CONDITION_DEGRADED].status == degraded
    after = node_of(admin)
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert _ready(after)["status"] == _ready(before)["status"]


def test_without_node_actions_the_agent_may_not_patch_its_node_at_all(agent_core):
    with pytest.raises(ApiException) as denied:
        agent_core.patch_node(NODE, {"spec": {"unschedulable": True}}, _content_type=MERGE_PATCH)
    assert denied.value.status == 403  # RBAC: the base grants no patch on nodes


# --- nodes, with the node-actions component: only its own taint, cordon and cordon annotations -----


@pytest.fixture(scope="module")
def node_actions(plane, admin, applied, agent_core, tmp_path_factory):
    """`kubectl apply -k` an overlay of manifests/agent with the node-actions component, as the
    operations guide says; afterwards remove its RBAC again (shared tier)."""
    overlay = tmp_path_factory.mktemp("agent-node-actions")
    base, component = (os.path.relpath(path, overlay) for path in (NODE_ACTIONS_COMPONENT.parent,
                                                                     NODE_ACTIONS_COMPONENT))
    (overlay / "kustomization.yaml").write_text(  # kustomize takes only relative paths
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{base}]\ncomponents: [{component}]\n")
    result = subprocess.run([kubectl_binary(), "--kubeconfig", plane.kubeconfig, "apply", "-k", str(overlay)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "clusterrole.rbac.authorization.k8s.io/tau-agent-node-actions" in result.stdout

    def patch_allowed():
        try:
            agent_core.patch_node(NODE, {"spec": {"unschedulable": False}}, dry_run="All", _content_type=MERGE_PATCH)
        except ApiException as err:
            assert err.status == 403, err.body
            return False
        return True

    wait_for(patch_allowed, "RBAC to grant the agent patch on nodes", timeout=30)
    try:
        yield agent_core
    finally:
        rbac = k8s.RbacAuthorizationV1Api(admin)
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            try:
                delete("tau-agent-node-actions")
            except ApiException as err:
                if err.status != 404:
                    raise


def _own_taint(effect: str = "NoSchedule", value: str = "XID79") -> dict:
    return {"key": TAINT_UNHEALTHY_KEY, "value": value, "effect": effect}


NODE_REFUSALS = {
    "add a label": (lambda n: {"metadata": {"labels": {"forged": "x"}}}, "labels"),
    "remove a label": (lambda n: {"metadata": {"labels": {"nvidia.com/gpu.count": None}}}, "labels"),
    "add a foreign annotation": (lambda n: {"metadata": {"annotations": {"forged": "x"}}}, "only its own cordon"),
    "remove a foreign annotation": (lambda n: {"metadata": {"annotations": {"node.alpha.kubernetes.io/ttl": None}}},
                                    "only its own cordon"),
    "remove another taint": (lambda n: {"spec": {"taints": [_own_taint()]}}, "no other taint"),
    "add a foreign taint": (lambda n: {"spec": {"taints": n["spec"]["taints"] + [
        {"key": "example.com/forged", "effect": "NoSchedule"}]}}, "no other taint"),
    "change another taint": (lambda n: {"spec": {"taints": [{**TEST_TAINT, "effect": "PreferNoSchedule"}]}},
                             "no other taint"),
    "own taint NoExecute": (lambda n: {"spec": {"taints": n["spec"]["taints"] + [_own_taint("NoExecute")]}},
                            "NoSchedule or PreferNoSchedule"),
    "own taint twice": (lambda n: {"spec": {"taints": n["spec"]["taints"] + [
        _own_taint("NoSchedule"), _own_taint("PreferNoSchedule")]}}, "single"),
    "set podCIDR": (lambda n: {"spec": {"podCIDR": "10.99.0.0/24", "podCIDRs": ["10.99.0.0/24"]}}, "podCIDR"),
    "set providerID": (lambda n: {"spec": {"providerID": "kwok://forged"}}, "providerID"),
    "clear managedFields": (lambda n: {"metadata": {"managedFields": [{}]}}, MANAGED_FIELDS),
    "forge a managedFields entry": (lambda n: {"metadata": {"managedFields": n["metadata"]["managedFields"] + [
        _forged_entry()]}}, MANAGED_FIELDS),
    "uncordon a node it did not cordon": (lambda n: {"spec": {"unschedulable": False}}, "only when it cordoned"),
    "claim a cordon it did not make": (lambda n: {"metadata": {"annotations": {
        ANNOTATION_CORDONED_BY: "tau-agent", ANNOTATION_CORDON_REASON: "XID79",
        ANNOTATION_CORDON_TIMESTAMP: "2020-01-01T00:00:00Z"}}}, "cordon annotations"),
}


ON_A_NODE_AN_ADMIN_CORDONED = ("uncordon a node it did not cordon", "claim a cordon it did not make")


@contextlib.contextmanager
def cordoned_by_an_admin(admin, cordon: bool):
    core = k8s.CoreV1Api(admin)
    if cordon:
        core.patch_node(NODE, {"spec": {"unschedulable": True}}, _content_type=MERGE_PATCH)
    try:
        yield
    finally:
        if cordon:
            core.patch_node(NODE, {"spec": {"unschedulable": None}}, _content_type=MERGE_PATCH)


@pytest.mark.parametrize("change", list(NODE_REFUSALS))
def test_agent_with_node_actions_may_not_change_on_nodes(admin, node_actions, change):
    make_patch, message = NODE_REFUSALS[change]
    with cordoned_by_an_admin(admin, change in ON_A_NODE_AN_ADMIN_CORDONED):
        before = node_of(admin)
        assert TEST_TAINT in before["spec"]["taints"]
        for field in ("podCIDR", "providerID"):  # set once, the API's own validation forbids a change
            assert field not in change or not before["spec"].get(field), f"the test needs a node without {field}"
        refused(lambda: node_actions.patch_node(NODE, make_patch(before), field_manager=FIELD_MANAGER,
                                                _content_type=MERGE_PATCH), message)
        assert without_volatile(node_of(admin)) == without_volatile(before)


def test_agent_with_node_actions_may_taint_and_cordon_its_node_and_undo_it(admin, node_actions):
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    before = node_of(admin)
    for effect in ("NoSchedule", "PreferNoSchedule"):
        writer.apply_node_actions(NodeActionRequest(
            taint_reason="XID79", taint_effect=effect, manage_taint=True, cordon=True, reason="XID79",
            dry_run=False), now=_now())
        node = node_of(admin)
        assert node["spec"]["unschedulable"] is True
        assert node["spec"]["taints"] == before["spec"]["taints"] + [_own_taint(effect)]  # others kept
        assert node["metadata"]["annotations"][ANNOTATION_CORDONED_BY] == "tau-agent"
        assert node["metadata"]["annotations"][ANNOTATION_CORDON_REASON] == "XID79"
        assert node["metadata"]["labels"] == before["metadata"]["labels"]

    writer.apply_node_actions(NodeActionRequest(
        taint_reason=None, taint_effect="NoSchedule", manage_taint=True, cordon=False, reason="GPU health recovered",
        dry_run=False), now=_now())
    node = node_of(admin)
    assert not node["spec"].get("unschedulable")
    assert node["spec"]["taints"] == before["spec"]["taints"]
    assert ANNOTATION_CORDONED_BY not in node["metadata"]["annotations"]
    assert node["metadata"]["annotations"] == before["metadata"]["annotations"]


def _now() -> float:
    """The request's time: the admission policy holds a cordon-timestamp to within 60 s of it."""
    return datetime.now(UTC).timestamp()


def _cordon_request(cordon: bool) -> NodeActionRequest:
    return NodeActionRequest(taint_reason=None, taint_effect="NoSchedule", manage_taint=False, cordon=cordon,
                             reason="XID79" if cordon else "GPU health recovered", dry_run=False)


# On a node the agent cordoned itself: what it may not do to its own cordon bookkeeping.
OWN_CORDON_REFUSALS = {
    "backdate its cordon-timestamp": {"metadata": {"annotations": {ANNOTATION_CORDON_TIMESTAMP: "2020-01-01T00:00:00Z"}}},
    "hand its cordon to someone else": {"metadata": {"annotations": {ANNOTATION_CORDONED_BY: "admin"}}},
    "drop its annotations but stay cordoned": {"metadata": {"annotations": {
        ANNOTATION_CORDONED_BY: None, ANNOTATION_CORDON_REASON: None, ANNOTATION_CORDON_TIMESTAMP: None}}},
}


@pytest.mark.parametrize("change", list(OWN_CORDON_REFUSALS))
def test_agent_may_not_rewrite_its_own_cordon(admin, node_actions, change):
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    writer.apply_node_actions(_cordon_request(True), now=_now())
    try:
        before = node_of(admin)
        assert before["metadata"]["annotations"][ANNOTATION_CORDONED_BY] == "tau-agent"
        refused(lambda: node_actions.patch_node(NODE, OWN_CORDON_REFUSALS[change], field_manager=FIELD_MANAGER,
                                                _content_type=MERGE_PATCH), "cordon annotations")
        assert without_volatile(node_of(admin)) == without_volatile(before)
    finally:
        writer.apply_node_actions(_cordon_request(False), now=_now())
    assert not node_of(admin)["spec"].get("unschedulable")  # its own cordon it may still lift


CORDON_FORGERIES = {
    "cordon without saying it is the agent": {ANNOTATION_CORDONED_BY: "admin", ANNOTATION_CORDON_REASON: "x",
                                              ANNOTATION_CORDON_TIMESTAMP: "2026-01-01T00:00:00Z"},
    "cordon with a timestamp that is not one": {ANNOTATION_CORDONED_BY: "tau-agent", ANNOTATION_CORDON_REASON: "x",
                                                ANNOTATION_CORDON_TIMESTAMP: "yesterday"},
    "cordon without a timestamp": {ANNOTATION_CORDONED_BY: "tau-agent", ANNOTATION_CORDON_REASON: "x"},
}


@pytest.mark.parametrize("change", list(CORDON_FORGERIES))
def test_agent_cordons_only_with_its_own_bookkeeping(admin, node_actions, change):
    before = node_of(admin)
    refused(lambda: node_actions.patch_node(NODE, {"spec": {"unschedulable": True}, "metadata": {
        "annotations": CORDON_FORGERIES[change]}}, field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH),
        "cordon annotations")
    assert without_volatile(node_of(admin)) == without_volatile(before)


def test_the_drain_budget_trusts_only_the_agents_cordon_timestamp(plane, admin, node_actions):
    """Through the TUI's own cache: the agent's cordon counts as a recent drain; the same
    annotation rewritten by an admin (another field manager) is ignored and named."""
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    cordoned_at = datetime.now(UTC).replace(microsecond=0)
    writer.apply_node_actions(_cordon_request(True), now=cordoned_at.timestamp())
    backend = KubernetesBackend(kubeconfig=plane.kubeconfig, all_namespaces=True)
    try:
        backend.start()
        assert backend.wait_synced(60, kinds=[ResourceKind.NODE])

        def budget():
            nodes = [dict(n.raw) for n in backend.nodes()]
            return check_drain_budget("another-node", nodes, cordoned_at)

        trusted = wait_for(lambda: (b := budget()).recently_drained and b, "the agent's cordon in the cache")
        assert trusted.recently_drained == [NODE] and trusted.untrusted_cordon_times == []

        subprocess.run([kubectl_binary(), "--kubeconfig", plane.kubeconfig, "annotate", "--overwrite", "node", NODE,
                        f"{ANNOTATION_CORDON_TIMESTAMP}=2020-01-01T00:00:00Z"], check=True, capture_output=True)
        ignored = wait_for(lambda: (b := budget()).untrusted_cordon_times and b, "the admin's rewrite in the cache")
        assert ignored.recently_drained == []
        assert ignored.untrusted_cordon_times == [f"{NODE}: written by kubectl-annotate, not tau-agent"]
    finally:
        backend.close()
        k8s.CoreV1Api(admin).patch_node(NODE, {"spec": {"unschedulable": None}, "metadata": {"annotations": {
            ANNOTATION_CORDONED_BY: None, ANNOTATION_CORDON_REASON: None, ANNOTATION_CORDON_TIMESTAMP: None}}},
            _content_type=MERGE_PATCH)


# --- Events: only about its own Node, before and after an update ---------------------------------


def test_agent_may_not_take_over_another_nodes_event(admin, agent_core):
    core = k8s.CoreV1Api(admin)
    name = "event-about-another-node"
    core.create_namespaced_event(EVENTS_NAMESPACE, {
        "metadata": {"name": name, "namespace": EVENTS_NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "another-node"},
        "reason": "NodeNotReady", "message": "written by the node lifecycle controller", "type": "Warning"})
    try:
        before = admin.sanitize_for_serialization(core.read_namespaced_event(name, EVENTS_NAMESPACE))
        refused(lambda: agent_core.patch_namespaced_event(name, EVENTS_NAMESPACE, {
            "involvedObject": {"name": NODE}, "message": "rewritten as the agent's own"},
            _content_type=MERGE_PATCH), "already about its own Node")
        after = admin.sanitize_for_serialization(core.read_namespaced_event(name, EVENTS_NAMESPACE))
        assert after == before
    finally:
        core.delete_namespaced_event(name, EVENTS_NAMESPACE)


def test_agent_may_record_and_bump_events_about_its_own_node(admin, agent_core):
    writer = KubernetesWriter(agent_core.api_client, NODE, EVENTS_NAMESPACE)
    event = EventRecord(name=event_name(NODE, "GpuXid79"), key="GpuXid79", reason="GpuXid79", type="Warning",
                        message="Xid 79 on GPU 0", count=1, first_time=1_800_000_000, last_time=1_800_000_000)
    writer.write_event(event)
    writer.write_event(EventRecord(**{**event.__dict__, "count": 2, "last_time": 1_800_000_060}))
    stored = k8s.CoreV1Api(admin).read_namespaced_event(event.name, EVENTS_NAMESPACE)
    assert (stored.count, stored.involved_object.name) == (2, NODE)


# --- the policy binds the agent's own service account only ---------------------------------------


def test_a_tau_agent_service_account_in_another_namespace_is_not_the_agent(plane, admin, applied):
    """Someone else's ServiceAccount that happens to be called tau-agent keeps the rights its
    namespace gave it: the policy's rules (a node-name claim, own Node only) are not theirs."""
    core, rbac = k8s.CoreV1Api(admin), k8s.RbacAuthorizationV1Api(admin)
    namespace = "team-with-a-tau-agent"
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "tau-agent"}})
        rbac.create_namespaced_role(EVENTS_NAMESPACE, {
            "metadata": {"name": namespace}, "rules": [{"apiGroups": [""], "resources": ["events"],
                                                       "verbs": ["create"]}]})
        rbac.create_namespaced_role_binding(EVENTS_NAMESPACE, {
            "metadata": {"name": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": namespace},
            "subjects": [{"kind": "ServiceAccount", "name": "tau-agent", "namespace": namespace}]})
        token = core.create_namespaced_service_account_token("tau-agent", namespace, {
            "spec": {"audiences": [plane.server], "expirationSeconds": 600}}).status.token
        theirs = k8s.CoreV1Api(token_client(plane, admin, token))
        event = {"metadata": {"name": "their-deploy", "namespace": EVENTS_NAMESPACE},
                 "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "their-app",
                                    "namespace": EVENTS_NAMESPACE},
                 "reason": "Deployed", "message": "their own event", "type": "Normal"}

        def created():
            try:
                theirs.create_namespaced_event(EVENTS_NAMESPACE, event)
            except ApiException as err:
                assert err.status == 403 and "tau-agent" not in err.body, err.body  # RBAC not yet synced
                return False
            return True

        wait_for(created, "their event to be created under their own RBAC", timeout=30)
        core.delete_namespaced_event("their-deploy", EVENTS_NAMESPACE)
    finally:
        for delete in (lambda: rbac.delete_namespaced_role_binding(namespace, EVENTS_NAMESPACE),
                       lambda: rbac.delete_namespaced_role(namespace, EVENTS_NAMESPACE),
                       lambda: core.delete_namespace(namespace)):
            try:
                delete()
            except ApiException as err:
                if err.status != 404:
                    raise


def _kubectl(plane, *args: str) -> None:
    subprocess.run([kubectl_binary(), "--kubeconfig", plane.kubeconfig, *args], check=True, capture_output=True,
                   timeout=60)


def test_agent_may_take_over_a_taint_list_someone_else_owned_alone(plane, admin, node_actions):
    """`kubectl taint` leaves a field manager that owns only the (atomic) taint list; the agent's
    taint takes the list over and the server drops that emptied entry: allowed, it cleared nothing."""
    _kubectl(plane, "taint", "nodes", NODE, "example.com/maintenance=soon:PreferNoSchedule")
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    try:
        assert "kubectl-taint" in {m["manager"] for m in node_of(admin)["metadata"]["managedFields"]}
        for reason in ("XID79", None):
            writer.apply_node_actions(NodeActionRequest(
                taint_reason=reason, taint_effect="NoSchedule", manage_taint=True, cordon=None, reason="x",
                dry_run=False), now=_now())
        keys = [t["key"] for t in node_of(admin)["spec"]["taints"]]
        assert "example.com/maintenance" in keys and TAINT_UNHEALTHY_KEY not in keys
    finally:
        _kubectl(plane, "taint", "nodes", NODE, "example.com/maintenance-")


def test_agent_leaves_a_cordon_a_person_took_over(plane, admin, node_actions):
    """The agent cordons; a person uncordons and cordons again with kubectl (its annotations stay
    behind): the cordon is the person's now, the agent does not lift it and the policy refuses it."""
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    writer.apply_node_actions(_cordon_request(True), now=_now())
    try:
        _kubectl(plane, "uncordon", NODE)
        _kubectl(plane, "cordon", NODE)
        before = node_of(admin)
        assert before["metadata"]["annotations"][ANNOTATION_CORDONED_BY] == "tau-agent"  # left behind
        writer.apply_node_actions(_cordon_request(False), now=_now())
        assert node_of(admin)["spec"]["unschedulable"] is True
        refused(lambda: node_actions.patch_node(NODE, {"spec": {"unschedulable": False}}, field_manager=FIELD_MANAGER,
                                                _content_type=MERGE_PATCH), "only when it cordoned")
        assert without_volatile(node_of(admin)) == without_volatile(before)
    finally:
        k8s.CoreV1Api(admin).patch_node(NODE, {"spec": {"unschedulable": None}, "metadata": {"annotations": {
            ANNOTATION_CORDONED_BY: None, ANNOTATION_CORDON_REASON: None, ANNOTATION_CORDON_TIMESTAMP: None}}},
            _content_type=MERGE_PATCH)


def test_a_cordon_or_uncordon_from_the_tui_ends_the_agents_cordon(plane, admin, node_actions):
    writer = KubernetesWriter(node_actions.api_client, NODE, EVENTS_NAMESPACE)
    backend = KubernetesBackend(kubeconfig=plane.kubeconfig, all_namespaces=True)
    try:
        for person in (backend.cordon, backend.uncordon):
            writer.apply_node_actions(_cordon_request(True), now=_now())
            assert person(NODE).ok
            annotations = node_of(admin)["metadata"].get("annotations") or {}
            assert not {ANNOTATION_CORDONED_BY, ANNOTATION_CORDON_REASON, ANNOTATION_CORDON_TIMESTAMP} & set(annotations)
            writer.apply_node_actions(_cordon_request(False), now=_now())  # not its cordon: left alone
            assert bool(node_of(admin)["spec"].get("unschedulable")) is (person == backend.cordon)
            backend.uncordon(NODE)
    finally:
        backend.close()
