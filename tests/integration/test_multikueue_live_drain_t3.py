"""T3, #32 defect 8: a platform owner enables MultiKueue, drains it while a run is live on a
worker, and enables it again, on a real manager and two workers that run pods, everything through
`tau-tui` as a subprocess (the `t3` fixture of tests/harness).

The story, in one test, in the order an owner works:

1. enable from nothing: `tau-tui multikueue setup --plan PLAN --yes` (the plan names each worker's
   least-privilege context and the owner's adminContext);
2. `tau-tui submit tau.yaml`: the run is placed on a worker and its pod Running on that worker's
   KWOK node (the harness keeps tau-tui runs Running until deleted; the test holds the pod with a
   finalizer of its own, so it decides when the pod goes);
3. `drain --timeout 20` while it runs: step 1 removes tenant authorization (a new `tau-tui submit`
   is refused), step 2's HoldAndDrain evicts the run (its Job goes from the worker, its pod is
   terminating) and does not verify while the evicted Workload lives, naming the owner to cancel:
   exit 4; the credentials are not revoked (the Secrets stay, the credential still answers 200;
   step 5's own refusal is not reachable through the CLI while the run lives, because step 3 waits
   for the same remote work and steps run in order);
4. `drain --cancel-pending`: the owner is cancelled, step 2 verifies; step 3 waits for the pod
   still terminating on the worker (`multikueue status` names it); during step 3 the other
   worker's kube-apiserver is killed and the pod released: step 3 is not verified, naming the
   unreachable worker: exit 4;
5. the worker back, `drain` again: step 3 verifies on both workers directly, step 4 removes the
   profile and wiring, step 5 revokes both credentials with the adminContexts (each rejected, 401):
   exit 0; checked directly on both workers;
6. `setup` with the revoked credentials is refused (401); with freshly minted credentials it
   verifies, and a new run is dispatched again; a last drain cleans up.

The exercise records (`tau-tui multikueue records --json` and the record files) list each step with
its evidence. No TauGrid controller runs in the harness: `tests/harness/taugrid_status.py` writes
TauCluster status (MultiKueueReady from the seed's rule, computed from the raw objects, and the
resolved profiles) in a background thread while the CLI runs."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.harness.multikueue import WorkerCredential, install_priority_classes, mint_worker_credential
from tests.harness.taugrid_status import StatusWriter
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.harness, pytest.mark.t3]

NAMESPACE = "taugrid-default"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TAU = ("tau.azure.com", "v1alpha1")
PROFILE = "azure.research.multicluster.live"
QUEUE = "live-mk"
CLUSTER_QUEUE = "live-mk-cq"
CHECK = "live-mk"
WORKER_QUEUE = "multikueue-worker"  # the workers' own ClusterQueue (manifests/multikueue/worker.yaml)
FLAVOR = "taugrid-h100-80gb"
PRIORITY = "taugrid-default"
#: The test's own hold on the run's pod on its worker (KWOK deletes a pod only once it has no finalizers).
HOLD = "tau-tui.test/hold-pod"
CLI_TIMEOUT = 420.0
WAIT = 180.0
EXIT_OK, EXIT_REFUSED, EXIT_NOT_VERIFIED = 0, 3, 4


@dataclass
class Owner:
    """The platform owner's side: kubeconfig contexts, the plan, the app's directories."""

    t3: object
    root: Path
    kubeconfig: str
    plan_file: Path
    env: dict[str, str]
    workers: dict[str, object]  # MultiKueueCluster name -> worker ControlPlane
    credentials: dict[str, WorkerCredential] = field(default_factory=dict)
    transcript: list[str] = field(default_factory=list)

    def worker_api(self, cluster: str) -> k8s.ApiClient:
        return self.workers[cluster].api_client()


def cluster_name(worker_name: str) -> str:
    return f"live-{worker_name}"


def write_private(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def least_privilege_context(owner_root: Path, cluster: str, credential: WorkerCredential) -> Path:
    """The worker credential as the owner keeps it: a kubeconfig context named after the
    MultiKueueCluster (cluster, user and context renamed so several files merge)."""
    doc = yaml.safe_load(credential.kubeconfig())
    doc["clusters"][0]["name"] = doc["users"][0]["name"] = doc["contexts"][0]["name"] = cluster
    doc["contexts"][0]["context"] = {"cluster": cluster, "user": cluster}
    doc["current-context"] = cluster
    return write_private(owner_root / f"{cluster}.kubeconfig", yaml.safe_dump(doc))


def mint(owner: Owner, cluster: str) -> WorkerCredential:
    """A fresh least-privilege credential for `cluster`, written into the owner's context of that name."""
    credential = mint_worker_credential(owner.workers[cluster])
    least_privilege_context(owner.root, cluster, credential)
    owner.credentials[cluster] = credential
    return credential


