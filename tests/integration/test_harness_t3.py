"""Tier 3 smoke tests: a MultiKueue manager and two workers that run pods, checked on each worker.

Every check on a worker reads that worker's own API server with its admin kubeconfig.
"""

from __future__ import annotations

import base64

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import kubeconfig_yaml
from tests.harness.kwok import GPUS_PER_NODE, KEEP_RUNNING_ANNOTATIONS
from tests.harness.multikueue import (
    add_cluster,
    admission_check_active_condition,
    ensure_service_account,
    grant_cluster_role,
    mint_worker_credential,
    remove_cluster,
    revoke_worker_credential,
    worker_cluster_role_rules,
)
from tests.harness.waiting import wait_for as poll

pytestmark = [pytest.mark.harness, pytest.mark.t3]

KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KEEP_RUNNING = KEEP_RUNNING_ANNOTATIONS
# Kueue's Job and RayJob webhooks on the manager hand a Job on a MultiKueue queue to MultiKueue.
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def wait_for(predicate, what: str, timeout: float = 120.0):
    return poll(predicate, what, timeout, interval=0.5)


@pytest.fixture(scope="module")
def apis(t3):
    """Admin API clients: "manager" and one per worker name."""
    clients = {"manager": k8s_config.new_client_from_config(config_file=t3.manager.kubeconfig)}
    for name, plane in zip(t3.worker_names, t3.workers, strict=True):
        clients[name] = k8s_config.new_client_from_config(config_file=plane.kubeconfig)
    yield clients
    for api in clients.values():
        api.close()


def gpu_job(name: str, queue: str, *, keep_running: bool) -> dict:
    template: dict = {"spec": {"restartPolicy": "Never", "containers": [{
        "name": "trainer", "image": "registry.invalid/tau/trainer:1",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                      "limits": {"nvidia.com/gpu": "1"}}}]}}
    if keep_running:
        template["metadata"] = {"annotations": KEEP_RUNNING}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {"suspend": True, "template": template}}


def manager_workload(api, namespace: str, owner_uid: str) -> dict | None:
    items = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        *KUEUE, namespace, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={owner_uid}")["items"]
    return items[0] if items else None


def dispatched_worker(api, namespace: str, owner_uid: str) -> str | None:
    return ((manager_workload(api, namespace, owner_uid) or {}).get("status") or {}).get("clusterName")


def read_or_none(read):
    """What read() returns, or None when the object is not there (one read, so it cannot vanish
    between a check and the read)."""
    try:
        return read()
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def exists(read) -> bool:
    return read_or_none(read) is not None


def leftovers_on_worker(worker_api, namespace: str, job_name: str, workload_name: str) -> list[str]:
    """What is still on the worker for a dispatched Job: the Job, its pods (also Terminating ones
    held by a finalizer) and the remote Workload."""
    found = []
    if exists(lambda: k8s.BatchV1Api(worker_api).read_namespaced_job(job_name, namespace)):
        found.append(f"Job {job_name}")
    pods = k8s.CoreV1Api(worker_api).list_namespaced_pod(
        namespace, label_selector=f"batch.kubernetes.io/job-name={job_name}").items
    found += [f"Pod {p.metadata.name} (finalizers {p.metadata.finalizers})" for p in pods]
    if exists(lambda: k8s.CustomObjectsApi(worker_api).get_namespaced_custom_object(
            *KUEUE, namespace, "workloads", workload_name)):
        found.append(f"Workload {workload_name}")
    return found


def leftovers_on_workers(t3, apis, job_name: str, workload_name: str) -> list[str]:
    """leftovers_on_worker on every worker: the one that ran the Job and the one whose copy lost."""
    return [f"{name}: {item}" for name in t3.worker_names
            for item in leftovers_on_worker(apis[name], t3.namespace, job_name, workload_name)]


def submit_and_find_worker(t3, apis, body: dict) -> tuple[k8s.V1Job, str, str]:
    """Create the Job on the manager; return it, the worker it went to and its Workload name."""
    job = k8s.BatchV1Api(apis["manager"]).create_namespaced_job(t3.namespace, body)
    assert job.spec.managed_by == MULTIKUEUE_CONTROLLER
    chosen = wait_for(lambda: dispatched_worker(apis["manager"], t3.namespace, job.metadata.uid),
                      f"Workload status.clusterName of Job {job.metadata.name} on the manager")
    assert chosen in t3.worker_names
    workload = manager_workload(apis["manager"], t3.namespace, job.metadata.uid)["metadata"]["name"]
    return job, chosen, workload


