"""One contract, two backends: list+watch, positions, logs, RBAC, mutations."""

from __future__ import annotations

import pytest

from tau_tui.core.cluster.changes import ChangeType, ViewStatus
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.positions import PositionSource
from tau_tui.core.cluster.submission_kinds import PDB_TYPE
from tests.contract import helpers as h

R = ResourceKind


def _setup_queue(env, ns, gpus, strategy="BestEffortFIFO"):
    suffix = ns
    env.create(R.RESOURCE_FLAVOR.type, h.flavor(f"rf-{suffix}"))
    env.create(R.CLUSTER_QUEUE.type, h.cluster_queue(f"cq-{suffix}", f"rf-{suffix}", gpus, strategy))
    env.create(R.LOCAL_QUEUE.type, h.local_queue(ns, f"lq-{suffix}", f"cq-{suffix}"))
    return f"cq-{suffix}", f"lq-{suffix}"


# -- list + watch ----------------------------------------------------------------


def test_watch_sees_create_update_delete_in_order_without_duplicates(env):
    backend = env.backend()
    rec = h.Recorder(backend, R.WORKLOAD_PRIORITY_CLASS)
    name = f"wpc-{env.unique_namespace('w')}"
    gen0 = backend.generation(R.WORKLOAD_PRIORITY_CLASS)

    env.create(R.WORKLOAD_PRIORITY_CLASS.type, h.priority_class(name, 10))
    assert env.settle(lambda: backend.get(R.WORKLOAD_PRIORITY_CLASS, name) is not None and rec.of(name))
    env.patch(R.WORKLOAD_PRIORITY_CLASS.type, name, None, {"value": 20})
    assert env.settle(lambda: getattr(backend.get(R.WORKLOAD_PRIORITY_CLASS, name), "value", None) == 20
                      and len(rec.of(name)) >= 2)
    env.delete(R.WORKLOAD_PRIORITY_CLASS.type, name, None)
    assert env.settle(lambda: backend.get(R.WORKLOAD_PRIORITY_CLASS, name) is None and len(rec.of(name)) >= 3)

    events = rec.of(name)
    assert [e.type for e in events] == [ChangeType.ADDED, ChangeType.MODIFIED, ChangeType.DELETED]
    assert events[0].obj.resource_version != events[1].obj.resource_version
    assert events[1].obj.value == 20 and events[2].obj is events[1].obj  # gone: what the reader saw last
    assert backend.generation(R.WORKLOAD_PRIORITY_CLASS) > gen0
    assert backend.view_state(R.WORKLOAD_PRIORITY_CLASS).status is ViewStatus.READY
    assert "managedFields" not in (events[0].obj.raw.get("metadata") or {})


def test_namespace_scope_switch_needs_no_restart(env):
    ns_a, ns_b = env.unique_namespace("sa"), env.unique_namespace("sb")
    cq, _ = _setup_queue(env, ns_a, 8)
    env.create(R.LOCAL_QUEUE.type, h.local_queue(ns_b, f"lq-other-{ns_b}", cq))
    backend = env.backend(namespace=ns_a)
    assert env.settle(lambda: [q.name for q in backend.local_queues()] == [f"lq-{ns_a}"])
    backend.use_namespace(ns_b)
    assert env.settle(lambda: [q.name for q in backend.local_queues()] == [f"lq-other-{ns_b}"])
    backend.use_namespace(None)
    assert env.settle(lambda: {f"lq-{ns_a}", f"lq-other-{ns_b}"} <= {q.name for q in backend.local_queues()})
    assert backend.current_context in backend.contexts()


# -- queue positions -----------------------------------------------------------------


