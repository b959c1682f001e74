"""Start the harness's T2 control plane and load it with the `large` scenario's shape.

The shape of tau_tui/scenarios/large.yaml (tau_tui/core/sim/generate.py), on a real
kube-apiserver + Kueue + KWOK: 10 namespaces, ResourceFlavors h100/a100, WorkloadPriorityClasses
low/normal/high, 10 ClusterQueues in cohort `all` (the GPU pool split evenly per flavor), 50
LocalQueues, 2,000 KWOK nodes with 8 GPUs each (half h100, half a100), 20,000 Workloads (1, 2, 4
or 8 GPUs per pod, 1, 2 or 4 pods, drawn with the scenario's seed), and, for every Workload that
Kueue admits, its pods bound to nodes of the admitted flavor (KWOK runs them; they never finish).

What Kueue does with them: Workloads are created directly (no Job owns them), so Kueue admits
them itself up to the quota (about 2,000; the rest stay pending, each marked inadmissible once)
and nothing else creates pods: the loader binds the admitted Workloads' pods to nodes. Loading
waits until Kueue has placed every Workload (ClusterQueue status: admitted + pending = all) and
the admitted count has been still for 15 s, so the benchmarks start on a quiet cluster.

Loading is not a result: it reports how long each step took. Requests go in parallel from a
bounded pool of threads over one urllib3 pool to 127.0.0.1 only; 409 (already there) counts as
done, 429/5xx and broken connections are retried a bounded number of times.

Run: .venv/bin/python benchmarks/load_cluster.py [--workloads 20000] [--nodes 2000] [--keep]
  --keep leaves the plane running (prints its kubeconfig) until Ctrl-C, then stops what it started.
Used by benchmarks/side_by_side.py through start_loaded_plane().
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import urllib3
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.binaries import locate  # noqa: E402
from tests.harness.controlplane import ControlPlane  # noqa: E402
from tests.harness.kwok import gpu_node_manifest  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
FLAVORS = ("h100", "a100")
PRIORITIES = {"low": 100, "normal": 1000, "high": 2000}
POOL = 16  # parallel requests
PROGRESS_EVERY = 5_000
# KWOK's pod-complete stage waits this long before it completes a pod: the loaded pods keep running.
KEEP_RUNNING = ("pod-complete.stage.kwok.x-k8s.io/delay", "8760h")
BENCH_NAMESPACE = "aaa-bench"  # sorts first; used by side_by_side.py for the change driver


@dataclass
class Shape:
    workloads: int = 20_000
    local_queues: int = 50
    cluster_queues: int = 10
    nodes: int = 2_000
    gpus_per_node: int = 8
    namespaces: int = 10
    seed: int = 20_000


@dataclass
class LoadReport:
    steps: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    plane_memory_mb: dict[str, dict[str, float]] = field(default_factory=dict)


class Api:
    """Raw JSON over urllib3 with the kubeconfig's client certificate (admin on the harness plane)."""

    def __init__(self, kubeconfig: str, pool: int = POOL):
        doc = yaml.safe_load(Path(kubeconfig).read_text())
        ctx_name = doc.get("current-context")
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
        self.server = cluster["server"]
        if not self.server.startswith("https://127.0.0.1:"):
            raise SystemExit(f"load_cluster: refusing to load {self.server}: only a local harness plane (127.0.0.1)")
        self._dir = tempfile.mkdtemp(prefix="tau-load-")
        paths = {}
        for key, data in (("ca", cluster["certificate-authority-data"]), ("cert", user["client-certificate-data"]),
                          ("key", user["client-key-data"])):
            path = os.path.join(self._dir, key)
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(base64.b64decode(data))
            paths[key] = path
        self.http = urllib3.PoolManager(num_pools=2, maxsize=max(pool, 48), block=True, ca_certs=paths["ca"],
                                        cert_file=paths["cert"], key_file=paths["key"], cert_reqs="CERT_REQUIRED",
                                        retries=False, timeout=urllib3.Timeout(connect=10, read=120))
        self.retries = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.http.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def request(self, method: str, path: str, body: dict | None = None, content_type: str = "application/json",
                ok: tuple[int, ...] = (200, 201)) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        for attempt in range(8):
            try:
                resp = self.http.request(method, self.server + path, body=data, headers=headers)
            except urllib3.exceptions.HTTPError:
                resp = None
            if resp is not None and (resp.status in ok or resp.status == 409 and method == "POST"):
                return json.loads(resp.data) if resp.data else {}
            if resp is not None and resp.status not in (429, 500, 502, 503, 504):
                raise RuntimeError(f"{method} {path}: {resp.status} {resp.data[:300]!r}")
            with self._lock:
                self.retries += 1
            time.sleep(min(5.0, 0.2 * 2 ** attempt))
        raise RuntimeError(f"{method} {path}: still failing after 8 attempts")

    def create(self, path: str, body: dict) -> dict:
        return self.request("POST", path, body)

    def list_all(self, path: str, limit: int = 500):
        cont = ""
        while True:
            page = self.request("GET", f"{path}?limit={limit}" + (f"&continue={cont}" if cont else ""))
            yield from page.get("items", [])
            cont = page.get("metadata", {}).get("continue", "")
            if not cont:
                return

    def parallel(self, calls: list[tuple[str, dict]]) -> None:
        """POST every (path, body); bounded by the pool size, the first failure stops the load.
        A long step says how far it is every PROGRESS_EVERY objects (a 50,000 load takes minutes)."""
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=POOL) as pool:
            for done, _ in enumerate(pool.map(lambda call: self.create(*call), calls), 1):
                if done % PROGRESS_EVERY == 0 and done < len(calls):
                    rate = done / (time.monotonic() - started)
                    print(f"[load]   {done:,} of {len(calls):,} created, {rate:.0f}/s", flush=True)