def test_job_runs_on_worker_kwok_node_and_delete_on_manager_clears_worker(t3, apis):
    job, chosen, workload = submit_and_find_worker(t3, apis, gpu_job("t3-running", t3.local_queue, keep_running=True))
    worker_api, worker = apis[chosen], t3.worker(chosen)
    worker_core = k8s.CoreV1Api(worker_api)

    remote = wait_for(lambda: read_or_none(lambda: k8s.BatchV1Api(worker_api).read_namespaced_job(
        "t3-running", t3.namespace)), f"the Job on {chosen}")
    assert remote.metadata.labels["kueue.x-k8s.io/prebuilt-workload-name"] == workload

    def running_pods():
        pods = worker_core.list_namespaced_pod(t3.namespace, label_selector="batch.kubernetes.io/job-name=t3-running").items
        return [p for p in pods if p.status.phase == "Running"]

    pods = wait_for(running_pods, f"the Job's pod Running on {chosen}")
    assert len(pods) == 1
    assert pods[0].spec.node_name in worker.gpu_nodes
    assert pods[0].spec.node_selector["tau.azure.com/gpu-class"] == "h100-80gb"  # the worker's ResourceFlavor
    node = worker_core.read_node(pods[0].spec.node_name)
    assert node.status.allocatable["nvidia.com/gpu"] == str(GPUS_PER_NODE)
    # MultiKueue copies the worker Job's status back to the manager's Job.
    manager_batch = k8s.BatchV1Api(apis["manager"])
    wait_for(lambda: (manager_batch.read_namespaced_job("t3-running", t3.namespace).status.active or 0) == 1,
             "status.active=1 synced to the manager's Job")

    manager_batch.delete_namespaced_job("t3-running", t3.namespace, propagation_policy="Background")
    wait_for(lambda: not leftovers_on_workers(t3, apis, "t3-running", workload),
             "Job, pods and Workload gone from every worker")
    wait_for(lambda: manager_workload(apis["manager"], t3.namespace, job.metadata.uid) is None,
             "the Workload gone from the manager")


def test_completed_job_succeeds_on_manager_and_leaves_nothing_on_worker(t3, apis):
    job, _worker, workload = submit_and_find_worker(t3, apis, gpu_job("t3-complete", t3.local_queue, keep_running=False))
    manager_batch = k8s.BatchV1Api(apis["manager"])

    def complete():
        status = manager_batch.read_namespaced_job("t3-complete", t3.namespace).status
        return any(c.type == "Complete" and c.status == "True" for c in status.conditions or []) and status

    status = wait_for(complete, "Complete=True on the manager's Job (synced from the worker)")
    assert status.succeeded == 1
    # Once the remote Workload is Finished, MultiKueue deletes the remote objects.
    wait_for(lambda: not leftovers_on_workers(t3, apis, "t3-complete", workload),
             "Job, pods and Workload gone from every worker after completion")
    finished = manager_workload(apis["manager"], t3.namespace, job.metadata.uid)
    assert any(c["type"] == "Finished" and c["status"] == "True" for c in finished["status"]["conditions"])
    manager_batch.delete_namespaced_job("t3-complete", t3.namespace, propagation_policy="Background")