def _pending_setup(env):
    ns = env.unique_namespace("pos")
    cq, lq = _setup_queue(env, ns, gpus=0)  # no GPU quota: everything stays pending
    env.create(R.WORKLOAD_PRIORITY_CLASS.type, h.priority_class(f"low-{ns}", 10))
    env.create(R.WORKLOAD_PRIORITY_CLASS.type, h.priority_class(f"high-{ns}", 1000))
    names = []
    for i, pc in enumerate(["low", "high", "low", "high", "low"]):
        name = f"j{i}"
        env.create(R.JOB.type, h.job(ns, name, lq, gpus=1, priority_class=f"{pc}-{ns}"))
        names.append(name)
    return ns, cq, lq


def _expected_order(backend, ns):
    wls = [w for w in backend.workloads(ns)]
    wls.sort(key=lambda w: (-w.effective_priority, w.queue_order_timestamp, w.uid))
    return [w.name for w in wls]


@pytest.mark.parametrize("use_api", [True, False], ids=["visibility-api", "estimated"])
def test_positions_follow_kueue_order(env, use_api):
    if use_api and not env.has_visibility_api:
        pytest.skip("this environment has no visibility API")
    ns, cq, lq = _pending_setup(env)
    backend = env.backend()
    backend.use_visibility_api = use_api
    assert env.settle(lambda: len([w for w in backend.workloads(ns) if w.status_word == "pending"]) == 5, timeout=90)
    expected = _expected_order(backend, ns)
    # Kueue's queue manager sees new Workloads a moment after they exist: wait until it holds all five.
    assert env.settle(lambda: len(backend.pending_positions_local_queue(ns, lq).entries) == 5
                      and len(backend.pending_positions_cluster_queue(cq).entries) == 5, timeout=60)

    lq_report = backend.pending_positions_local_queue(ns, lq)
    cq_report = backend.pending_positions_cluster_queue(cq)
    for report in (lq_report, cq_report):
        assert [e.name for e in report.entries] == expected
        assert report.source is (PositionSource.VISIBILITY_API if use_api else PositionSource.ESTIMATED)
        assert report.estimated is (not use_api)
    assert [e.position_in_local_queue for e in lq_report.entries] == [0, 1, 2, 3, 4]
    assert [e.position_in_cluster_queue for e in cq_report.entries] == [0, 1, 2, 3, 4]
    # high priority first
    assert {backend.get(R.WORKLOAD, e.name, ns).owner_name for e in lq_report.entries[:2]} == {"j1", "j3"}
    if not use_api:
        assert "estimated" in lq_report.message

    history = backend.position_history(ns, expected[-1])
    assert history is not None and history.samples[-1].position_in_local_queue == 4


# -- RBAC -------------------------------------------------------------------------------


def test_forbidden_resource_degrades_only_its_view(env):
    ns = env.unique_namespace("rbac")
    _setup_queue(env, ns, 8)
    backend = env.restricted_backend(ns, deny=("workloads.kueue.x-k8s.io",))
    assert backend.wait_synced(timeout=60)
    assert env.settle(lambda: backend.view_state(R.WORKLOAD).status is ViewStatus.FORBIDDEN)
    state = backend.view_state(R.WORKLOAD)
    assert state.message == f"no access: list workloads.kueue.x-k8s.io in ns {ns}"
    assert backend.workloads() == []
    assert env.settle(lambda: [q.name for q in backend.local_queues()] == [f"lq-{ns}"])
    assert backend.view_state(R.LOCAL_QUEUE).status is ViewStatus.READY
    assert backend.view_state(R.CLUSTER_QUEUE).status is ViewStatus.READY
    # positions fall back to an estimate that says why
    report = backend.pending_positions_local_queue(ns, f"lq-{ns}")
    assert report.estimated and "workloads not readable" in report.message
    # mutations without rights map to a plain message
    result = backend.submit([h.job(ns, "nope", f"lq-{ns}")])[0]
    assert not result.ok and result.code == 403
    assert result.message.startswith("no access: create jobs.batch in ns " + ns)


# -- mutations --------------------------------------------------------------------------


