"""T3 acceptance for MultiKueue for platform owners (#10), through tau-tui's own engine
(tau_tui/core/operations/multikueue_steps) against a real manager and two workers that
run pods (the `t3` fixture of tests/harness).

The harness wires its own `multikueue` AdmissionCheck/ClusterQueue for its smoke tests;
these tests use a second, dedicated set of names (`tau-mk-*`, MultiKueueClusters
`tau-worker1/2`) so both can share the session's planes.  The harness runs no TauGrid
controller, so tests/harness/taugrid_status.py stands in for it: it writes TauCluster/cluster
status (profiles resolved, MultiKueueReady from the seed's rule over the raw objects, not
through tau-tui's own evaluation) the way tau-core does, and nothing else; in a background
thread for the whole module, and once more wherever a test needs it at once.

Every credential minted here is remembered; the last test scans every file the app
wrote (exercise records, the audit log, anything under the XDG directories the
module points the app at) for those bytes."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import keyring
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tau_tui.core.cluster.convert import multikueue_cluster_view
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.logspool.spool_dirs import process_spool_dir
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.audit import state_dir
from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.access import SECRET, AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.credentials import (
    KubeconfigConnector,
    WorkerCredential,
    credential_from_secret,
)
from tau_tui.core.operations.multikueue_steps.engine import Outcome, StepState
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan, WorkerPlan
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.operations.multikueue_steps.worker_logs import worker_log_backend
from tau_tui.core.runconfig.profiles import (
    Caller,
    SelectionError,
    profile_set_from_taucluster,
    select,
)
from tests.harness import multikueue as harness_multikueue
from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.harness.kwok import FAKE_LOG_LINES, KEEP_RUNNING_ANNOTATIONS
from tests.harness.taugrid_status import TAU, TAUCLUSTER, StatusWriter
from tests.multikueue_lab import MemoryKeyring

pytestmark = [pytest.mark.harness, pytest.mark.t3]

R = ResourceKind
NAMESPACE = "taugrid-default"
YES = lambda preview: True  # noqa: E731
TIMEOUT = 180.0
#: Longer than Kueue's longest reconnect back-off for a lost worker (~320 s), on a loaded machine.
RECONNECT_TIMEOUT = 600.0


#: The cancel test's own hold on a worker's pod (KWOK deletes a pod only once it has no finalizers).
HOLD = "tau-tui.test/hold-pod"

#: Every credential (token, and the kubeconfig bytes the Secrets held) seen in this module.
CREDENTIAL_BYTES: set[str] = set()
APP_DIRS = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


def mint_worker_credential(worker, **kwargs):
    """The harness's Secret-bound worker token (tests/harness/multikueue.py), remembered for the scan."""
    credential = harness_multikueue.mint_worker_credential(worker, **kwargs)
    CREDENTIAL_BYTES.add(credential.token)
    return credential


def remember_stored(access: BackendAccess, worker: str) -> WorkerCredential:
    """The credential in the manager's Secret for ``worker``, remembered (raw and base64) for the scan."""
    stored = credential_from_secret(worker, access.get(SECRET, f"{worker}-kubeconfig", KUEUE_NAMESPACE))
    assert stored is not None, f"no credential Secret for {worker}"
    CREDENTIAL_BYTES.update({stored.kubeconfig.decode(), stored.secret_data()})
    return stored


def profiles_ready(t3) -> bool:
    """TauCluster/cluster's status (the harness's stand-in for TauGrid) says every workload profile is Ready."""
    cluster = k8s.CustomObjectsApi(t3.manager.api_client()).get_cluster_custom_object(*TAU, "clusters", TAUCLUSTER)
    profiles = (((cluster.get("status") or {}).get("workloadProfiles") or {}).get("profiles")) or []
    return bool(profiles) and all(any(c.get("type") == "Ready" and c.get("status") == "True"
                                      for c in p.get("conditions") or ()) for p in profiles)


def _true(obj: dict | None, cond_type: str) -> bool:
    return any(c.get("type") == cond_type and c.get("status") == "True" for c in ((obj or {}).get("status") or {}).get("conditions") or ())