def test_rayjob_is_created_on_the_worker_and_removed_with_the_manager_copy(t3, apis):
    # The RayJob CRD is on all three clusters; no KubeRay operator runs, so the worker's RayJob makes no pods.
    custom = k8s.CustomObjectsApi(apis["manager"])
    container = {"name": "ray", "image": "registry.invalid/rayproject/ray:2.9",
                 "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}}
    rayjob = custom.create_namespaced_custom_object("ray.io", "v1", t3.namespace, "rayjobs", {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "t3-rayjob", "labels": {QUEUE_LABEL: t3.local_queue}},
        "spec": {"suspend": True, "shutdownAfterJobFinishes": True, "entrypoint": "python -c 'print(1)'",
                 "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {},
                                                      "template": {"spec": {"containers": [container]}}}}},
    })
    assert rayjob["spec"].get("managedBy") == MULTIKUEUE_CONTROLLER
    uid = rayjob["metadata"]["uid"]
    chosen = wait_for(lambda: dispatched_worker(apis["manager"], t3.namespace, uid), "the RayJob's clusterName")
    workload = manager_workload(apis["manager"], t3.namespace, uid)["metadata"]["name"]
    worker_custom = k8s.CustomObjectsApi(apis[chosen])

    def remote_rayjob():
        return read_or_none(lambda: worker_custom.get_namespaced_custom_object(
            "ray.io", "v1", t3.namespace, "rayjobs", "t3-rayjob"))

    remote = wait_for(remote_rayjob, f"the RayJob on {chosen}")
    assert remote["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == workload
    assert not remote["spec"].get("managedBy")  # the worker's own Kueue and KubeRay own it there

    custom.delete_namespaced_custom_object("ray.io", "v1", t3.namespace, "rayjobs", "t3-rayjob",
                                           propagation_policy="Background")
    wait_for(lambda: not remote_rayjob() and not exists(lambda: worker_custom.get_namespaced_custom_object(
        *KUEUE, t3.namespace, "workloads", workload)), f"RayJob and Workload gone from {chosen}")


def test_worker_apiserver_outage_turns_its_cluster_inactive_and_back(t3, record_property):
    name = t3.worker_names[1]
    t3.stop_worker_apiserver(name)
    try:
        down = wait_for(lambda: (c := t3.cluster_active(name)) and c["status"] == "False" and c,
                        f"MultiKueueCluster {name} Active=False")
        check = wait_for(lambda: (c := admission_check_active_condition(t3.manager)) and
                         c["reason"] == "SomeActiveClusters" and c, "AdmissionCheck SomeActiveClusters")
    finally:
        t3.start_worker_apiserver(name)
    record_property("inactive_reason", down["reason"])
    record_property("inactive_message", down["message"])
    assert down["reason"] == "ClientConnectionFailed"
    assert "connection refused" in down["message"]
    assert check["status"] == "True" and name in check["message"]
    # Kueue retries after 5 s, 10 s, 20 s ... (at most ~320 s); the bound covers the first few.
    wait_for(lambda: (c := t3.cluster_active(name)) and c["status"] == "True", f"{name} Active=True again",
             timeout=180)
    wait_for(lambda: admission_check_active_condition(t3.manager)["reason"] == "Active", "AdmissionCheck Active")


def test_worker_identity_without_watch_on_workloads_is_inactive_with_reason(t3, record_property):
    name, identity = "worker1-noverbs", "multikueue-noverbs"
    worker = t3.worker(t3.worker_names[0])
    rbac = k8s.RbacAuthorizationV1Api(worker.api_client())
    # Every verb of worker-rbac.yaml except `watch` on workloads.
    rules = [{**rule, "verbs": [v for v in rule["verbs"] if not ("workloads" in rule["resources"] and v == "watch")]}
             for rule in worker_cluster_role_rules()]
    rbac.create_cluster_role({"metadata": {"name": identity}, "rules": rules})
    ensure_service_account(worker, identity)
    grant_cluster_role(worker, identity, identity)
    credential = mint_worker_credential(worker, service_account=identity)
    try:
        add_cluster(t3.manager, name, credential)
        down = wait_for(lambda: (c := t3.cluster_active(name)) and c["status"] == "False" and c,
                        f"MultiKueueCluster {name} Active=False")
    finally:
        remove_cluster(t3.manager, name)
        revoke_worker_credential(worker, credential)
        rbac.delete_cluster_role_binding(f"{identity}-crb")
        rbac.delete_cluster_role(identity)
    record_property("noverbs_reason", down["reason"])
    record_property("noverbs_message", down["message"])
    assert down["reason"] == "ClientConnectionFailed"
    assert (f'User "system:serviceaccount:kueue-system:{identity}" cannot watch resource "workloads" '
            f'in API group "kueue.x-k8s.io" at the cluster scope') in down["message"]


def test_minted_credential_works_until_revoked_and_others_keep_working(t3):
    name = t3.worker_names[0]
    worker = t3.worker(name)
    in_use = t3.credentials[name]
    extra = mint_worker_credential(worker)
    assert extra.service_account == in_use.service_account  # same identity, its own binding Secret
    assert extra.binding_secret != in_use.binding_secret
    assert extra.probe() == 200 and in_use.probe() == 200
    revoke_worker_credential(worker, extra)
    assert extra.probe() == 401  # the revoked token is refused by the worker ...
    assert in_use.probe() == 200  # ... and the one the manager's Secret holds is not
    assert t3.cluster_active(name)["status"] == "True"


def test_worker_behind_version_proxy_reports_other_minor_and_still_connects(t3, apis):
    name = t3.worker_names[1]
    worker = t3.worker(name)
    server = t3.report_version(name, "v1.34.4")
    credential = mint_worker_credential(worker, server=server)
    # The worker's admin client certificate, presented to the proxy instead of the apiserver.
    admin = yaml.safe_load(kubeconfig_yaml(name, server, worker.ca.cert_pem(), {
        "client-certificate-data": base64.b64encode(worker.admin.cert_pem()).decode(),
        "client-key-data": base64.b64encode(worker.admin.key_pem()).decode()}))
    proxied = k8s_config.new_client_from_config_dict(admin)
    try:
        info = k8s.VersionApi(proxied).get_code()
        assert (info.major, info.minor, info.git_version) == ("1", "34", "v1.34.4")
        direct = k8s.VersionApi(apis[name]).get_code()
        assert (direct.major, direct.minor, direct.git_version) == ("1", "35", worker.binaries.k8s_version)
        # Identities pass through unchanged: the certificate's user and groups, and a token's ServiceAccount.
        review = k8s.AuthenticationV1Api(proxied).create_self_subject_review({})
        assert review.status.user_info.username == "tau-harness-admin"
        assert "system:masters" in review.status.user_info.groups
        assert credential.probe() == 200
        assert credential.probe("/api/v1/namespaces") == 403  # worker-rbac.yaml grants no namespace list
        # Kueue connects through the proxy too: its watches are streamed.
        add_cluster(t3.manager, f"{name}-v134", credential)
        wait_for(lambda: (c := t3.cluster_active(f"{name}-v134")) and c["status"] == "True",
                 f"MultiKueueCluster {name}-v134 Active=True through the proxy")
    finally:
        proxied.close()
        remove_cluster(t3.manager, f"{name}-v134")
        revoke_worker_credential(worker, credential)