def test_submit_is_idempotent_on_submission_id_and_dry_run_creates_nothing(env):
    ns = env.unique_namespace("sub")
    _, lq = _setup_queue(env, ns, 8)
    backend = env.backend()
    manifest = h.job(ns, "train", lq, submission_id="sid-1")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train", "namespace": ns,
               "labels": {"tau.azure.com/submission-id": "sid-1"}},
               "spec": {"clusterIP": "None", "selector": {"job-name": "train"}, "ports": [{"port": 29500}]}}

    dry = backend.submit([manifest, service], dry_run=True)
    assert [r.ok for r in dry] == [True, True] and all(r.dry_run for r in dry)
    assert env.read(R.JOB.type, "train", ns) is None

    first = backend.submit([manifest, service])
    assert [(r.ok, r.existing) for r in first] == [(True, False), (True, False)]
    again = backend.submit([manifest, service])
    assert [(r.ok, r.existing) for r in again] == [(True, True), (True, True)]
    assert "already submitted" in again[0].message

    other = h.job(ns, "train", lq, submission_id="sid-2")
    clash = backend.submit([other])[0]
    assert not clash.ok and clash.code == 409 and "already exists" in clash.message

    invalid = h.job(ns, "Bad_Name", lq)
    bad = backend.submit([invalid])[0]
    assert not bad.ok and bad.code == 422
    assert bad.message.startswith("rejected: create jobs.batch/Bad_Name in ns " + ns)
    assert "metadata.name" in bad.message


def test_cancel_removes_job_and_its_workload(env):
    ns = env.unique_namespace("cancel")
    _, lq = _setup_queue(env, ns, 8)
    backend = env.backend()
    assert backend.submit([h.job(ns, "victim", lq)])[0].ok
    assert env.settle(lambda: len(backend.workloads(ns)) == 1, timeout=60)
    dry = backend.cancel(R.JOB, ns, "victim", dry_run=True)
    assert dry.ok and env.read(R.JOB.type, "victim", ns) is not None
    result = backend.cancel(R.JOB, ns, "victim")
    assert result.ok, result.message
    assert env.settle(lambda: not backend.jobs(ns, tau_managed_only=False) and env.read(R.JOB.type, "victim", ns) is None)
    again = backend.cancel(R.JOB, ns, "victim")
    assert again.ok and "already gone" in again.message


@pytest.mark.parametrize("kind", [R.CLUSTER_QUEUE, R.LOCAL_QUEUE], ids=["clusterqueue", "localqueue"])
def test_hold_hold_and_drain_resume(env, kind):
    ns = env.unique_namespace("hold")
    cq, lq = _setup_queue(env, ns, 8)
    backend = env.backend()
    name, namespace = (cq, None) if kind is R.CLUSTER_QUEUE else (lq, ns)
    assert env.settle(lambda: backend.get(kind, name, namespace) is not None)

    for verb, expected in ((backend.hold, "Hold"), (backend.hold_and_drain, "HoldAndDrain"), (backend.resume, "None")):
        result = verb(kind, name, namespace)
        assert result.ok, result.message
        assert env.settle(lambda expected=expected: backend.get(kind, name, namespace).stop_policy == expected)
        raw = env.read(kind.type, name, namespace)
        assert ((raw.get("spec") or {}).get("stopPolicy") or "None") == expected
    dry = backend.hold(kind, name, namespace, dry_run=True)
    assert dry.ok and dry.dry_run
    assert ((env.read(kind.type, name, namespace).get("spec") or {}).get("stopPolicy") or "None") == "None"

    # Kueue reports the stop in the Active condition
    backend.hold(kind, name, namespace)
    assert env.settle(lambda: (c := backend.get(kind, name, namespace).condition("Active")) is not None
                      and c.status == "False" and c.reason == "Stopped", timeout=60)
    backend.resume(kind, name, namespace)