def create_ok(create) -> None:
    try:
        create()
    except ApiException as err:
        if err.status != 409:
            raise


def prepare_worker_queue(api: k8s.ApiClient) -> None:
    """What the owner provides on a worker: the dedicated LocalQueue in the tenant namespace,
    backed by the worker's own quota."""
    create_ok(lambda: k8s.CustomObjectsApi(api).create_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": WORKER_QUEUE}}))


def ensure_tau_cluster(api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    create_ok(lambda: custom.create_cluster_custom_object(*TAU, "clusters", {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster", "metadata": {"name": "cluster"},
        "spec": {"workloadProfiles": []}}))


def remove_owner_objects(owner: Owner) -> None:
    """After a failure: what this module made on the manager goes, so later modules start clean."""
    api = owner.t3.manager.api_client()
    custom, core, batch = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api), k8s.BatchV1Api(api)

    def gone(delete) -> None:
        try:
            delete()
        except ApiException as err:
            if err.status != 404:
                raise

    for job in batch.list_namespaced_job(NAMESPACE).items:
        if job.metadata.name.startswith("live-"):
            gone(lambda j=job: batch.delete_namespaced_job(j.metadata.name, NAMESPACE, propagation_policy="Background"))
    tc = custom.get_cluster_custom_object(*TAU, "clusters", "cluster")
    profiles = [p for p in (tc.get("spec") or {}).get("workloadProfiles") or () if p.get("name") != PROFILE]
    custom.patch_cluster_custom_object(*TAU, "clusters", "cluster", {"spec": {"workloadProfiles": profiles}})
    gone(lambda: custom.delete_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues", QUEUE))
    gone(lambda: custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", CLUSTER_QUEUE))
    gone(lambda: custom.delete_cluster_custom_object(*KUEUE, "admissionchecks", CHECK))
    gone(lambda: custom.delete_cluster_custom_object(*KUEUE, "multikueueconfigs", CHECK))
    for cluster in owner.workers:
        gone(lambda c=cluster: custom.delete_cluster_custom_object(*KUEUE, "multikueueclusters", c))
        gone(lambda c=cluster: core.delete_namespaced_secret(f"{c}-kubeconfig", KUEUE_NAMESPACE))


@pytest.fixture(scope="module")
def owner(t3, tmp_path_factory):
    root = tmp_path_factory.mktemp("mk-live")
    # Setup from nothing: the harness's own MultiKueue wiring (its smoke tests') leaves the manager.
    t3.remove_smoke_wiring()
    workers = {cluster_name(name): t3.worker(name) for name in t3.worker_names}
    for plane in (t3.manager, *workers.values()):
        install_priority_classes(plane, PRIORITY)
    for worker in workers.values():
        prepare_worker_queue(worker.api_client())
    ensure_tau_cluster(t3.manager.api_client())
    # A module fixture: tests/conftest.py's per-test environment is not in place yet, so the CLIs get
    # the file key store (no keyring here) and the fail keyring explicitly.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TAU_TUI_ALLOW_FILE_KEY_STORE": "1",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env[var] = str(root / "app" / var.lower())
    files = [t3.manager.kubeconfig, *(w.kubeconfig for w in t3.workers)]
    files += [str(root / f"{cluster}.kubeconfig") for cluster in workers]
    env["KUBECONFIG"] = ":".join(files)
    plan_file = root / "plan.yaml"
    plan_file.write_text(yaml.safe_dump({
        "workers": [{"name": cluster, "context": cluster, "adminContext": worker.name} for cluster, worker in workers.items()],
        "namespaces": [NAMESPACE], "admissionCheck": CHECK, "config": CHECK, "clusterQueue": CLUSTER_QUEUE,
        "localQueue": QUEUE, "profile": PROFILE, "flavor": FLAVOR, "gpuQuota": 16, "gpusPerWorker": 1,
        "priorityClass": PRIORITY}, sort_keys=False))
    who = Owner(t3=t3, root=root, kubeconfig=env["KUBECONFIG"], plan_file=plan_file, env=env, workers=workers)
    for cluster in workers:
        mint(who, cluster)
    writer = StatusWriter(k8s_config.new_client_from_config(config_file=t3.manager.kubeconfig))
    try:
        with writer.running():
            yield who
    finally:
        for name in t3.worker_names:  # a failure may have left a worker's apiserver down
            if not t3.worker(name).apiserver.running():
                t3.start_worker_apiserver(name)
        remove_owner_objects(who)
        t3.restore_smoke_wiring()


# ----- the owner's commands ---------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def __str__(self) -> str:
        return f"$ tau-tui {' '.join(self.args)}\nexit {self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def mk_args(owner: Owner, action: str, *extra: str) -> list[str]:
    return ["multikueue", action, "--plan", str(owner.plan_file), "--kubeconfig", owner.kubeconfig,
            "--context", "manager", *extra]


def tau_tui(owner: Owner, *args: str, timeout: float = CLI_TIMEOUT) -> Run:
    proc = subprocess.run([sys.executable, "-m", "tau_tui", *args], capture_output=True, text=True,
                          env=owner.env, timeout=timeout, cwd=owner.root)
    run = Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)
    owner.transcript.append(str(run))
    return run


class Background:
    """`tau-tui` as a subprocess whose stdout lines are read while it runs."""

    def __init__(self, owner: Owner, *args: str):
        self.owner, self.args = owner, args
        self.proc = subprocess.Popen([sys.executable, "-m", "tau_tui", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=owner.env, cwd=owner.root)
        self.lines: queue.Queue[str] = queue.Queue()
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout or ()], daemon=True),
                        threading.Thread(target=lambda: self.err.extend(self.proc.stderr or ()), daemon=True)]
        for reader in self.readers:
            reader.start()

    def wait_for_line(self, predicate, what: str, timeout: float = WAIT) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.out.append(line)
            if predicate(line):
                return line
        raise AssertionError(f"tau-tui {' '.join(self.args)} never printed {what}; exit {self.proc.poll()}; "
                             f"stdout so far:\n{''.join(self.out)}\nstderr:\n{''.join(self.err)}")

    def finish(self, timeout: float = CLI_TIMEOUT) -> Run:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for reader in self.readers:
            reader.join(timeout=30)
        while not self.lines.empty():
            self.out.append(self.lines.get_nowait())
        run = Run(tuple(self.args), self.proc.returncode, "".join(self.out), "".join(self.err))
        self.owner.transcript.append(str(run))
        return run


