"""Tier 2 smoke tests: Jobs create pods that KWOK runs on fake GPU nodes; logs; watch resume."""

from __future__ import annotations

import ipaddress
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.rest import ApiException

from tests.harness.explain import why_pods_wait
from tests.harness.kwok import FAKE_LOG_LINES, GPUS_PER_NODE, KEEP_RUNNING_ANNOTATIONS
from tests.harness.manifests import create_from_file
from tests.harness.waiting import wait_for as poll

pytestmark = [pytest.mark.harness, pytest.mark.t2]

REPO = Path(__file__).resolve().parents[2]
KUEUE_EXAMPLE = REPO / "manifests" / "kueue"
NAMESPACE = "taugrid-default"
KEEP_RUNNING = KEEP_RUNNING_ANNOTATIONS  # the delay alone ends a pod within 5 s
JOB_PODS = "batch.kubernetes.io/job-name=t2-gpu"  # the pods of the module's Job



def wait_for(predicate, what: str, timeout: float = 90.0, explain=None):
    return poll(predicate, what, timeout, interval=0.5, explain=explain)


@pytest.fixture(scope="module")
def api(t2):
    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    for name in ("namespace.yaml", "workloadpriorityclasses.yaml", "resourceflavors.yaml", "clusterqueue.yaml",
                 "localqueue.yaml"):
        create_from_file(api_client, KUEUE_EXAMPLE / name)
    # The namespace's default ServiceAccount comes from kube-controller-manager; pods need it.
    core = k8s.CoreV1Api(api_client)
    wait_for(lambda: any(sa.metadata.name == "default"
                         for sa in core.list_namespaced_service_account(NAMESPACE).items),
             "default ServiceAccount")
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def running_pod(api, t2) -> Iterator[k8s.V1Pod]:
    batch = k8s.BatchV1Api(api)
    core = k8s.CoreV1Api(api)
    batch.create_namespaced_job(NAMESPACE, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "t2-gpu", "labels": {"kueue.x-k8s.io/queue-name": "jobqueue"}},
        "spec": {"suspend": True, "parallelism": 2, "completions": 2, "template": {
            "metadata": {"annotations": KEEP_RUNNING},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "trainer", "image": "registry.invalid/tau/trainer:1",
                "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(GPUS_PER_NODE)},
                              "limits": {"nvidia.com/gpu": str(GPUS_PER_NODE)}}}]}}},
    })

    def running_pods():
        pods = core.list_namespaced_pod(NAMESPACE, label_selector=JOB_PODS).items
        ready = [p for p in pods if p.status.phase == "Running"]
        return ready if len(ready) == 2 else None

    pods = wait_for(running_pods, "both pods of the admitted Job Running",
                    explain=lambda: why_pods_wait(api, NAMESPACE, JOB_PODS))
    yield pods[0]
    # The pods hold every GPU of the tier's two nodes for an hour: free them for later tests.
    batch.delete_namespaced_job("t2-gpu", NAMESPACE, propagation_policy="Background")
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector=JOB_PODS).items:
        core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, grace_period_seconds=0)


def test_admitted_job_pods_run_on_kwok_gpu_nodes(t2, api, running_pod):
    core = k8s.CoreV1Api(api)
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=JOB_PODS).items
    assert {p.spec.node_name for p in pods} == set(t2.gpu_nodes)  # 8 GPUs each: one pod per node
    for pod in pods:
        assert pod.spec.node_selector["tau.azure.com/gpu-class"] == "h100-80gb"  # from the ResourceFlavor
        node = core.read_node(pod.spec.node_name)
        assert node.status.allocatable["nvidia.com/gpu"] == str(GPUS_PER_NODE)
        assert node.metadata.labels["nvidia.com/gpu.present"] == "true"
        assert [a.address for a in node.status.addresses if a.type == "InternalIP"] == ["127.0.0.1"]