def test_cordon_uncordon_drain(env):
    ns = env.unique_namespace("drain")
    node_name = f"node-{ns}"
    env.create(R.NODE.type, h.node(node_name))
    env.create(R.POD.type, h.pod_on_node(ns, "on-node", node_name))
    backend = env.backend()
    assert env.settle(lambda: backend.get(R.NODE, node_name) is not None)

    assert backend.cordon(node_name).ok
    assert env.settle(lambda: backend.get(R.NODE, node_name).unschedulable)
    assert backend.uncordon(node_name).ok
    assert env.settle(lambda: not backend.get(R.NODE, node_name).unschedulable)

    dry = backend.drain(node_name, dry_run=True)
    assert dry.ok and f"{ns}/on-node" in dry.evicted
    assert env.read(R.POD.type, "on-node", ns) is not None
    result = backend.drain(node_name, grace_period_seconds=0)
    assert result.ok, [f.message for f in result.failed]
    assert result.evicted == (f"{ns}/on-node",)
    assert env.settle(lambda: backend.get(R.NODE, node_name).unschedulable)
    assert env.settle(lambda: (p := env.read(R.POD.type, "on-node", ns)) is None
                      or (p.get("metadata") or {}).get("deletionTimestamp"))
    missing = backend.cordon(f"no-such-{ns}")
    assert not missing.ok and missing.code == 404 and "not found" in missing.message


def test_drain_inputs_and_node_annotation(env):
    ns = env.unique_namespace("dinp")
    node_name = f"node-{ns}"
    env.create(R.NODE.type, h.node(node_name))
    env.create(R.POD.type, h.pod_on_node(ns, "on-node", node_name))
    env.create(PDB_TYPE, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "keep-one", "namespace": ns},
                          "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}})
    backend = env.backend()
    assert env.settle(lambda: backend.get(R.NODE, node_name) is not None)
    pods, pdbs, problems = backend.drain_inputs(node_name)
    assert [p["metadata"]["name"] for p in pods] == ["on-node"]
    assert [b["metadata"]["name"] for b in pdbs] == ["keep-one"] and problems == []

    dry = backend.annotate_node(node_name, {"tau-tui.io/test": "dry"}, dry_run=True)
    assert dry.ok and "tau-tui.io/test" not in ((env.read(R.NODE.type, node_name, None) or {}).get("metadata") or {}).get("annotations", {})
    assert backend.annotate_node(node_name, {"tau-tui.io/test": "set"}).ok
    assert env.settle(lambda: backend.get(R.NODE, node_name).annotations.get("tau-tui.io/test") == "set")
    missing = backend.annotate_node(f"no-such-{ns}", {"a": "b"})
    assert not missing.ok and missing.code == 404


def test_multikueue_objects_create_and_delete(env):
    suffix = env.unique_namespace("mk")
    backend = env.backend()
    cluster = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": f"w-{suffix}"},
               "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"w-{suffix}-kubeconfig"}}}}
    config = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": f"cfg-{suffix}"},
              "spec": {"clusters": [f"w-{suffix}"]}}
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": f"ac-{suffix}"},
             "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": f"cfg-{suffix}"}}}
    for manifest in (cluster, config, check):
        assert backend.create_multikueue_object(manifest, dry_run=True).ok
    assert env.read(R.MULTIKUEUE_CLUSTER.type, f"w-{suffix}", None) is None
    for manifest in (cluster, config, check):
        result = backend.create_multikueue_object(manifest)
        assert result.ok, result.message
    assert env.settle(lambda: backend.get(R.ADMISSION_CHECK, f"ac-{suffix}") is not None
                      and backend.get(R.MULTIKUEUE_CONFIG, f"cfg-{suffix}") is not None)
    ac = backend.get(R.ADMISSION_CHECK, f"ac-{suffix}")
    assert ac.is_multikueue and ac.parameters["name"] == f"cfg-{suffix}"
    assert backend.get(R.MULTIKUEUE_CLUSTER, f"w-{suffix}").kubeconfig_location == f"w-{suffix}-kubeconfig"

    assert backend.set_multikueue_config_clusters(f"cfg-{suffix}", [f"w-{suffix}", f"w2-{suffix}"]).ok
    assert env.settle(lambda: backend.get(R.MULTIKUEUE_CONFIG, f"cfg-{suffix}").clusters == (f"w-{suffix}", f"w2-{suffix}"))
    empty = backend.set_multikueue_config_clusters(f"cfg-{suffix}", [])  # the API requires 1-20 clusters
    assert not empty.ok and empty.code == 422 and empty.message.startswith("rejected: patch")
    for kind, name in ((R.ADMISSION_CHECK, f"ac-{suffix}"), (R.MULTIKUEUE_CONFIG, f"cfg-{suffix}"), (R.MULTIKUEUE_CLUSTER, f"w-{suffix}")):
        assert backend.delete_multikueue_object(kind, name).ok
    assert env.settle(lambda: backend.get(R.MULTIKUEUE_CLUSTER, f"w-{suffix}") is None
                      and backend.get(R.ADMISSION_CHECK, f"ac-{suffix}") is None)
    with pytest.raises(ClusterError):
        backend.create_multikueue_object(h.flavor("not-multikueue"))


