"""T3 acceptance for MultiKueue for platform owners (#10), through tau-tui's own engine
(tau_tui/core/operations/multikueue_steps) against a real manager and two workers that
run pods (the `t3` fixture of tests/harness, branch h7-t3).

The harness wires its own `multikueue` AdmissionCheck/ClusterQueue for its smoke tests;
these tests use a second, dedicated set of names (`tau-mk-*`, MultiKueueClusters
`tau-worker1/2`) so both can share the session's planes.  The harness runs no TauGrid
controller, so `publish_tau_status()` stands in for it: it writes TauCluster/cluster
status (profiles resolved, MultiKueueReady from the live evaluation in
core/multikueue.py) the way tau-core does, and nothing else.

Written against h7-t3's fixture API (MultiKueueTier: manager, workers, worker_names,
worker(), stop_worker_apiserver(), start_worker_apiserver(), report_version(),
credentials; multikueue.mint_worker_credential / ensure_service_account)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import keyring
import pytest
import yaml
from kubernetes import client as k8s

from tau_tui.core.cluster.convert import admission_check_view, multikueue_cluster_view, multikueue_config_view
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.multikueue import evaluate_multikueue_ready
from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.access import SECRET, AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.credentials import KubeconfigConnector, credential_from_secret
from tau_tui.core.operations.multikueue_steps.drain import remote_leftovers
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan, WorkerPlan
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.operations.multikueue_steps.worker_logs import worker_log_backend
from tau_tui.core.runconfig.profiles import (
    Caller,
    SelectionError,
    compute_profile_set_hash,
    profile_set_from_taucluster,
    select,
)
from tests.harness import multikueue as harness_multikueue
from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.multikueue_lab import MemoryKeyring

pytestmark = [pytest.mark.harness, pytest.mark.t3]

R = ResourceKind
NAMESPACE = "taugrid-default"
YES = lambda preview: True  # noqa: E731
TIMEOUT = 180.0


def mint_worker_credential(worker, **kwargs):
    """The harness's Secret-bound worker token (tests/harness/multikueue.py on h7-t3)."""
    mint = getattr(harness_multikueue, "mint_worker_credential", None)
    if mint is None:
        pytest.fail("tests/harness/multikueue.py has no mint_worker_credential: these tests need the T3 harness of branch h7-t3")
    return mint(worker, **kwargs)


def live_readiness(access: BackendAccess):
    return evaluate_multikueue_ready(
        [admission_check_view(o) for o in access.list(R.ADMISSION_CHECK.type)],
        [multikueue_config_view(o) for o in access.list(R.MULTIKUEUE_CONFIG.type)],
        [multikueue_cluster_view(o) for o in access.list(R.MULTIKUEUE_CLUSTER.type)])


def write_kubeconfig(path: Path, doc: dict) -> str:
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def fleet(t3, tmp_path_factory):
    """Kubeconfig files: admin contexts `manager`, `worker1`, `worker2` (the owner's own access)
    and one least-privilege context per worker (`tau-worker1`, ...) minted with the harness."""
    root = tmp_path_factory.mktemp("mk-t3")
    files = [t3.manager.kubeconfig] + [w.kubeconfig for w in t3.workers]
    contexts = {}
    for name, worker in zip(t3.worker_names, t3.workers, strict=False):
        credential = mint_worker_credential(worker)
        doc = yaml.safe_load(credential.kubeconfig())
        doc["contexts"][0]["name"] = doc["current-context"] = f"tau-{name}"
        files.append(write_kubeconfig(root / f"tau-{name}.kubeconfig", doc))
        contexts[name] = credential
        prepare_worker(worker)
    kubeconfig = ":".join(files)
    backend = KubernetesBackend(kubeconfig, context=yaml.safe_load(Path(t3.manager.kubeconfig).read_text())["current-context"])
    ensure_tau_cluster(backend)
    plan = MultiKueuePlan(
        workers=tuple(WorkerPlan(f"tau-{n}", context=f"tau-{n}", admin_context=n) for n in t3.worker_names),
        namespaces=(NAMESPACE,), admission_check="tau-mk", config="tau-mk", cluster_queue="tau-mk-cq",
        local_queue="tau-mk", profile="azure.research.multicluster.t3", flavor="taugrid-h100-80gb",
        gpus_per_worker=1, source="t3 plan")
    return {"backend": backend, "connector": KubeconfigConnector(kubeconfig), "plan": plan, "root": root,
            "kubeconfig": kubeconfig, "minted": contexts}