def seed_rule_ready(t3) -> bool:
    """The seed's rule for MultiKueueReady, written out here over raw objects (an oracle independent of
    tau-tui): "a correctly controlled and active AdmissionCheck, its referenced MultiKueueConfig, and at
    least one active MultiKueueCluster must all resolve"."""
    custom = k8s.CustomObjectsApi(t3.manager.api_client())

    def cluster_object(plural: str, name: str) -> dict | None:
        try:
            return custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, name)
        except k8s.ApiException as err:
            if err.status == 404:
                return None
            raise
    for check in custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "admissionchecks")["items"]:
        spec = check.get("spec") or {}
        params = spec.get("parameters") or {}
        if spec.get("controllerName") != "kueue.x-k8s.io/multikueue" or not _true(check, "Active"):
            continue
        if (params.get("apiGroup"), params.get("kind")) != ("kueue.x-k8s.io", "MultiKueueConfig"):
            continue
        config = cluster_object("multikueueconfigs", str(params.get("name")))
        if config and any(_true(cluster_object("multikueueclusters", c), "Active")
                          for c in (config.get("spec") or {}).get("clusters") or ()):
            return True
    return False


def tau_cluster_ready(t3) -> dict:
    """TauCluster/cluster's own MultiKueueReady condition (current or not), read with the raw client."""
    tc = k8s.CustomObjectsApi(t3.manager.api_client()).get_cluster_custom_object(*TAU, "clusters", TAUCLUSTER)
    found = next((c for c in (tc.get("status") or {}).get("conditions") or () if c.get("type") == "MultiKueueReady"), {})
    return {**found, "current": found.get("observedGeneration") == tc["metadata"]["generation"]}


def readiness(t3, fleet) -> tuple[bool, str | None]:
    """(the seed's rule now, TauCluster's MultiKueueReady status once republished after that read)."""
    expected = seed_rule_ready(t3)
    publish_tau_status(fleet)
    condition = tau_cluster_ready(t3)
    return expected, condition.get("status") if condition.get("current") else None


def write_kubeconfig(path: Path, doc: dict) -> str:
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def fleet(t3, tmp_path_factory):
    """Kubeconfig files: admin contexts `manager`, `worker1`, `worker2` (the owner's own access)
    and one least-privilege context per worker (`tau-worker1`, ...) minted with the harness."""
    root = tmp_path_factory.mktemp("mk-t3")
    # Setup from nothing, and a drain's discovery finds only this module's objects.
    t3.remove_smoke_wiring()
    harness_multikueue.install_priority_classes(t3.manager)
    # Whatever the app writes (records, audit log, settings, caches) lands here, for the credential scan.
    app_env = pytest.MonkeyPatch()
    for var in APP_DIRS:
        app_env.setenv(var, str(root / "app" / var.lower()))
    files = [t3.manager.kubeconfig] + [w.kubeconfig for w in t3.workers]
    contexts = {}
    for name, worker in zip(t3.worker_names, t3.workers, strict=True):
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
    writer = StatusWriter(k8s_config.new_client_from_config(config_file=t3.manager.kubeconfig))
    try:
        with writer.running():
            yield {"backend": backend, "connector": KubeconfigConnector(kubeconfig), "plan": plan, "root": root,
                   "kubeconfig": kubeconfig, "minted": contexts, "writer": writer}
    finally:
        app_env.undo()
        t3.restore_smoke_wiring()


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


def publish_tau_status(fleet) -> None:
    """TauCluster status now (the background writer repeats it every second)."""
    fleet["writer"].publish()


