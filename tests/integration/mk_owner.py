"""A platform owner driving `tau-tui` as a subprocess against the T3 planes (a manager and two
workers that run pods), for the MultiKueue modules that go through the CLI
(`test_multikueue_live_drain_t3.py`, `test_multikueue_boundary_t3.py`).

What the owner holds (kubeconfig contexts, the plan, the app's own directories) is `Owner`; what the
tests read to check the tool is read with the kubernetes client directly (raw objects), never
through tau-tui's own code."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from tests.harness.controlplane import KUEUE_NAMESPACE
from tests.harness.multikueue import WorkerCredential, install_priority_classes, mint_worker_credential
from tests.harness.taugrid_status import StatusWriter

NAMESPACE = "taugrid-default"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TAU = ("tau.azure.com", "v1alpha1")
WORKER_QUEUE = "multikueue-worker"  # the workers' own ClusterQueue (manifests/multikueue/worker.yaml)
FLAVOR = "taugrid-h100-80gb"
PRIORITY = "taugrid-default"
#: The test's own hold on an object on a worker (KWOK deletes a pod, the GC a Job, only without finalizers).
HOLD = "tau-tui.test/hold-pod"
CLI_TIMEOUT = 420.0
WAIT = 180.0
EXIT_OK, EXIT_REFUSED, EXIT_NOT_VERIFIED = 0, 3, 4
APP_DIRS = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


@dataclass(frozen=True)
class Names:
    """The dedicated names one module's plan uses (each module its own, so modules never share objects)."""

    prefix: str
    profile: str

    @property
    def queue(self) -> str:
        return f"{self.prefix}-mk"

    @property
    def cluster_queue(self) -> str:
        return f"{self.prefix}-mk-cq"

    @property
    def check(self) -> str:
        return f"{self.prefix}-mk"

    def cluster(self, worker_name: str) -> str:
        return f"{self.prefix}-{worker_name}"


@dataclass
class Owner:
    """The platform owner's side: kubeconfig contexts, the plan, the app's directories."""

    t3: object
    names: Names
    root: Path
    kubeconfig: str
    plan_file: Path
    env: dict[str, str]
    workers: dict[str, object]  # MultiKueueCluster name -> worker ControlPlane
    credentials: dict[str, WorkerCredential] = field(default_factory=dict)
    transcript: list[str] = field(default_factory=list)

    def worker_api(self, cluster: str) -> k8s.ApiClient:
        return self.workers[cluster].api_client()

    def manager_api(self) -> k8s.ApiClient:
        return self.t3.manager.api_client()


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


def create_ok(create: Callable[[], object]) -> None:
    try:
        create()
    except ApiException as err:
        if err.status != 409:
            raise


def gone_ok(delete: Callable[[], object]) -> None:
    try:
        delete()
    except ApiException as err:
        if err.status != 404:
            raise


def make_owner(t3, root: Path, names: Names, **plan_extra: object) -> Owner:
    """The owner of a fresh module: the harness's own MultiKueue wiring removed, priority classes, the
    workers' dedicated LocalQueue, TauCluster/cluster, private app directories, a plan, and one
    least-privilege credential per worker."""
    t3.remove_smoke_wiring()
    workers = {names.cluster(name): t3.worker(name) for name in t3.worker_names}
    for plane in (t3.manager, *workers.values()):
        install_priority_classes(plane, PRIORITY)
    for worker in workers.values():
        create_ok(lambda w=worker: k8s.CustomObjectsApi(w.api_client()).create_namespaced_custom_object(
            *KUEUE, NAMESPACE, "localqueues", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                               "metadata": {"name": names.queue, "namespace": NAMESPACE},
                                               "spec": {"clusterQueue": WORKER_QUEUE}}))
    create_ok(lambda: k8s.CustomObjectsApi(t3.manager.api_client()).create_cluster_custom_object(*TAU, "clusters", {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster", "metadata": {"name": "cluster"},
        "spec": {"workloadProfiles": []}}))
    # A module fixture: tests/conftest.py's per-test environment is not in place yet, so the CLIs get
    # the file key store (no keyring here) and the fail keyring explicitly.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TAU_TUI_ALLOW_FILE_KEY_STORE": "1",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    for var in APP_DIRS:
        env[var] = str(root / "app" / var.lower())
    env.pop("TAU_TEAM", None)
    files = [t3.manager.kubeconfig, *(w.kubeconfig for w in t3.workers)]
    files += [str(root / f"{cluster}.kubeconfig") for cluster in workers]
    env["KUBECONFIG"] = ":".join(files)
    plan_file = root / "plan.yaml"
    write_plan(plan_file, names, workers, **plan_extra)
    owner = Owner(t3=t3, names=names, root=root, kubeconfig=env["KUBECONFIG"], plan_file=plan_file, env=env,
                  workers=workers)
    for cluster in workers:
        mint(owner, cluster)
    return owner