def prepare_worker(worker) -> None:
    """The worker side the owner provides: the dedicated LocalQueue in the tenant namespace."""
    custom = k8s.CustomObjectsApi(worker.api_client())
    try:
        custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NAMESPACE, "localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "tau-mk", "namespace": NAMESPACE}, "spec": {"clusterQueue": "multikueue-worker"}})
    except k8s.ApiException as err:
        if err.status != 409:
            raise


def ensure_tau_cluster(backend) -> None:
    access = BackendAccess(backend, "manager")
    if access.get(R.TAU_CLUSTER.type, "cluster") is None:
        access.create(R.TAU_CLUSTER.type, {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                                           "metadata": {"name": "cluster"}, "spec": {"workloadProfiles": []}})


def publish_tau_status(backend) -> None:
    """Stand-in for tau-core's observer (taugrid.md §3.3, §4.1): resolve the declared profiles
    and MultiKueueReady from the live objects, and write TauCluster/cluster status."""
    access = BackendAccess(backend, "manager")
    tc = access.get(R.TAU_CLUSTER.type, "cluster")
    generation = tc["metadata"]["generation"]
    live = live_readiness(access)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    profiles = []
    for declared in (tc.get("spec") or {}).get("workloadProfiles") or ():
        lqs = [{"namespace": ns, "name": declared["defaultLocalQueue"],
                "clusterQueue": ((access.get(R.LOCAL_QUEUE.type, declared["defaultLocalQueue"], ns) or {}).get("spec") or {}).get("clusterQueue", "")}
               for ns in (declared.get("applicability") or {}).get("namespaces") or ()]
        ok = all(q["clusterQueue"] for q in lqs) and live.ready
        profiles.append({**declared, "localQueues": lqs, "clusterQueues": sorted({q["clusterQueue"] for q in lqs}),
                         "conditions": [{"type": "Ready", "status": "True" if ok else "False",
                                         "reason": "WorkloadProfileReady" if ok else "WorkloadProfileNotReady",
                                         "message": "t3 stand-in", "observedGeneration": generation, "lastTransitionTime": now}]})
    status = {"observedGeneration": generation, "workloadProfiles": {
        "observedGeneration": generation, "observed": True, "ready": all(p["conditions"][0]["status"] == "True" for p in profiles),
        "drifted": False, "profileSetHash": compute_profile_set_hash(profiles), "profiles": profiles},
        "conditions": [
            {"type": "WorkloadProfilesReady", "status": "True", "reason": "WorkloadProfilesReady", "message": "t3",
             "observedGeneration": generation, "lastTransitionTime": now},
            {"type": "MultiKueueReady", "status": live.status, "reason": live.reason, "message": live.message,
             "observedGeneration": generation, "lastTransitionTime": now}]}
    k8s.CustomObjectsApi(backend.http.api_client).patch_cluster_custom_object_status(
        "tau.azure.com", "v1alpha1", "clusters", "cluster", {"status": status})


def exercise(fleet, flow: str, tmp_path: Path, **kwargs):
    def wait(seconds: float) -> None:
        publish_tau_status(fleet["backend"])
        time.sleep(seconds)
    return open_exercise(flow, fleet["backend"], fleet["connector"], kwargs.pop("plan", fleet["plan"]), wait=wait,
                         records_dir=tmp_path / "records", **kwargs)