def exercise(fleet, flow: str, tmp_path: Path, **kwargs):
    def wait(seconds: float) -> None:
        publish_tau_status(fleet)
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
        "spec": {"suspend": True, "template": {"metadata": {"annotations": KEEP_RUNNING_ANNOTATIONS},
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


MULTIKUEUE_LABELS = ("kueue.x-k8s.io/multikueue-origin", "kueue.x-k8s.io/prebuilt-workload-name")


def clean_on_every_worker(t3, fleet) -> dict[str, list[str]]:
    """The seed's "Verify worker Jobs/RayJobs and pods directly", written out with the raw client on each
    worker (its admin access): no Job, RayJob, RayCluster or Workload that MultiKueue dispatched (its labels)
    and no pod of this module's runs (`t3-` Jobs) left in the tenant namespace."""
    out = {}
    for name in t3.worker_names:
        api = t3.worker(name).api_client()
        custom, left = k8s.CustomObjectsApi(api), []

        def dispatched(meta) -> bool:
            labels = (meta.get("labels") if isinstance(meta, dict) else meta.labels) or {}
            return any(label in labels for label in MULTIKUEUE_LABELS)
        left += [f"Job {j.metadata.name}" for j in k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items
                 if dispatched(j.metadata) or j.metadata.name.startswith("t3-")]
        for group, version, plural in (("ray.io", "v1", "rayjobs"), ("ray.io", "v1", "rayclusters"),
                                       ("kueue.x-k8s.io", "v1beta2", "workloads")):
            try:
                items = custom.list_namespaced_custom_object(group, version, NAMESPACE, plural)["items"]
            except k8s.ApiException as err:
                if err.status != 404:
                    raise
                items = []
            left += [f"{plural} {o['metadata']['name']}" for o in items if dispatched(o["metadata"])]
        left += [f"Pod {p.metadata.name}" for p in k8s.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
                 if dispatched(p.metadata) or (p.metadata.labels or {}).get("job-name", "").startswith("t3-")]
        out[name] = left
    return out


def placement(t3, fleet, job: str) -> tuple[str | None, str]:
    """(the worker the manager's Workload of ``job`` names in status.clusterName, its MultiKueue check's
    state), read raw; and the worker must hold the Job (checked by the caller)."""
    access = BackendAccess(fleet["backend"], "manager")
    for wl in access.list(R.WORKLOAD.type, NAMESPACE):
        if any(o.get("name") == job for o in wl["metadata"].get("ownerReferences") or ()):
            st = wl.get("status") or {}
            state = next((c.get("state") for c in st.get("admissionChecks") or () if c.get("name") == fleet["plan"].admission_check), "")
            return st.get("clusterName"), str(state)
    return None, ""


def job_on_worker(t3, worker: str, job: str) -> bool:
    jobs = k8s.BatchV1Api(t3.worker(worker.removeprefix("tau-")).api_client()).list_namespaced_job(NAMESPACE).items
    return any(j.metadata.name == job for j in jobs)


def active_status(access: BackendAccess, cluster: str) -> str | None:
    obj = access.get(R.MULTIKUEUE_CLUSTER.type, cluster) or {}
    return next((c.get("status") for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == "Active"), None)


def new_worker_credentials(t3, fleet) -> None:
    """Mint a fresh least-privilege credential per worker into the owner's `tau-<worker>` contexts
    (a drain's last step revokes the ones before)."""
    for name, worker in zip(t3.worker_names, t3.workers, strict=True):
        doc = yaml.safe_load(mint_worker_credential(worker).kubeconfig())
        doc["contexts"][0]["name"] = doc["current-context"] = f"tau-{name}"
        write_kubeconfig(fleet["root"] / f"tau-{name}.kubeconfig", doc)


def enable(t3, fleet, tmp_path: Path) -> None:
    """Setup through the wizard's engine, from wherever the tests before left the manager."""
    access = BackendAccess(fleet["backend"], "manager")
    if any(access.get(SECRET, wp.secret_name, KUEUE_NAMESPACE) is None for wp in fleet["plan"].workers):
        new_worker_credentials(t3, fleet)
    setup = exercise(fleet, "setup", tmp_path)
    assert setup.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(setup)


def reasons(ex) -> list[str]:
    return [f"{s.step.title}: {s.state.value}: {s.check.reason}" for s in ex.survey()]


def live_profiles(backend):
    return profile_set_from_taucluster(BackendAccess(backend, "manager").get(R.TAU_CLUSTER.type, "cluster"))


def log_targets(backend, worker: str, job: str) -> list[tuple[str, str]]:
    """The run's (pod, container) pairs, resolved on the worker through the context mapped to it."""
    logs_backend = worker_log_backend(backend, worker, {worker: worker.removeprefix("tau-")})
    assert logs_backend is not None
    request = LogRequest(namespace=NAMESPACE, job=job)
    deadline, targets = time.monotonic() + TIMEOUT, []
    while not targets and time.monotonic() < deadline:
        try:
            targets = logs_backend.resolve_log_targets(request)
        except Exception:  # the worker's pod is not there yet
            targets = []
        if not targets:
            time.sleep(1)
    return targets


def read_log_lines(backend, worker: str, job: str) -> list[str]:
    """The run's log lines, streamed from the worker into the spool the Logs pane uses (KWOK serves
    FAKE_LOG_LINES for every container)."""
    logs_backend = worker_log_backend(backend, worker, {worker: worker.removeprefix("tau-")})
    spool_dir = process_spool_dir(state_dir() / "spool")
    stream = logs_backend.open_logs(LogRequest(namespace=NAMESPACE, job=job), spool_dir=spool_dir)
    try:
        stream.spool.wait_for_lines(len(FAKE_LOG_LINES), TIMEOUT)
        return stream.spool.lines()
    finally:
        stream.close()


def test_enablement_dispatch_status_logs_cancel_then_drain_setup_again_drain(t3, fleet, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", fleet["kubeconfig"])  # the worker log contexts live there
    backend, plan = fleet["backend"], fleet["plan"]
    manager = BackendAccess(backend, "manager")
    setup = exercise(fleet, "setup", tmp_path)
    assert setup.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(setup)
    assert readiness(t3, fleet) == (True, "True")  # TauCluster's own MultiKueueReady, and the seed's rule
    for wp in plan.workers:
        remember_stored(manager, wp.name)
    # a tenant outside the profile's applicability cannot select it (the select() of render and submit)
    with pytest.raises(SelectionError, match="not applicable to namespace tau-outside"):
        select(live_profiles(backend), plan.profile, Caller("tau-outside", None, None))
    job = submit(fleet, "t3-tau-train", plan.profile)
    name = job["metadata"]["name"]
    worker, workload = placed(fleet, name)
    assert worker in {wp.name for wp in plan.workers}
    # placed, read raw: the manager's Workload names the worker, its MultiKueue check is Ready, the worker holds the Job
    assert placement(t3, fleet, name) == (worker, "Ready")
    assert job_on_worker(t3, worker, name)
    # logs resolve on the worker through the mapped context
    targets = log_targets(backend, worker, name)
    assert targets and targets[0][1] == "trainer", targets
    assert FAKE_LOG_LINES[0] in " ".join(read_log_lines(backend, worker, name))
    # drain step 1: authorization removed; a new submission is refused, the existing run keeps status, logs, cancel
    drain = exercise(fleet, "drain", tmp_path, inputs={"cancel": "all-pending"})
    assert drain.run_step(drain.flow.steps[0], YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(drain)
    publish_tau_status(fleet)
    for team in ("nlp", None, "tau-multikueue-drained"):  # a tenant's team, none, and one claiming the reserved name
        with pytest.raises(SelectionError, match="its team tau-multikueue-drained is a reserved name no caller can claim"):
            select(live_profiles(backend), plan.profile, Caller(NAMESPACE, team, None))
    assert placement(t3, fleet, name)[0] == worker  # the run keeps its placement
    assert FAKE_LOG_LINES[-1] in " ".join(read_log_lines(backend, worker, name))
    revoke = drain.flow.steps[4]
    assert workload in (revoke.refusal(drain.ctx) or "")  # revocation refused while remote work is active
    assert backend.cancel(R.JOB, NAMESPACE, name).ok
    assert drain.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(drain)
    assert clean_on_every_worker(t3, fleet) == {n: [] for n in t3.worker_names}
    # re-enable: new credentials (the drain revoked the old ones), setup again from step 1
    new_worker_credentials(t3, fleet)
    again = exercise(fleet, "setup", tmp_path)
    assert again.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(again)
    for wp in plan.workers:
        remember_stored(manager, wp.name)
    submit(fleet, "t3-tau-train-2", plan.profile)
    placed(fleet, "t3-tau-train-2")
    second = exercise(fleet, "drain", tmp_path, inputs={"cancel": "all-pending"})
    assert backend.cancel(R.JOB, NAMESPACE, "t3-tau-train-2").ok
    assert second.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(second)
    assert clean_on_every_worker(t3, fleet) == {n: [] for n in t3.worker_names}
    records = sorted((tmp_path / "records").glob("*.json"))
    assert [json.loads(p.read_text())["outcome"] for p in records] == ["verified"] * 4


def test_cancel_on_the_manager_is_released_only_when_the_workers_pods_are_gone(t3, fleet, tmp_path):
    """#14 item 2: `tau-tui cancel --wait` on the manager reads the run's pods on its worker (the
    context mapped in worker_contexts) and says "cancelled; compute released" only once they are gone.
    The test holds the worker's pod with a finalizer of its own, so it decides when the pod goes."""
    enable(t3, fleet, tmp_path)
    name = submit(fleet, "t3-tau-cancel", fleet["plan"].profile)["metadata"]["name"]
    worker, _ = placed(fleet, name)
    core = k8s.CoreV1Api(t3.worker(worker.removeprefix("tau-")).api_client())

    def worker_pods():
        return core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name={name}").items

    deadline = time.monotonic() + TIMEOUT
    while not any(p.status.phase == "Running" for p in worker_pods()):
        assert time.monotonic() < deadline, f"no Running pod of {name} on {worker}"
        time.sleep(1)
    for pod in worker_pods():
        core.patch_namespaced_pod(pod.metadata.name, NAMESPACE, {"metadata": {"finalizers": [HOLD]}},
                                  _content_type="application/strategic-merge-patch+json")

    def release() -> None:
        for pod in worker_pods():
            if HOLD in (pod.metadata.finalizers or ()):
                core.patch_namespaced_pod(pod.metadata.name, NAMESPACE,
                                          {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}},
                                          _content_type="application/strategic-merge-patch+json")

    config = Path(os.environ["XDG_CONFIG_HOME"]) / "tau-tui" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump({"worker_contexts": {wp.name: wp.admin_context for wp in fleet["plan"].workers}}))
    proc = subprocess.Popen([sys.executable, "-m", "tau_tui", "cancel", name, "-n", NAMESPACE, "--wait", "--interval", "1s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KUBECONFIG": fleet["kubeconfig"]})
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in proc.stdout or ()], daemon=True)
    reader.start()
    out: list[str] = []

    def next_line() -> str:
        try:
            out.append(lines.get(timeout=TIMEOUT))
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"tau-tui cancel printed nothing more in {TIMEOUT:g}s after {out}; "
                                 f"stderr: {proc.communicate(timeout=30)[1]}") from None
        return out[-1]

    try:
        assert next_line().startswith(f"Job {NAMESPACE}/{name} cancelled; Kueue releases its quota"), out
        next_line()
        assert out[1].startswith(f"{NAMESPACE}/{name}: releasing compute: 1 pod(s) still hold GPUs on worker {worker} ("), out
        # MultiKueue deletes the worker's Job; its pod is deleted there but held: the run stays releasing.
        while not all(p.metadata.deletion_timestamp for p in worker_pods()):
            assert time.monotonic() < deadline + TIMEOUT, f"the pod of {name} on {worker} was never deleted"
            time.sleep(1)
        for _ in range(3):
            time.sleep(1)  # the CLI polls every second: three more polls see the pod still there
            assert proc.poll() is None and worker_pods(), out
        release()
        assert proc.wait(timeout=TIMEOUT) == 0, proc.stderr.read() if proc.stderr else ""
        reader.join(timeout=30)
        while not lines.empty():
            out.append(lines.get_nowait())
        assert out[-1] == f"{NAMESPACE}/{name}: cancelled; compute released", out
        assert worker_pods() == []
    finally:
        if proc.poll() is None:
            proc.kill()
        release()
        config.unlink(missing_ok=True)


