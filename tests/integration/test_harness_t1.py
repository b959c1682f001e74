"""Tier 1 smoke tests: real kube-apiserver + Kueue, driven only by the official kubernetes client."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for

WORKLOAD_CREATED_LIMIT_S = 240.0

pytestmark = [pytest.mark.harness, pytest.mark.t1]

REPO = Path(__file__).resolve().parents[2]
KUEUE_EXAMPLE = REPO / "manifests" / "kueue"
NAMESPACE = "taugrid-default"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"




def job_manifest(name: str, queue: str, *, gpus: int = 1, priority: str | None = None,
                 annotations: dict | None = None) -> dict:
    labels = {QUEUE_LABEL: queue}
    if priority:
        labels[PRIORITY_LABEL] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "registry.invalid/tau/trainer:1",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                                      "limits": {"nvidia.com/gpu": str(gpus)}},
                    }],
                },
            },
        },
    }


def raw_request(api: k8s.ApiClient, method: str, path: str, *, body: dict | None = None,
                query: list[tuple[str, str]] | None = None, **path_params: str) -> tuple[int, dict]:
    """Send a request as-is (no client-side model validation); returns (status, decoded JSON body)."""
    method, url, headers, serialized, post = api.param_serialize(
        method, path, path_params=path_params, query_params=query or [], body=body,
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        auth_settings=["BearerToken"])
    try:
        response = api.call_api(method, url, headers, serialized, post)
    except ApiException as err:
        return err.status, json.loads(err.body)
    response.read()
    return response.status, json.loads(response.data)


def get_json(api: k8s.ApiClient, path: str, **path_params: str) -> dict:
    """GET an API path the generated client has no method for (the visibility subresources)."""
    status, doc = raw_request(api, "GET", path, **path_params)
    assert status == 200, f"GET {path}: HTTP {status}: {doc}"
    return doc


def workload_for(custom: k8s.CustomObjectsApi, namespace: str, job_uid: str) -> dict | None:
    items = custom.list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", namespace, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={job_uid}"
    )["items"]
    return items[0] if items else None


def condition(obj: dict, cond_type: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == cond_type:
            return cond["status"]
    return None


@pytest.fixture(scope="module")
def api(t1):
    api_client = k8s_config.new_client_from_config(config_file=t1.kubeconfig)
    create_from_file(api_client, KUEUE_EXAMPLE / "namespace.yaml")
    for name in ("workloadpriorityclasses.yaml", "resourceflavors.yaml", "clusterqueue.yaml", "localqueue.yaml"):
        create_from_file(api_client, KUEUE_EXAMPLE / name)
    yield api_client
    api_client.close()


def test_suspended_job_gets_workload_admitted_and_unsuspended(api):
    batch = k8s.BatchV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    job = batch.create_namespaced_job(NAMESPACE, job_manifest("t1-admit", "jobqueue"))
    # Kueue's job reconciler makes the Workload; on a loaded two-core machine the first one took over
    # 60 s (CI run with another CPU-heavy job alongside): a bound for a hang, not a speed
    workload = wait_for(lambda: workload_for(custom, NAMESPACE, job.metadata.uid), "Workload for the Job",
                        timeout=WORKLOAD_CREATED_LIMIT_S)
    assert workload["spec"]["queueName"] == "jobqueue"
    wait_for(lambda: condition(workload_for(custom, NAMESPACE, job.metadata.uid), "Admitted") == "True",
             "Workload Admitted", timeout=WORKLOAD_CREATED_LIMIT_S)
    wait_for(lambda: batch.read_namespaced_job("t1-admit", NAMESPACE).spec.suspend is False, "Job unsuspended",
             timeout=WORKLOAD_CREATED_LIMIT_S)
    admitted = workload_for(custom, NAMESPACE, job.metadata.uid)
    assert admitted["status"]["admission"]["clusterQueue"] == "jobqueue"


def test_pending_positions_follow_kueue_order(t1, api):
    assert t1.has_visibility_api
    custom = k8s.CustomObjectsApi(api)
    batch = k8s.BatchV1Api(api)
    # A queue with no GPU quota: every GPU workload stays pending and is listed by the visibility API.
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "t1-positions"},
        "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO", "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "taugrid-h100-80gb", "resources": [
                {"name": "cpu", "nominalQuota": "0"}, {"name": "memory", "nominalQuota": "0"},
                {"name": "nvidia.com/gpu", "nominalQuota": "0"}]}]}]},
    })
    custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NAMESPACE, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "t1-positions"}, "spec": {"clusterQueue": "t1-positions"},
    })
    try:
        priorities = ["taugrid-default", "taugrid-priority", "taugrid-default", "taugrid-priority", "taugrid-default"]
        jobs = []
        for n, priority in enumerate(priorities):
            jobs.append(batch.create_namespaced_job(
                NAMESPACE, job_manifest(f"t1-pos-{n}", "t1-positions", priority=priority)))
            time.sleep(1.1)  # creationTimestamp has second granularity; keep FIFO order unambiguous
        # Kueue's order: priority descending, then creation time ascending.
        expected = [f"t1-pos-{n}" for n in (1, 3, 0, 2, 4)]

        def pending():
            summary = get_json(api, "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads",
                               name="t1-positions")
            items = summary.get("items") or []
            return items if len(items) == 5 else None

        items = wait_for(pending, "5 pending workloads in the visibility API")
        owner_of = {item["metadata"]["name"]: item["metadata"]["ownerReferences"][0]["name"] for item in items}
        by_position = sorted(items, key=lambda item: item["positionInClusterQueue"])
        assert [owner_of[item["metadata"]["name"]] for item in by_position] == expected
        assert [item["positionInClusterQueue"] for item in by_position] == [0, 1, 2, 3, 4]
        assert [item["positionInLocalQueue"] for item in by_position] == [0, 1, 2, 3, 4]
        assert [item["priority"] for item in by_position] == [1200, 1200, 1000, 1000, 1000]

        lq_summary = get_json(
            api, "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}/pendingworkloads",
            namespace=NAMESPACE, name="t1-positions")
        lq_order = sorted(lq_summary["items"], key=lambda item: item["positionInLocalQueue"])
        assert [owner_of[item["metadata"]["name"]] for item in lq_order] == expected
    finally:
        # Kueue rewrites the status of a Workload it can never admit (no quota) many times a second:
        # left behind, these kept the API server busy for the rest of the session.
        for job in batch.list_namespaced_job(NAMESPACE).items:
            if job.metadata.name.startswith("t1-pos-"):
                batch.delete_namespaced_job(job.metadata.name, NAMESPACE, propagation_policy="Background")
        custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NAMESPACE, "localqueues", "t1-positions")
        custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "t1-positions")


def test_unknown_field_rejected_by_schema_in_server_dry_run(api):
    batch = k8s.BatchV1Api(api)
    body = job_manifest("t1-unknown-field", "jobqueue")
    body["spec"]["notAJobField"] = True
    # Sent raw: the generated client would refuse the unknown field before the server sees it.
    status, doc = raw_request(api, "POST", "/apis/batch/v1/namespaces/{namespace}/jobs", body=body,
                              query=[("dryRun", "All"), ("fieldValidation", "Strict")], namespace=NAMESPACE)
    assert status == 400, doc
    assert doc["reason"] == "BadRequest" and 'unknown field "spec.notAJobField"' in doc["message"]
    # The same Job without the field passes the server's dry run.
    del body["spec"]["notAJobField"]
    status, doc = raw_request(api, "POST", "/apis/batch/v1/namespaces/{namespace}/jobs", body=body,
                              query=[("dryRun", "All"), ("fieldValidation", "Strict")], namespace=NAMESPACE)
    assert status == 201, doc
    with pytest.raises(ApiException):
        batch.read_namespaced_job("t1-unknown-field", NAMESPACE)


def test_tau_crds_validate_and_have_status_subresource(api):
    custom = k8s.CustomObjectsApi(api)
    good = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster", "metadata": {"name": "cluster"},
            "spec": {"managementMode": "Observe", "features": {"multiKueue": "Beta"}}}
    created = custom.create_cluster_custom_object("tau.azure.com", "v1alpha1", "clusters", good, dry_run="All")
    assert created["spec"]["deletionPolicy"] == "Retain"  # schema default applied
    bad = {**good, "spec": {"managementMode": "Sometimes"}}
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object("tau.azure.com", "v1alpha1", "clusters", bad, dry_run="All")
    assert err.value.status == 422 and "managementMode" in err.value.body
    custom.create_cluster_custom_object("tau.azure.com", "v1alpha1", "clusters", good)
    status = {"status": {"phase": "Ready", "observedGeneration": 1,
                         "conditions": [{"type": "MultiKueueReady", "status": "False", "reason": "PrerequisitesNotReady",
                                         "message": "no AdmissionCheck uses controller kueue.x-k8s.io/multikueue",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    patched = custom.patch_cluster_custom_object_status("tau.azure.com", "v1alpha1", "clusters", "cluster", status)
    assert patched["status"]["phase"] == "Ready"
    # Status written through the main resource is ignored because status is a subresource.
    spec_write = custom.patch_cluster_custom_object("tau.azure.com", "v1alpha1", "clusters", "cluster",
                                                    {"status": {"phase": "Degraded"}})
    assert spec_write["status"]["phase"] == "Ready"
    workspace = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
                 "metadata": {"name": "taugrid-default", "namespace": "kueue-system"},
                 "spec": {"authorization": {"mode": "cluster-wide"}, "role": "tau-researcher-v1"}}
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("tau.azure.com", "v1alpha1", "kueue-system", "workspaces", workspace,
                                               dry_run="All")
    assert err.value.status == 422 and "cluster-wide" in err.value.body


def test_serviceaccount_kubeconfig_is_denied_until_granted(t1, api):
    path = t1.kubeconfig_for_serviceaccount("t1-sa", "reader")
    sa_client = k8s_config.new_client_from_config(config_file=path)
    try:
        with pytest.raises(ApiException) as err:
            k8s.CoreV1Api(sa_client).list_namespaced_config_map("t1-sa")
        assert err.value.status == 403
        rbac = k8s.RbacAuthorizationV1Api(api)
        rbac.create_namespaced_role("t1-sa", {"metadata": {"name": "cm-reader"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})
        rbac.create_namespaced_role_binding("t1-sa", {
            "metadata": {"name": "cm-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "t1-sa"}]})

        def allowed() -> bool:
            try:
                k8s.CoreV1Api(sa_client).list_namespaced_config_map("t1-sa")
            except ApiException as denied:
                if denied.status != 403:
                    raise
                return False
            return True

        wait_for(allowed, "the RoleBinding to take effect")
    finally:
        sa_client.close()


def test_suspended_rayjob_gets_admitted(api):
    custom = k8s.CustomObjectsApi(api)
    container = {"name": "ray", "image": "registry.invalid/rayproject/ray:2.9",
                 "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}}
    gpu_container = {**container, "resources": {"requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"},
                                                "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}}}
    rayjob = custom.create_namespaced_custom_object("ray.io", "v1", NAMESPACE, "rayjobs", {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "t1-rayjob", "labels": {QUEUE_LABEL: "jobqueue"}},
        "spec": {
            "suspend": True,
            "shutdownAfterJobFinishes": True,
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                                      "rayStartParams": {},
                                      "template": {"spec": {"containers": [gpu_container]}}}],
            },
        },
    })
    uid = rayjob["metadata"]["uid"]
    wait_for(lambda: condition(workload_for(custom, NAMESPACE, uid) or {}, "Admitted") == "True",
             "RayJob Workload Admitted")
    # RayJob's suspend is omitempty: unsuspended means false or absent.
    wait_for(lambda: not custom.get_namespaced_custom_object("ray.io", "v1", NAMESPACE, "rayjobs", "t1-rayjob")
             ["spec"].get("suspend"), "RayJob unsuspended")
    workload = workload_for(custom, NAMESPACE, uid)
    assert [ps["name"] for ps in workload["spec"]["podSets"]] == ["head", "gpu", "submitter"]