# ----- what the test reads directly ---------------------------------------------------------------
def manager_workloads(owner: Owner, job: str) -> list[dict]:
    items = k8s.CustomObjectsApi(owner.t3.manager.api_client()).list_namespaced_custom_object(
        *KUEUE, NAMESPACE, "workloads")["items"]
    return [w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or ())]


def condition(obj: dict, cond_type: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == cond_type), {})


def worker_pods(owner: Owner, cluster: str, job: str) -> list[k8s.V1Pod]:
    return k8s.CoreV1Api(owner.worker_api(cluster)).list_namespaced_pod(NAMESPACE, label_selector=f"job-name={job}").items


def worker_jobs(owner: Owner, cluster: str, job: str) -> list[str]:
    jobs = k8s.BatchV1Api(owner.worker_api(cluster)).list_namespaced_job(NAMESPACE).items
    return [j.metadata.name for j in jobs if j.metadata.name == job]


def dispatched_left(owner: Owner, cluster: str) -> list[str]:
    """Jobs, Workloads and pods of tau-tui runs still on a worker, read there with the admin client."""
    api = owner.worker_api(cluster)
    left = [f"Job {j.metadata.name}" for j in k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items
            if j.metadata.name.startswith("live-")]
    left += [f"Pod {p.metadata.name}" for p in k8s.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
             if (p.metadata.labels or {}).get("job-name", "").startswith("live-")]
    left += [f"Workload {w['metadata']['name']}" for w in k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        *KUEUE, NAMESPACE, "workloads")["items"]
        if any(o.get("name", "").startswith("live-") for o in w["metadata"].get("ownerReferences") or ())]
    return left


def hold(owner: Owner, cluster: str, job: str) -> str:
    core = k8s.CoreV1Api(owner.worker_api(cluster))
    [pod] = worker_pods(owner, cluster, job)
    core.patch_namespaced_pod(pod.metadata.name, NAMESPACE, {"metadata": {"finalizers": [HOLD]}},
                              _content_type="application/strategic-merge-patch+json")
    return pod.metadata.name