def test_negatives_default_queue_insecure_kubeconfig_version(t3, fleet, tmp_path):
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
    assert kubernetes.status == "bad" and "out of contract" in kubernetes.text, kubernetes


def test_worker_identity_without_needed_verbs_is_refused_and_shown_inactive_with_reason(t3, fleet, tmp_path):
    from tau_tui.screens.multikueue import condition_cells

    worker = t3.worker(t3.worker_names[0])
    identity, cluster = "tau-mk-noverbs", "tau-noverbs"
    rbac = k8s.RbacAuthorizationV1Api(worker.api_client())
    # Every verb of worker-rbac.yaml except `watch` on workloads.
    rules = [{**rule, "verbs": [v for v in rule["verbs"] if not ("workloads" in rule["resources"] and v == "watch")]}
             for rule in harness_multikueue.worker_cluster_role_rules()]
    rbac.create_cluster_role({"metadata": {"name": identity}, "rules": rules})
    harness_multikueue.ensure_service_account(worker, identity)
    harness_multikueue.grant_cluster_role(worker, identity, identity)
    credential = mint_worker_credential(worker, service_account=identity)
    path = write_kubeconfig(tmp_path / "noverbs.kubeconfig", yaml.safe_load(credential.kubeconfig()))
    plan = MultiKueuePlan(**{**fleet["plan"].__dict__, "workers": (WorkerPlan(cluster, kubeconfig=path),)})
    access = BackendAccess(fleet["backend"], "manager")
    try:
        # the wizard refuses to store it, naming the verb
        first = exercise(fleet, "setup", tmp_path, plan=plan, record=False).survey()[0]
        assert first.state is StepState.REFUSED, first
        assert "lacks verbs Kueue needs" in first.check.reason and "watch workloads.kueue.x-k8s.io" in first.check.reason
        # registered anyway, by hand: Kueue turns it Active=False and the pane shows Kueue's reason
        harness_multikueue.add_cluster(t3.manager, cluster, credential)
        deadline, active = time.monotonic() + TIMEOUT, None
        while time.monotonic() < deadline:
            view = multikueue_cluster_view(access.get(R.MULTIKUEUE_CLUSTER.type, cluster) or {"metadata": {"name": cluster}})
            active = view.condition("Active")
            if active is not None and active.status == "False":
                break
            time.sleep(1)
        assert active is not None and active.status == "False", active
        assert active.reason == "ClientConnectionFailed"
        assert (f'User "system:serviceaccount:kueue-system:{identity}" cannot watch resource "workloads" '
                f'in API group "kueue.x-k8s.io" at the cluster scope') in active.message
        shown = [cell.plain for cell in condition_cells(active)]
        assert "Active=False" in shown[0] and shown[1] == "ClientConnectionFailed" and "cannot watch" in shown[2], shown
    finally:
        harness_multikueue.remove_cluster(t3.manager, cluster)
        harness_multikueue.revoke_worker_credential(worker, credential)
        rbac.delete_cluster_role_binding(f"{identity}-crb")
        rbac.delete_cluster_role(identity)