def submit(fleet, name: str, profile_name: str) -> dict:
    """A Job for the profile tau-tui selected (the same select() as render/submit)."""
    backend = fleet["backend"]
    raw = BackendAccess(backend, "manager").get(R.TAU_CLUSTER.type, "cluster")
    profile = select(profile_set_from_taucluster(raw), profile_name, Caller(NAMESPACE, None, None))
    queue = profile.local_queue_for(NAMESPACE).name
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": NAMESPACE,
        "labels": {"kueue.x-k8s.io/queue-name": queue, "tau.azure.com/submission-id": f"t3-{name}",
                   "tau.azure.com/profile": profile.name}},
        "spec": {"suspend": True, "template": {"metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}},
                 "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": "registry.invalid/t:1",
                          "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                                        "limits": {"nvidia.com/gpu": "1"}}}]}}}}
    [result] = backend.submit([body])
    assert result.ok, result.message
    return body


def placed(fleet, name: str, timeout: float = TIMEOUT) -> tuple[str, str]:
    access = BackendAccess(fleet["backend"], "manager")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for wl in access.list(R.WORKLOAD.type, NAMESPACE):
            owners = wl["metadata"].get("ownerReferences") or ()
            if any(o.get("name") == name for o in owners) and (wl.get("status") or {}).get("clusterName"):
                return wl["status"]["clusterName"], wl["metadata"]["name"]
        time.sleep(1)
    raise AssertionError(f"Job {name} was not placed on a worker in {timeout:g}s")


def clean_on_every_worker(t3, fleet) -> dict[str, list[str]]:
    out = {}
    connector = fleet["connector"]
    for name in t3.worker_names:
        out[name] = remote_leftovers(connector.admin(name), [NAMESPACE])
    return out


def active_status(access: BackendAccess, cluster: str) -> str | None:
    obj = access.get(R.MULTIKUEUE_CLUSTER.type, cluster) or {}
    return next((c.get("status") for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == "Active"), None)


def test_enablement_dispatch_status_logs_cancel_then_drain_rollback_drain(t3, fleet, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", fleet["kubeconfig"])  # the worker log contexts live there
    setup = exercise(fleet, "setup", tmp_path)
    assert setup.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, [s.check.reason for s in setup.survey()]
    job = submit(fleet, "t3-tau-train", fleet["plan"].profile)
    worker, workload = placed(fleet, job["metadata"]["name"])
    # status from the manager; logs resolve on the worker through the mapped context; cancel from the manager
    backend = fleet["backend"]
    logs_backend = worker_log_backend(backend, worker, {worker: worker.removeprefix("tau-")})
    assert logs_backend is not None
    from tau_tui.core.cluster.logspool import LogRequest
    request = LogRequest(namespace=NAMESPACE, job=job["metadata"]["name"])
    deadline, targets = time.monotonic() + TIMEOUT, []
    while not targets and time.monotonic() < deadline:
        try:
            targets = logs_backend.resolve_log_targets(request)
        except Exception:  # the worker's pod is not there yet
            time.sleep(1)
    assert targets and targets[0][1] == "trainer"
    # after authorization is removed, a new submission is refused and the existing run can still be cancelled
    drain = exercise(fleet, "drain", tmp_path, inputs={"cancel": "all-pending"})
    assert drain.run_step(drain.flow.steps[0], YES, timeout=TIMEOUT) is Outcome.VERIFIED
    publish_tau_status(backend)
    with pytest.raises(SelectionError):
        select(profile_set_from_taucluster(BackendAccess(backend, "m").get(R.TAU_CLUSTER.type, "cluster")),
               fleet["plan"].profile, Caller(NAMESPACE, "nlp", None))
    revoke = drain.flow.steps[4]
    assert f"{workload}" in (revoke.refusal(drain.ctx) or "")  # revocation refused while remote work is active
    assert backend.cancel(R.JOB, NAMESPACE, job["metadata"]["name"]).ok
    assert drain.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, [s.check.reason for s in drain.survey()]
    assert clean_on_every_worker(t3, fleet) == {n: [] for n in t3.worker_names}
    # rollback: new credentials (the drain revoked the old ones), setup again from step 1
    for name, worker in zip(t3.worker_names, t3.workers, strict=False):
        credential = mint_worker_credential(worker)
        doc = yaml.safe_load(credential.kubeconfig())
        doc["contexts"][0]["name"] = doc["current-context"] = f"tau-{name}"
        write_kubeconfig(fleet["root"] / f"tau-{name}.kubeconfig", doc)
    rollback = exercise(fleet, "rollback", tmp_path)
    assert rollback.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED
    submit(fleet, "t3-tau-train-2", fleet["plan"].profile)
    placed(fleet, "t3-tau-train-2")
    second = exercise(fleet, "drain", tmp_path, inputs={"cancel": "all-pending"})
    backend.cancel(R.JOB, NAMESPACE, "t3-tau-train-2")
    assert second.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED
    assert clean_on_every_worker(t3, fleet) == {n: [] for n in t3.worker_names}
    records = sorted((tmp_path / "records").glob("*.json"))
    assert [json.loads(p.read_text())["outcome"] for p in records] == ["verified"] * 4


def test_negatives_default_queue_insecure_kubeconfig_missing_verbs_version(t3, fleet, tmp_path):
    plan = fleet["plan"]
    guard = MultiKueuePlan(**{**plan.__dict__, "local_queue": "jobqueue"})
    guarded = exercise(fleet, "setup", tmp_path, plan=guard, record=False)
    assert "is the default queue" in guarded.flow.steps[3].refusal(guarded.ctx)
    # an insecure worker kubeconfig is refused before anything is stored
    name = t3.worker_names[0]
    doc = yaml.safe_load(mint_worker_credential(t3.worker(name)).kubeconfig())
    doc["clusters"][0]["cluster"].pop("certificate-authority-data")
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    path = write_kubeconfig(tmp_path / "insecure.kubeconfig", doc)
    insecure = MultiKueuePlan(**{**plan.__dict__, "workers": (WorkerPlan("tau-insecure", kubeconfig=path),)})
    first = exercise(fleet, "setup", tmp_path, plan=insecure, record=False).survey()[0]
    assert first.state is StepState.REFUSED and "insecure-skip-tls-verify" in first.check.reason
    # a version mismatch is flagged out of contract
    server = t3.report_version(t3.worker_names[1], "v1.30.9")
    credential = mint_worker_credential(t3.worker(t3.worker_names[1]), server=server)
    proxied = write_kubeconfig(tmp_path / "proxied.kubeconfig", yaml.safe_load(credential.kubeconfig()))
    matrix_plan = MultiKueuePlan(**{**plan.__dict__, "workers": (WorkerPlan("tau-proxied", kubeconfig=proxied),)})
    rows = dependency_matrix(exercise(fleet, "setup", tmp_path, plan=matrix_plan, record=False).ctx)
    kubernetes = dict(rows[0].cells)["Kubernetes"]
    assert kubernetes.status == "bad" and "out of contract" in kubernetes.text


def test_rotation_replaces_the_secret_and_the_old_credential_stops_working(t3, fleet, tmp_path):
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        setup = exercise(fleet, "setup", tmp_path)
        assert setup.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED
        name = t3.worker_names[0]
        access = BackendAccess(fleet["backend"], "manager")
        old = credential_from_secret(f"tau-{name}", access.get(SECRET, f"tau-{name}-kubeconfig", KUEUE_NAMESPACE))
        new = mint_worker_credential(t3.worker(name))
        path = write_kubeconfig(tmp_path / "new.kubeconfig", yaml.safe_load(new.kubeconfig()))
        rotation = exercise(fleet, "rotate", tmp_path, vault=CredentialVault("t3"),
                            inputs={"worker": f"tau-{name}", "new_kubeconfig": path})
        assert rotation.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, [s.check.reason for s in rotation.survey()]
    finally:
        keyring.set_keyring(previous)
    stored = credential_from_secret(f"tau-{name}", access.get(SECRET, f"tau-{name}-kubeconfig", KUEUE_NAMESPACE))
    assert stored.kubeconfig != old.kubeconfig
    assert active_status(access, f"tau-{name}") == "True"
    with pytest.raises(AccessError) as err:
        fleet["connector"].connect(old).whoami()
    assert err.value.code == 401
    record = json.loads(sorted((tmp_path / "records").glob("*rotate*.json"))[-1].read_text())
    assert record["outcome"] == "verified"
    assert any("401" in e for s in record["steps"] for e in s["evidence"])


def test_readiness_follows_worker_outages(t3, fleet, tmp_path):
    assert exercise(fleet, "setup", tmp_path).run(YES, timeout=TIMEOUT) is Outcome.VERIFIED
    backend = fleet["backend"]
    access = BackendAccess(backend, "manager")

    def live():
        return live_readiness(access)

    def wait(predicate, what):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(1)
        raise AssertionError(what)

    one = t3.worker_names[0]
    t3.stop_worker_apiserver(one)
    try:
        wait(lambda: active_status(access, f"tau-{one}") == "False", f"tau-{one} inactive")
        for name in t3.worker_names[1:]:
            t3.stop_worker_apiserver(name)
        wait(lambda: not live().ready, "MultiKueueReady live False with both workers down")
        assert "Active=False" in live().message
    finally:
        for name in t3.worker_names:
            t3.start_worker_apiserver(name)
    wait(lambda: live().ready, "MultiKueueReady live True again")