def release(owner: Owner, cluster: str, job: str) -> None:
    core = k8s.CoreV1Api(owner.worker_api(cluster))
    for pod in worker_pods(owner, cluster, job):
        if HOLD in (pod.metadata.finalizers or ()):
            core.patch_namespaced_pod(pod.metadata.name, NAMESPACE, {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}},
                                      _content_type="application/strategic-merge-patch+json")


def secret_exists(owner: Owner, cluster: str) -> bool:
    try:
        k8s.CoreV1Api(owner.t3.manager.api_client()).read_namespaced_secret(f"{cluster}-kubeconfig", KUEUE_NAMESPACE)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def write_run(owner: Owner, name: str) -> Path:
    folder = owner.root / name
    folder.mkdir(exist_ok=True)
    (folder / "train.py").write_text("print('training on a worker')\n")
    (folder / "tau.yaml").write_text(textwrap.dedent(f"""\
        name: {name}
        image: python:3.12-slim
        entrypoint: train.py
        policy:
          namespace: {NAMESPACE}
          team: research
          profile: {PROFILE}
        """))
    return folder / "tau.yaml"


def submit_running(owner: Owner, name: str) -> tuple[str, str]:
    """`tau-tui submit` a run; wait until it is placed on a worker and its pod Running on that
    worker's KWOK node. Returns (MultiKueueCluster, pod)."""
    submitted = tau_tui(owner, "submit", str(write_run(owner, name)), "--context", "manager")
    assert submitted.rc == EXIT_OK, submitted
    assert f"Job {NAMESPACE}/{name}" in submitted.text or name in submitted.out, submitted
    placed = wait_for(lambda: next((w["status"]["clusterName"] for w in manager_workloads(owner, name)
                                    if (w.get("status") or {}).get("clusterName")), None),
                      f"run {name} placed on a worker", WAIT)
    assert placed in owner.workers, placed
    pod = wait_for(lambda: next((p for p in worker_pods(owner, placed, name) if p.status.phase == "Running"), None),
                   f"a Running pod of {name} on {placed}", WAIT)
    assert pod.spec.node_name in owner.workers[placed].gpu_nodes, pod.spec.node_name
    return placed, pod.metadata.name


def survey_line(run: Run, number: int) -> tuple[str, str]:
    """(mark, reason) of step `number` in the survey a `multikueue` command prints last."""
    lines = run.out.splitlines()
    found = [i for i, line in enumerate(lines) if re.match(rf"\s*[✓▶○✗?⚠]\s+{number}\. ", line)]
    assert found, run
    i = found[-1]
    reason = lines[i + 1].strip() if i + 1 < len(lines) and not re.match(r"\s*[✓▶○✗?⚠]\s+\d\. ", lines[i + 1]) else ""
    return lines[i].strip()[0], reason


def records(owner: Owner) -> list[dict]:
    listed = tau_tui(owner, "multikueue", "records", "--json")
    assert listed.rc == EXIT_OK, listed
    return [json.loads(line) for line in listed.out.splitlines() if line.strip()]


def record_file(path: str) -> dict:
    return json.loads(Path(path).read_text())


def steps_of(record: dict, prefix: str) -> list[dict]:
    """The record's entries for the step whose title starts with `prefix` ("3." ...)."""
    return [s for s in record["steps"] if s["title"].startswith(prefix)]


def evidence(entries: list[dict]) -> str:
    return "\n".join(line for s in entries for line in [s.get("reason") or "", *s["evidence"], *s.get("applied", [])])


# ----- the exercise -------------------------------------------------------------------------------
def test_live_drain_through_the_cli_with_a_worker_outage_then_reenable(owner):
    try:
        exercise(owner)
    except BaseException:
        print("\n\n".join(owner.transcript[-12:]))  # the owner's last commands and what they printed
        raise
    finally:
        for cluster in owner.workers:
            release_all(owner, cluster)


def release_all(owner: Owner, cluster: str) -> None:
    try:
        core = k8s.CoreV1Api(owner.worker_api(cluster))
        for pod in core.list_namespaced_pod(NAMESPACE).items:
            if HOLD in (pod.metadata.finalizers or ()):
                core.patch_namespaced_pod(pod.metadata.name, NAMESPACE, {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}},
                                          _content_type="application/strategic-merge-patch+json")
    except Exception:  # noqa: BLE001  (best effort after a failure; the apiserver may be down)
        pass