# -- logs -------------------------------------------------------------------------------


def _running_job(env, workers=2, restarted=False):
    ns = env.unique_namespace("logs")
    _, lq = _setup_queue(env, ns, 16)
    backend = env.backend()
    assert backend.submit([h.job(ns, "talker", lq, gpus=1, workers=workers, restarted=restarted)])[0].ok
    assert env.settle(lambda: len([p for p in backend.pods(ns) if p.phase == "Running"]) == workers, timeout=120)
    return ns, backend


def test_logs_follow_merges_pods_by_timestamp(pod_env, tmp_path):
    ns, backend = _running_job(pod_env, workers=2)
    stream = backend.open_logs(LogRequest(namespace=ns, job="talker", follow=True, timestamps=True), spool_dir=str(tmp_path))
    try:
        assert pod_env.settle(lambda: stream.spool.committed_count >= 8, timeout=60)
        lines = stream.spool.lines()
        pods = sorted(p.name for p in backend.pods(ns))
        assert all(line.startswith(("[" + pods[0] + "]", "[" + pods[1] + "]")) for line in lines[:8])
        assert {line.split("]")[0][1:] for line in lines} == set(pods)
        stamps = [line.split("] ", 1)[1].split(" ", 1)[0] for line in lines[:stream.spool.committed_count]]
        assert stamps == sorted(stamps)
        assert len(lines) == len(set(lines))  # each line once
        saved = tmp_path / "saved.log"
        assert stream.spool.save(str(saved)) == stream.spool.line_count
        assert saved.read_text().splitlines()[: len(lines)] == lines[: len(saved.read_text().splitlines())]
        hits = stream.spool.search(pods[0])
        assert hits and all(pods[0] in stream.spool.line(i) for i in hits)
    finally:
        stream.close()


def test_logs_previous_container_is_not_the_current_one(pod_env, tmp_path):
    ns, backend = _running_job(pod_env, workers=1, restarted=True)
    previous = backend.open_logs(LogRequest(namespace=ns, job="talker", previous=True), spool_dir=str(tmp_path))
    current = backend.open_logs(LogRequest(namespace=ns, job="talker"), spool_dir=str(tmp_path))
    try:
        assert previous.wait_done(60) and current.wait_done(60)
        assert not previous.errors and not current.errors, (previous.errors, current.errors)
        old, new = previous.spool.lines(), current.spool.lines()
        assert old and new
        assert old != new[: len(old)]  # the terminated container's log, not the running one's
        assert len(old) == len(set(old))
    finally:
        previous.close()
        current.close()


def test_logs_of_missing_job_is_a_plain_error(env):
    backend = env.backend()
    ns = env.unique_namespace("nologs")
    with pytest.raises(ClusterError) as info:
        backend.open_logs(LogRequest(namespace=ns, job="absent"))
    assert "no pods found for job absent" in info.value.message