def _namespaces(shape: Shape) -> list[str]:
    return [f"team-{i:02d}" for i in range(shape.namespaces)]


def workload_manifests(shape: Shape) -> list[tuple[str, dict]]:
    """(namespace, Workload) of the scenario, drawn as generate.py draws its Jobs."""
    rng = random.Random(shape.seed)
    namespaces = _namespaces(shape)
    queues = [(namespaces[q % shape.namespaces], f"lq-{q:02d}") for q in range(shape.local_queues)]
    out = []
    for i in range(shape.workloads):
        ns, queue = queues[i % shape.local_queues]
        gpus = rng.choice((1, 2, 4, 8, 8))
        workers = rng.choice((1, 1, 1, 2, 4))
        prio = rng.choice(("low", "normal", "normal", "high"))
        res = {GPU: str(gpus)}
        out.append((ns, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-{i:05d}", "namespace": ns, "labels": {"tau.azure.com/managed-by": "tau"}},
            "spec": {
                "queueName": queue,
                "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": prio},
                "priority": PRIORITIES[prio],
                "podSets": [{"name": "main", "count": workers, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "trainer", "image": "ghcr.io/azure/tau-train:1.4.2",
                                    "resources": {"requests": res, "limits": res}}]}}}],
            },
        }))
    return out


def _step(report: LoadReport, name: str, fn) -> None:
    started = time.monotonic()
    fn()
    report.steps[name] = time.monotonic() - started
    print(f"[load] {name}: {report.steps[name]:.1f} s", flush=True)


def cluster_queue_counts(api: Api) -> tuple[int, int]:
    admitted = pending = 0
    for cq in api.list_all(f"{KUEUE}/clusterqueues"):
        status = cq.get("status") or {}
        admitted += int(status.get("admittedWorkloads") or 0)
        pending += int(status.get("pendingWorkloads") or 0)
    return admitted, pending


