"""Tier 3 smoke tests: a MultiKueue manager dispatches a Job to one of two workers."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests.harness.waiting import wait_for as poll

pytestmark = [pytest.mark.harness, pytest.mark.t3]



def wait_for(predicate, what: str, timeout: float = 90.0):
    return poll(predicate, what, timeout, interval=0.5)


def job_exists(batch: k8s.BatchV1Api, name: str, namespace: str) -> bool:
    try:
        batch.read_namespaced_job(name, namespace)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def test_job_dispatched_to_worker_and_deleted_there(t3):
    manager = k8s_config.new_client_from_config(config_file=t3.manager.kubeconfig)
    workers = {name: k8s_config.new_client_from_config(config_file=plane.kubeconfig)
               for name, plane in zip(t3.worker_names, t3.workers, strict=True)}
    try:
        batch = k8s.BatchV1Api(manager)
        custom = k8s.CustomObjectsApi(manager)
        job = batch.create_namespaced_job(t3.namespace, {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "t3-dispatch", "labels": {"kueue.x-k8s.io/queue-name": t3.local_queue}},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "trainer", "image": "registry.invalid/tau/trainer:1",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                              "limits": {"nvidia.com/gpu": "1"}}}]}}},
        })
        # Kueue's Job webhook on the manager hands the Job to MultiKueue.
        assert job.spec.managed_by == "kueue.x-k8s.io/multikueue"

        def cluster_name():
            items = custom.list_namespaced_custom_object(
                "kueue.x-k8s.io", "v1beta2", t3.namespace, "workloads",
                label_selector=f"kueue.x-k8s.io/job-uid={job.metadata.uid}")["items"]
            return items and (items[0].get("status") or {}).get("clusterName")

        chosen = wait_for(cluster_name, "Workload status.clusterName on the manager")
        assert chosen in workers
        worker_batch = k8s.BatchV1Api(workers[chosen])
        wait_for(lambda: job_exists(worker_batch, "t3-dispatch", t3.namespace), f"the Job on {chosen}")
        remote = worker_batch.read_namespaced_job("t3-dispatch", t3.namespace)
        assert remote.metadata.labels.get("kueue.x-k8s.io/prebuilt-workload-name")

        batch.delete_namespaced_job("t3-dispatch", t3.namespace, propagation_policy="Background")
        wait_for(lambda: not job_exists(worker_batch, "t3-dispatch", t3.namespace),
                 f"the Job to disappear from {chosen}")
    finally:
        manager.close()
        for api in workers.values():
            api.close()