def exercise(owner: Owner) -> None:
    t3 = owner.t3
    clusters = list(owner.workers)

    # 1. Enable from nothing.
    setup = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "180"))
    assert setup.rc == EXIT_OK, setup
    assert "setup" in setup.out and ": verified" in setup.out, setup
    first_fingerprints = {c: fingerprint_in(owner, c) for c in clusters}
    status = tau_tui(owner, *mk_args(owner, "status"))
    assert status.rc == EXIT_OK, status

    # 2. A run, live on a worker.
    running_on, pod = submit_running(owner, "live-train")
    other = next(c for c in clusters if c != running_on)
    hold(owner, running_on, "live-train")

    # 3. Drain while it runs, with a short deadline: step 2 evicts it and names the owner to cancel.
    first = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--timeout", "20"))
    assert first.rc == EXIT_NOT_VERIFIED, first
    assert "live-train" in first.out, first  # the owner to cancel is named
    assert "cancel" in first.out, first
    evicted = wait_for(lambda: next((w for w in manager_workloads(owner, "live-train")
                                     if condition(w, "Evicted").get("status") == "True"), None),
                       "the run's Workload evicted by HoldAndDrain", WAIT)
    assert condition(evicted, "QuotaReserved").get("status") != "True", evicted["status"]
    wait_for(lambda: not worker_jobs(owner, running_on, "live-train"), f"the run's Job gone from {running_on}", WAIT)
    terminating = wait_for(lambda: [p for p in worker_pods(owner, running_on, "live-train") if p.metadata.deletion_timestamp],
                           f"the run's pod on {running_on} deleted (held by the test's finalizer)", WAIT)
    assert [p.metadata.name for p in terminating] == [pod]
    # Tenant authorization is gone: a new submission through the profile is refused.
    refused = tau_tui(owner, "submit", str(write_run(owner, "live-late")), "--context", "manager")
    assert refused.rc != EXIT_OK and PROFILE in refused.text, refused
    # Nothing was revoked while the run lives: the Secrets stay and the credentials still work.
    assert all(secret_exists(owner, c) for c in clusters)
    assert all(owner.credentials[c].probe() == 200 for c in clusters)

    # 4. Cancel the pending owner; kill the other worker's apiserver during step 3.
    drain = Background(owner, *mk_args(owner, "drain", "--yes", "--cancel-pending", "--timeout", "45"))
    try:
        drain.wait_for_line(lambda line: line.startswith("3."), "step 3's preview")
        waiting = tau_tui(owner, *mk_args(owner, "status", "--flow", "drain"))
        assert waiting.rc == EXIT_NOT_VERIFIED, waiting
        assert pod in waiting.out and running_on in waiting.out, waiting  # the terminating pod, checked directly
        t3.stop_worker_apiserver(other.removeprefix("live-"))
        release(owner, running_on, "live-train")
        wait_for(lambda: not worker_pods(owner, running_on, "live-train"), f"the run's pod gone from {running_on}", WAIT)
    finally:
        outage = drain.finish()
    assert outage.rc == EXIT_NOT_VERIFIED, outage
    mark, reason = survey_line(outage, 3)
    assert mark != "✓" and other in reason, outage  # step 3 is not verified and names the unreachable worker
    assert not manager_workloads(owner, "live-train")  # cancelled: the owner and its Workload are gone
    assert all(secret_exists(owner, c) for c in clusters)

    # 5. The worker back: the drain finishes, checked directly on both workers, credentials revoked.
    t3.start_worker_apiserver(other.removeprefix("live-"))
    done = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--timeout", "180"))
    assert done.rc == EXIT_OK, done
    assert {c: dispatched_left(owner, c) for c in clusters} == {c: [] for c in clusters}
    assert not any(secret_exists(owner, c) for c in clusters)
    assert all(owner.credentials[c].probe() == 401 for c in clusters)
    revoked = dict(owner.credentials)
    drained = tau_tui(owner, *mk_args(owner, "status"))
    assert drained.rc == EXIT_OK and "drain" in drained.out, drained  # the flow in force: the drain, verified

    # 6. Re-enable: the revoked credentials are refused; freshly minted ones verify; a run dispatches again.
    stale = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "60"))
    assert stale.rc == EXIT_REFUSED, stale
    assert "401" in stale.text or "Unauthorized" in stale.text, stale
    for cluster in clusters:
        mint(owner, cluster)
    again = tau_tui(owner, *mk_args(owner, "setup", "--yes", "--timeout", "180"))
    assert again.rc == EXIT_OK, again
    fresh_fingerprints = {c: fingerprint_in(owner, c) for c in clusters}
    assert all(fresh_fingerprints[c] != first_fingerprints[c] for c in clusters), (first_fingerprints, fresh_fingerprints)
    assert all(revoked[c].probe() == 401 for c in clusters)
    submit_running(owner, "live-train-2")
    last = tau_tui(owner, *mk_args(owner, "drain", "--yes", "--cancel-pending", "--timeout", "180"))
    assert last.rc == EXIT_OK, last
    assert {c: dispatched_left(owner, c) for c in clusters} == {c: [] for c in clusters}

    check_records(owner, clusters, running_on, other, first_fingerprints, fresh_fingerprints)