def load(api: Api, shape: Shape, timeout: float = 1800.0, kwok: bool = True) -> LoadReport:
    report = LoadReport()
    namespaces = _namespaces(shape)
    per_flavor_nodes = {FLAVORS[0]: shape.nodes // 2, FLAVORS[1]: shape.nodes - shape.nodes // 2}

    def queues() -> None:
        api.parallel([("/api/v1/namespaces", {"metadata": {"name": ns}}) for ns in [*namespaces, BENCH_NAMESPACE]])
        calls = [(f"{KUEUE}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                               "metadata": {"name": f}, "spec": {"nodeLabels": {"tau.azure.com/gpu-class": f}}})
                 for f in FLAVORS]
        calls += [(f"{KUEUE}/workloadpriorityclasses", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                                        "metadata": {"name": n}, "value": v}) for n, v in PRIORITIES.items()]
        calls.append((f"{KUEUE}/cohorts", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "all"}, "spec": {}}))
        api.parallel(calls)
        calls = []
        for c in range(shape.cluster_queues):
            flavors = [{"name": f, "resources": [{"name": GPU, "nominalQuota": per_flavor_nodes[f] * shape.gpus_per_node // shape.cluster_queues}]}
                       for f in FLAVORS]
            calls.append((f"{KUEUE}/clusterqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": f"cq-{c:02d}"},
                "spec": {"cohortName": "all", "queueingStrategy": "BestEffortFIFO", "namespaceSelector": {},
                         "resourceGroups": [{"coveredResources": [GPU], "flavors": flavors}]}}))
        api.parallel(calls)
        api.parallel([(f"{KUEUE}/namespaces/{namespaces[q % shape.namespaces]}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": f"lq-{q:02d}", "namespace": namespaces[q % shape.namespaces]},
            "spec": {"clusterQueue": f"cq-{q % shape.cluster_queues:02d}"}}) for q in range(shape.local_queues)])
        report.counts.update(namespaces=len(namespaces), cluster_queues=shape.cluster_queues, local_queues=shape.local_queues)

    def nodes() -> None:
        calls = []
        for flavor, count in per_flavor_nodes.items():
            for n in range(count):
                node = gpu_node_manifest(f"{flavor}-{n:04d}")
                node["metadata"]["labels"]["tau.azure.com/gpu-class"] = flavor
                calls.append(("/api/v1/nodes", node))
        api.parallel(calls)
        report.counts["nodes"] = len(calls)

    def nodes_ready() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = sum(1 for n in api.list_all("/api/v1/nodes")
                        if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", [])))
            if ready >= report.counts["nodes"]:
                return
            time.sleep(5)
        raise RuntimeError(f"only {ready} of {report.counts['nodes']} nodes Ready after {timeout:.0f}s")

    def workloads() -> None:
        api.parallel([(f"{KUEUE}/namespaces/{ns}/workloads", body) for ns, body in workload_manifests(shape)])
        report.counts["workloads"] = shape.workloads

    def kueue_settled() -> None:
        deadline = time.monotonic() + timeout
        last, still_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            admitted, pending = cluster_queue_counts(api)
            if admitted != last:
                last, still_since = admitted, time.monotonic()
            if admitted + pending >= shape.workloads and time.monotonic() - still_since >= 15:
                report.counts.update(admitted=admitted, pending=pending)
                return
            time.sleep(3)
        raise RuntimeError(f"Kueue did not settle within {timeout:.0f}s (admitted {last})")

    def pods() -> None:
        free: dict[str, list[list]] = {f: [[f"{f}-{n:04d}", shape.gpus_per_node] for n in range(c)] for f, c in per_flavor_nodes.items()}
        wanted = []  # (gpus, flavor, namespace, workload, pod index)
        for wl in api.list_all(f"{KUEUE}/workloads"):
            admission = (wl.get("status") or {}).get("admission")
            if not admission:
                continue
            podset = wl["spec"]["podSets"][0]
            gpus = int(podset["template"]["spec"]["containers"][0]["resources"]["requests"][GPU])
            flavor = admission["podSetAssignments"][0]["flavors"].get(GPU)
            meta = wl["metadata"]
            wanted += [(gpus, flavor, meta["namespace"], meta["name"], i) for i in range(int(podset["count"]))]
        # First fit, largest first: sizes 1/2/4/8 divide a node's 8 GPUs, so this packs without waste and
        # everything Kueue admitted (within the flavor's total quota) finds a node.
        wanted.sort(key=lambda w: -w[0])
        cursor = {f: 0 for f in FLAVORS}
        calls, unplaced = [], 0
        for gpus, flavor, namespace, name, index in wanted:
            nodes = free[flavor]
            i = cursor[flavor]
            while i < len(nodes) and nodes[i][1] < gpus:
                i += 1
            cursor[flavor] = i
            if i == len(nodes):
                unplaced += 1  # left unbound (Pending), as a scheduler would leave it
                node = None
            else:
                nodes[i][1] -= gpus
                node = nodes[i][0]
            calls.append((f"/api/v1/namespaces/{namespace}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{index}", "namespace": namespace,
                             "labels": {"job-name": name, "kueue.x-k8s.io/podset": "main"},
                             "annotations": {KEEP_RUNNING[0]: KEEP_RUNNING[1]}},
                "spec": {**({"nodeName": node} if node else {}), "restartPolicy": "Never",
                         "automountServiceAccountToken": False,
                         "containers": [{"name": "trainer", "image": "ghcr.io/azure/tau-train:1.4.2",
                                         "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}]},
            }))
        api.parallel(calls)
        report.counts["pods"] = len(calls)
        report.counts["pods_unplaced"] = unplaced

    _step(report, "namespaces, flavors, priority classes, cohort, queues", queues)
    _step(report, f"{shape.nodes} nodes", nodes)
    _step(report, f"{shape.workloads} workloads", workloads)
    if kwok:
        _step(report, "KWOK: nodes Ready", nodes_ready)
    _step(report, "Kueue: every workload placed, admissions still for 15 s", kueue_settled)
    _step(report, "pods of admitted workloads", pods)
    report.retries = api.retries
    return report


def start_plane(state_dir: Path, kwok: bool = True) -> ControlPlane:
    """T2 (KWOK, controller-manager, scheduler); with kwok=False the T1 set only (etcd, apiserver,
    Kueue): nodes are then plain Node objects (never Ready) and pods stay Pending on their node."""
    binaries = locate()
    if os.environ.get("TAU_BENCH_KUBE_APISERVER"):  # a kube-apiserver built elsewhere (same version)
        binaries = dataclasses.replace(binaries, kube_apiserver=Path(os.environ["TAU_BENCH_KUBE_APISERVER"]))
    if not kwok:
        binaries.require("etcd", "kube_apiserver", "kueue")
        plane = ControlPlane("bench", state_dir, binaries)
        plane.start()
        return plane
    binaries.require("etcd", "kube_apiserver", "kueue", "kube_controller_manager", "kube_scheduler", "kwok")
    plane = ControlPlane("bench", state_dir, binaries, workloads_controllers=True)
    # 2,000 nodes renewing a 40 s Lease every 10 s are 200 writes/s on a 2-core machine; every 30 s
    # (a 120 s Lease) is a third of that and still inside the node controller's 50 s grace period.
    plane.kwok_lease_seconds = 120
    plane.start()
    return plane


def plane_memory(plane: ControlPlane) -> dict[str, dict[str, float]]:
    """VmRSS and VmHWM (peak) in MB of each plane component: whether a load fits the machine."""
    out = {}
    for name, pid in plane.pids().items():
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = {ln.split(":")[0]: int(ln.split()[1]) / 1024 for ln in f if ln.startswith(("VmRSS:", "VmHWM:"))}
        except OSError:
            continue
        out[name] = {"rss": fields.get("VmRSS", 0.0), "peak": fields.get("VmHWM", 0.0)}
    return out


def start_loaded_plane(shape: Shape, kwok: bool = True) -> tuple[ControlPlane, Path, LoadReport]:
    state = Path(tempfile.mkdtemp(prefix="tau-bench-t2-"))
    started = time.monotonic()
    plane = start_plane(state, kwok)
    print(f"[load] {'T2' if kwok else 'T1 (no KWOK)'} plane up in {time.monotonic() - started:.1f} s: {plane.server}", flush=True)
    api = Api(plane.kubeconfig)
    try:
        report = load(api, shape, kwok=kwok)
        report.plane_memory_mb = plane_memory(plane)
    except BaseException:
        plane.stop()
        shutil.rmtree(state, ignore_errors=True)
        raise
    finally:
        api.close()
    return plane, state, report


def print_report(report: LoadReport) -> None:
    total = sum(report.steps.values())
    print(f"loaded in {total:.0f} s ({report.retries} retried requests):")
    for name, seconds in report.steps.items():
        print(f"  {name:58s} {seconds:8.1f} s")
    print("  objects: " + ", ".join(f"{k} {v:,}" for k, v in report.counts.items()))
    print("  plane memory (RSS / peak MB): " + ", ".join(f"{name} {m['rss']:.0f} / {m['peak']:.0f}"
                                                         for name, m in report.plane_memory_mb.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--keep", action="store_true", help="leave the plane running until Ctrl-C")
    parser.add_argument("--no-kwok", action="store_true", help="T1 set only: nodes never Ready, pods Pending")
    args = parser.parse_args()
    shape = Shape(workloads=args.workloads, nodes=args.nodes)
    plane, state, report = start_loaded_plane(shape, kwok=not args.no_kwok)
    try:
        print_report(report)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "load_cluster.json").write_text(json.dumps(
            {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "shape": vars(shape),
             "steps_s": report.steps, "counts": report.counts, "retries": report.retries,
             "plane_memory_mb": report.plane_memory_mb}, indent=2))
        if args.keep:
            print(f"kubeconfig: {plane.kubeconfig}\nPIDs: {plane.pids()}\nCtrl-C stops them.", flush=True)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        plane.stop()
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