@contextmanager
def owner_of_module(t3, root: Path, names: Names, job_prefix: str) -> Iterator[Owner]:
    """The module's owner (:func:`make_owner`) while TauGrid's stand-in publishes status every second; after
    it, every worker's apiserver up again, the test's holds let go, the module's objects removed and the
    harness's own wiring restored."""
    who = make_owner(t3, root, names)
    writer = StatusWriter(k8s_config.new_client_from_config(config_file=t3.manager.kubeconfig))
    try:
        with writer.running():
            yield who
    finally:
        for name in t3.worker_names:  # a failure may have left a worker's apiserver down
            if not t3.worker(name).apiserver.running():
                t3.start_worker_apiserver(name)
        for plane in (t3.manager, *who.workers.values()):
            let_go(plane.api_client())
        remove_owner_objects(who, job_prefix)
        t3.restore_smoke_wiring()


def write_plan(path: Path, names: Names, workers: dict[str, object], **extra: object) -> Path:
    path.write_text(yaml.safe_dump({
        "workers": [{"name": cluster, "context": cluster, "adminContext": worker.name} for cluster, worker in workers.items()],
        "namespaces": [NAMESPACE], "admissionCheck": names.check, "config": names.check,
        "clusterQueue": names.cluster_queue, "localQueue": names.queue, "profile": names.profile, "flavor": FLAVOR,
        "gpuQuota": 16, "gpusPerWorker": 1, "priorityClass": PRIORITY, **extra}, sort_keys=False))
    return path


def remove_owner_objects(owner: Owner, job_prefix: str) -> None:
    """After a module (or a failure): what it made on the manager goes, so later modules start clean."""
    api, names = owner.manager_api(), owner.names
    custom, core, batch = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api), k8s.BatchV1Api(api)
    for job in batch.list_namespaced_job(NAMESPACE).items:
        if job.metadata.name.startswith(job_prefix):
            gone_ok(lambda j=job: batch.delete_namespaced_job(j.metadata.name, NAMESPACE, propagation_policy="Background"))
    tc = custom.get_cluster_custom_object(*TAU, "clusters", "cluster")
    profiles = [p for p in (tc.get("spec") or {}).get("workloadProfiles") or () if p.get("name") != names.profile]
    custom.patch_cluster_custom_object(*TAU, "clusters", "cluster", {"spec": {"workloadProfiles": profiles}})
    gone_ok(lambda: custom.delete_namespaced_custom_object(*KUEUE, NAMESPACE, "localqueues", names.queue))
    gone_ok(lambda: custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", names.cluster_queue))
    gone_ok(lambda: custom.delete_cluster_custom_object(*KUEUE, "admissionchecks", names.check))
    gone_ok(lambda: custom.delete_cluster_custom_object(*KUEUE, "multikueueconfigs", names.check))
    for cluster in owner.workers:
        gone_ok(lambda c=cluster: custom.delete_cluster_custom_object(*KUEUE, "multikueueclusters", c))
        gone_ok(lambda c=cluster: core.delete_namespaced_secret(f"{c}-kubeconfig", KUEUE_NAMESPACE))


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


def mk_args(owner: Owner, action: str, *extra: str, plan: Path | None = None) -> list[str]:
    return ["multikueue", action, "--plan", str(plan or owner.plan_file), "--kubeconfig", owner.kubeconfig,
            "--context", "manager", *extra]


def tau_tui(owner: Owner, *args: str, timeout: float = CLI_TIMEOUT, env: dict[str, str] | None = None) -> Run:
    proc = subprocess.run([sys.executable, "-m", "tau_tui", *args], capture_output=True, text=True,
                          env=env or owner.env, timeout=timeout, cwd=owner.root)
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

    def wait_for_line(self, predicate: Callable[[str], bool], what: str, timeout: float = WAIT) -> str:
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


# ----- what the tests read directly ---------------------------------------------------------------
def condition(obj: dict, cond_type: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == cond_type), {})