def fingerprint_in(owner: Owner, cluster: str) -> str:
    secret = k8s.CoreV1Api(owner.t3.manager.api_client()).read_namespaced_secret(f"{cluster}-kubeconfig", KUEUE_NAMESPACE)
    fingerprint = (secret.metadata.annotations or {}).get("tau.azure.com/credential-fingerprint")
    assert fingerprint and fingerprint.startswith("sha256:"), secret.metadata.annotations
    return fingerprint


def check_records(owner: Owner, clusters: list[str], running_on: str, other: str,
                  first_fingerprints: dict[str, str], fresh_fingerprints: dict[str, str]) -> None:
    listed = records(owner)
    assert [(r["flow"], r["outcome"]) for r in listed] == [
        ("setup", "verified"), ("drain", "verified"), ("setup", "verified"), ("drain", "verified")], listed
    setup, drain, reenable, last = (record_file(r["path"]) for r in listed)
    for record in (setup, drain, reenable, last):
        assert record["identity"] and record["finished"], record
        assert all(s["evidence"] or s["reason"] for s in record["steps"]), record["steps"]
    # setup: each worker's credential by fingerprint, the matrix per worker, MultiKueueReady.
    for fingerprints, record in ((first_fingerprints, setup), (fresh_fingerprints, reenable)):
        text = evidence(record["steps"])
        assert all(fingerprints[c] in text for c in clusters), text
        assert all(c in evidence(steps_of(record, "5.")) for c in clusters), record["steps"]
        assert "MultiKueueReady=True" in text, text
    # the refused re-enable with the revoked credentials is in the same record, before it verified
    assert any(s["result"] == "refused" and ("401" in s["reason"] or "Unauthorized" in s["reason"])
               for s in reenable["steps"]), reenable["steps"]
    # drain: resumed twice; each step with its evidence
    assert len(drain.get("resumed") or ()) == 2, drain
    step1, step2, step3, step4, step5 = (steps_of(drain, f"{n}.") for n in range(1, 6))
    assert PROFILE in evidence(step1) and QUEUE in evidence(step1), step1  # the objects seen
    assert any(s["result"] == "not verified" and "live-train" in s["reason"] for s in step2), step2
    assert any(s["result"] in ("verified", "already verified") for s in step2), step2
    assert CLUSTER_QUEUE in evidence(step2) and "0" in evidence(step2), step2  # the counts
    assert any(s["result"] == "not verified" and other in s["reason"] for s in step3), step3
    verified3 = [s for s in step3 if s["result"] in ("verified", "already verified")]
    assert verified3 and all(c in evidence(verified3) for c in clusters), step3  # both workers, directly
    assert CHECK in evidence(step4) and CLUSTER_QUEUE in evidence(step4), step4
    revoked = [s for s in step5 if s["result"] == "verified"]
    assert revoked, step5
    for cluster in clusters:
        assert first_fingerprints[cluster] in evidence(revoked), revoked
        assert any(first_fingerprints[cluster] in line and "401" in line for line in revoked[0]["evidence"]), revoked
    assert running_on in evidence(drain["steps"]), drain["steps"]
    # the 401 of each revoked credential, kept in the record with its time
    proofs = {e["worker"]: e for e in drain.get("revocations") or ()}
    assert set(proofs) == set(clusters), drain.get("revocations")
    for cluster in clusters:
        assert proofs[cluster]["fingerprint"] == first_fingerprints[cluster], proofs
        assert proofs[cluster]["http_status"] == 401 and proofs[cluster]["proven_at"], proofs
    assert "401" in evidence(steps_of(last, "5.")), last["steps"]
    assert {e["worker"]: (e["fingerprint"], e["http_status"]) for e in last.get("revocations") or ()} == {
        c: (fresh_fingerprints[c], 401) for c in clusters}, last.get("revocations")