def test_rotation_replaces_the_secret_and_the_old_credential_stops_working(t3, fleet, tmp_path):
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    name = t3.worker_names[0]
    access = BackendAccess(fleet["backend"], "manager")
    try:
        enable(t3, fleet, tmp_path)
        old = remember_stored(access, f"tau-{name}")
        new = mint_worker_credential(t3.worker(name))
        path = write_kubeconfig(tmp_path / "new.kubeconfig", yaml.safe_load(new.kubeconfig()))
        rotation = exercise(fleet, "rotate", tmp_path, vault=CredentialVault("t3"),
                            inputs={"worker": f"tau-{name}", "new_kubeconfig": path})
        assert rotation.run(YES, timeout=TIMEOUT) is Outcome.VERIFIED, reasons(rotation)
    finally:
        keyring.set_keyring(previous)
    stored = remember_stored(access, f"tau-{name}")
    assert stored.kubeconfig != old.kubeconfig
    assert active_status(access, f"tau-{name}") == "True"
    with pytest.raises(AccessError) as err:
        fleet["connector"].connect(old).whoami()
    assert err.value.code == 401
    record = json.loads(sorted((tmp_path / "records").glob("*rotate*.json"))[-1].read_text())
    assert record["outcome"] == "verified"
    evidence = [e for s in record["steps"] for e in s["evidence"]]
    assert any(stored.fingerprint in e for e in evidence), evidence  # the Secret holds the new credential
    assert any(old.fingerprint in e and "401" in e for e in evidence), evidence  # the old one is rejected