def manager_workloads(owner: Owner, job: str) -> list[dict]:
    items = k8s.CustomObjectsApi(owner.manager_api()).list_namespaced_custom_object(*KUEUE, NAMESPACE, "workloads")["items"]
    return [w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or ())]


def worker_pods(owner: Owner, cluster: str, job: str) -> list[k8s.V1Pod]:
    return k8s.CoreV1Api(owner.worker_api(cluster)).list_namespaced_pod(NAMESPACE, label_selector=f"job-name={job}").items


def worker_jobs(owner: Owner, cluster: str, job: str) -> list[k8s.V1Job]:
    return [j for j in k8s.BatchV1Api(owner.worker_api(cluster)).list_namespaced_job(NAMESPACE).items
            if j.metadata.name == job]


def manager_jobs(owner: Owner, job: str) -> list[str]:
    return [j.metadata.name for j in k8s.BatchV1Api(owner.manager_api()).list_namespaced_job(NAMESPACE).items
            if j.metadata.name == job]


def tau_cluster(owner: Owner) -> dict:
    return k8s.CustomObjectsApi(owner.manager_api()).get_cluster_custom_object(*TAU, "clusters", "cluster")


def multikueue_ready_on_tau_cluster(owner: Owner) -> dict:
    """TauCluster/cluster's own MultiKueueReady condition (written by the harness's TauGrid stand-in from the
    seed's rule over the raw objects), with the generation it must be current for."""
    tc = tau_cluster(owner)
    return {**condition(tc, "MultiKueueReady"), "generation": tc["metadata"]["generation"]}


def hold(api: k8s.ApiClient, kind: str, name: str) -> None:
    """Put the test's finalizer on a pod or Job (it then stays, terminating, until `let_go`)."""
    patch = {"metadata": {"finalizers": [HOLD]}}
    kwargs = {"_content_type": "application/strategic-merge-patch+json"}
    if kind == "Pod":
        k8s.CoreV1Api(api).patch_namespaced_pod(name, NAMESPACE, patch, **kwargs)
    else:
        k8s.BatchV1Api(api).patch_namespaced_job(name, NAMESPACE, patch, **kwargs)


def let_go(api: k8s.ApiClient) -> None:
    """Remove the test's finalizer from every pod and Job in the namespace (best effort: a plane may be down)."""
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}}
    kwargs = {"_content_type": "application/strategic-merge-patch+json"}
    try:
        for pod in k8s.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items:
            if HOLD in (pod.metadata.finalizers or ()):
                gone_ok(lambda p=pod: k8s.CoreV1Api(api).patch_namespaced_pod(p.metadata.name, NAMESPACE, patch, **kwargs))
        for job in k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items:
            if HOLD in (job.metadata.finalizers or ()):
                gone_ok(lambda j=job: k8s.BatchV1Api(api).patch_namespaced_job(j.metadata.name, NAMESPACE, patch, **kwargs))
    except Exception:  # noqa: BLE001  (best effort after a failure; the apiserver may be down)
        pass


def write_run(owner: Owner, name: str, *, team: str | None = "research") -> Path:
    """A tenant's tau.yaml for the owner's profile, naming ``team`` (None: no team in the file)."""
    folder = owner.root / name
    folder.mkdir(exist_ok=True)
    (folder / "train.py").write_text("print('training on a worker')\n")
    (folder / "tau.yaml").write_text(textwrap.dedent(f"""\
        name: {name}
        image: python:3.12-slim
        entrypoint: train.py
        policy:
          namespace: {NAMESPACE}
        """) + (f"  team: {team}\n" if team else "") + f"  profile: {owner.names.profile}\n")
    return folder / "tau.yaml"


def survey_line(run: Run, number: int) -> tuple[str, str]:
    """(mark, reason) of step `number` in the survey a `multikueue` command prints last."""
    lines = run.out.splitlines()
    found = [i for i, line in enumerate(lines) if re.match(rf"\s*[✓▶○✗?⚠]\s+{number}\. ", line)]
    assert found, run
    i = found[-1]
    reason = lines[i + 1].strip() if i + 1 < len(lines) and not re.match(r"\s*[✓▶○✗?⚠]\s+\d\. ", lines[i + 1]) else ""
    return lines[i].strip()[0], reason