def test_follow_log_stream_yields_lines(api, running_pod):
    core = k8s.CoreV1Api(api)
    resp = core.read_namespaced_pod_log(
        running_pod.metadata.name, NAMESPACE, container="trainer", follow=True,
        _preload_content=False, _request_timeout=(5, 30),
    )
    seen: list[str] = []
    try:
        buffer = b""
        for chunk in resp.stream(1024):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            seen += [line.decode() for line in lines]
            if len(seen) >= len(FAKE_LOG_LINES):
                break
    finally:
        resp.release_conn()
    assert seen[: len(FAKE_LOG_LINES)] == FAKE_LOG_LINES


def test_watch_resumes_after_apiserver_restart(t2, api):
    """Stop the apiserver mid-watch, restart it, and resume from the last resourceVersion."""
    core = k8s.CoreV1Api(api)
    namespace = "t2-watch"
    core.create_namespace({"metadata": {"name": namespace}})
    initial = core.list_namespaced_config_map(namespace)
    events: queue.Queue = queue.Queue()
    stop = threading.Event()

    def watcher():
        # A client-side resume loop: on a broken stream, watch again from the last seen
        # resourceVersion; on 410 Gone, relist and continue from the list's version.
        rv = initial.metadata.resource_version
        while not stop.is_set():
            watcher_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
            try:
                w = k8s_watch.Watch()
                for event in w.stream(k8s.CoreV1Api(watcher_client).list_namespaced_config_map, namespace,
                                      resource_version=rv, timeout_seconds=60, _request_timeout=(2, 70)):
                    rv = event["object"].metadata.resource_version
                    events.put(("event", event["type"], event["object"].metadata.name))
                    if stop.is_set():
                        break
            except ApiException as err:
                if err.status == 410:
                    rv = k8s.CoreV1Api(watcher_client).list_namespaced_config_map(namespace).metadata.resource_version
                    events.put(("relisted", err.status, rv))
                else:
                    events.put(("error", err.status, str(err.reason)))
                    time.sleep(0.5)
            except Exception as err:  # noqa: BLE001 - connection refused/reset while the apiserver is down
                events.put(("error", type(err).__name__, ""))
                time.sleep(0.5)
            finally:
                watcher_client.close()

    thread = threading.Thread(target=watcher, daemon=True)
    thread.start()
    try:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "before-restart"}})
        wait_for(lambda: _drain_until(events, ("event", "ADDED", "before-restart")), "event before restart", 30)
        t2.stop_apiserver(kill=True)
        wait_for(lambda: _drain_until(events, "error"), "the watch to notice the apiserver is gone", 30)
        t2.start_apiserver()
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "after-restart"}})
        wait_for(lambda: _drain_until(events, ("event", "ADDED", "after-restart")), "event after restart", 60)
    finally:
        stop.set()
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "stop-watcher"}})
        thread.join(timeout=10)


def _listening_addresses(pid: int) -> set[str]:
    """host:port of every listening TCP socket the process holds (from /proc; IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            host_hex, port_hex = local.split(":")
            raw = bytes.fromhex(host_hex)
            if table == "tcp":
                host = str(ipaddress.IPv4Address(raw[::-1]))
            else:
                host = str(ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))))
            found.add(f"{host}:{int(port_hex, 16)}")
    return found


def test_every_component_listens_on_loopback_only(t2):
    pids = t2.pids()
    assert {name.split("/")[1] for name in pids} >= {
        "etcd", "kube-apiserver", "kueue", "kube-controller-manager", "kube-scheduler", "kwok"}
    for name, pid in pids.items():
        addresses = _listening_addresses(pid)
        assert addresses, f"{name} listens on nothing"
        assert all(a.startswith("127.0.0.1:") for a in addresses), f"{name} listens on {sorted(addresses)}"


def _drain_until(events: queue.Queue, wanted) -> bool:
    while True:
        try:
            item = events.get_nowait()
        except queue.Empty:
            return False
        if item == wanted or item[0] == wanted:
            return True