def test_readiness_follows_worker_outages(t3, fleet, tmp_path):
    from tau_tui.screens.multikueue import condition_cells

    enable(t3, fleet, tmp_path)
    access = BackendAccess(fleet["backend"], "manager")

    def pane_cells(cluster: str) -> list[str]:
        """The Active cells the MultiKueue pane shows for MultiKueueCluster ``cluster``."""
        view = multikueue_cluster_view(access.get(R.MULTIKUEUE_CLUSTER.type, cluster) or {"metadata": {"name": cluster}})
        return [cell.plain for cell in condition_cells(view.condition("Active"))]

    def wait(predicate, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(1)
        raise AssertionError(what)

    one = t3.worker_names[0]
    t3.stop_worker_apiserver(one)
    try:
        wait(lambda: active_status(access, f"tau-{one}") == "False", f"tau-{one} inactive")
        shown = pane_cells(f"tau-{one}")
        assert "Active=False" in shown[0] and shown[1] == "ClientConnectionFailed", shown
        # the other worker keeps MultiKueue ready: the seed's rule over the raw objects, and TauCluster's condition
        wait(lambda: readiness(t3, fleet) == (True, "True"), "MultiKueueReady True with one worker down")
        for name in t3.worker_names[1:]:
            t3.stop_worker_apiserver(name)
        wait(lambda: readiness(t3, fleet) == (False, "False"), "MultiKueueReady False with both workers down")
        down = tau_cluster_ready(t3)
        assert down["reason"] == "PrerequisitesNotReady" and down["message"], down
    finally:
        for name in t3.worker_names:
            t3.start_worker_apiserver(name)
    wait(lambda: readiness(t3, fleet) == (True, "True"), "MultiKueueReady True again")
    # Kueue retries a lost worker after 5 s, 10 s, 20 s ... up to ~320 s; the bound covers the longest wait.
    wait(lambda: all(active_status(access, f"tau-{n}") == "True" for n in t3.worker_names), "both workers Active again",
         timeout=RECONNECT_TIMEOUT)
    assert all("Active=True" in pane_cells(f"tau-{n}")[0] for n in t3.worker_names)
    # Left as found for the tests after this one: the ClusterQueue Active again, so TauGrid's status
    # (republished every second) has every workload profile Ready; on a loaded machine this lags the workers.
    wait(lambda: profiles_ready(t3), "every workload profile Ready again", timeout=RECONNECT_TIMEOUT)


def test_no_credential_in_any_file_the_app_wrote(t3, fleet, tmp_path, tmp_path_factory, capsys):
    """Runs last: the CLI once more (status, records), then scans records, the audit log and every
    file under the app's XDG directories for any credential this module minted or stored."""
    from tau_tui import cli

    plan = fleet["plan"]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump({
        "workers": [{"name": w.name, "context": w.context, "adminContext": w.admin_context} for w in plan.workers],
        "namespaces": list(plan.namespaces), "admissionCheck": plan.admission_check, "config": plan.config,
        "clusterQueue": plan.cluster_queue, "localQueue": plan.local_queue, "profile": plan.profile,
        "flavor": plan.flavor, "gpusPerWorker": plan.gpus_per_worker}))
    manager_context = fleet["backend"].current_context
    assert cli.main(["multikueue", "status", "--plan", str(plan_file), "--kubeconfig", fleet["kubeconfig"],
                     "--context", manager_context]) == 0
    assert cli.main(["multikueue", "records"]) == 0
    printed = capsys.readouterr()
    secrets = {s for s in CREDENTIAL_BYTES if s}
    assert len(secrets) >= 8  # tokens of every credential, and what the manager's Secrets held
    written = [p for p in (fleet["root"] / "app").rglob("*") if p.is_file()]
    written += [p for p in tmp_path_factory.getbasetemp().rglob("*") if p.is_file() and "records" in p.parts]
    assert any(p.suffix == ".json" for p in written) and any(p.suffix == ".md" for p in written), written
    leaks = [str(p) for p in written if any(secret in p.read_text(errors="replace") for secret in secrets)]
    assert leaks == []
    assert not any(secret in printed.out or secret in printed.err for secret in secrets)
