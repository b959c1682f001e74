"""A Kubernetes API stand-in on 127.0.0.1 that speaks list and watch for the kinds the queue pane
reads, serves a world generated in memory and changes it at a chosen rate: a watch source that is
not the bottleneck, for event-to-screen staleness at rates a real API server on two cores cannot
take (issue #36).

Served (plain HTTP; any bearer token is accepted):
- discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``,
  ``/apis/<group>/<version>``, ``/healthz``; a SelfSubjectAccessReview (k9s asks one before it
  lists) is allowed; everything else (SelfSubjectReview, the visibility API, kinds not below) is
  404, which the app reads as "not installed";
- Kueue v1beta2 Workloads, LocalQueues, ClusterQueues, ResourceFlavors (generated), Cohorts,
  WorkloadPriorityClasses, AdmissionChecks, MultiKueueConfigs/Clusters, and core v1 Namespaces
  (generated), Nodes, Pods, Events, batch/v1 Jobs (empty), the Kueue kinds'
  CustomResourceDefinitions (generated): GET of one object, and lists, all namespaces or one;
- as a server-side ``meta.k8s.io/v1`` Table where the Accept header asks ``as=Table`` (k9s lists
  custom resources so; lists, pages, one object and watch events, whose object is a Table of one
  row): Workloads with the Kueue CRD's printer columns (benchmarks/watch_source_table.py);
- lists paginated with ``limit`` and ``continue`` over a snapshot taken at the first page (every
  object once, at that page's ``resourceVersion``; a continue token older than CONTINUE_TTL_S, or
  past the snapshots kept, is 410 Expired, as a real server's compacted token is);
- ``?watch=1`` / ``watch=true``: a chunked stream of ADDED/MODIFIED/DELETED events after the given
  ``resourceVersion`` (none or "0": ADDED for every object first), BOOKMARK events every
  ``--bookmark-interval`` seconds when ``allowWatchBookmarks`` is asked, ``timeoutSeconds``; a
  resourceVersion older than the kept history (``--history`` events per kind), or a watcher that
  fell that far behind, gets the real server's answer: an ERROR event with a 410 Status, then the
  end of the stream.

The world: ``--workloads`` Workloads (``job-NNNNN``, 40% admitted, the rest pending) across
``--local-queues`` LocalQueues in ``--namespaces`` namespaces, feeding ``--cluster-queues``
ClusterQueues over two ResourceFlavors; and ``--hot-rows`` pending Workloads ``bench-NN`` in the
namespace ``aaa-bench`` (pending and first by namespace: on screen at the top of the queue pane).

The changer makes ``--rate`` changes/s for ``--duration`` seconds, paced by the clock. A share
``--hot-share`` of them goes round robin to the hot rows and sets ``spec.queueName`` to
``q-<seq>`` (the queue pane's Queue column); the rest go round robin to the other Workloads and
rewrite their QuotaReserved condition's message. Each change is written, once the store holds it
and before any watcher is woken, to ``--changes-out`` as a JSON line: ``seq``, ``row``
(namespace/name), ``name``, ``value``, ``hot``, ``at`` (``time.monotonic()``, one clock for every
process on the machine) and ``wall`` (epoch seconds); benchmarks/staleness.py reads it.

Run:  .venv/bin/python benchmarks/watch_source.py --workloads 20000 --rate 1000 --duration 60 \\
          --kubeconfig-out /tmp/x.kubeconfig --changes-out changes.jsonl [--wait-for-signal]
``--requests-out FILE`` logs each request (method, path, Accept): what a tool asks for.
Prints ``READY <url>`` once it serves; with ``--wait-for-signal`` the changes start on SIGUSR1
(after the tool under test shows its rows).  ``--state FILE`` carries the world across runs (the
soak restarts the source): read at the start when the file exists (the watch history starts above
the last run's versions, so a watch resumed from one is answered 410 and relists), written at the end;
``--seq-start N`` numbers this run's changes on from N.  The objects keep their resourceVersions
across runs (an unchanged one is listed at the version the tool holds).  It stops ``--linger`` seconds after the changes end
(``--max-seconds`` after start at the latest) and prints a JSON summary line.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import socket
import sys
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import watch_source_table as printing  # noqa: E402

KUEUE = ("kueue.x-k8s.io", "v1beta2")
HOT_NAMESPACE = "aaa-bench"
SERVER_VERSION = {"major": "1", "minor": "35", "gitVersion": "v1.35.0-watch-source", "platform": "linux/amd64"}
CONTINUE_TTL_S = 120.0
SNAPSHOTS_KEPT = 64
WATCH_LONGEST_S = 1800.0
CHANGER_TICK_S = 0.002
FLAVORS = ("h100", "a100")


@dataclass
class Kind:
    """One served resource: its objects (encoded once per change) and its event history."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    objects: dict[tuple[str, str], dict] = field(default_factory=dict)
    encoded: dict[tuple[str, str], bytes] = field(default_factory=dict)
    keys: list[tuple[str, str]] = field(default_factory=list)  # sorted
    # (key, includeObject): the encoded object a Table row was printed from, and the row
    table_rows: dict[tuple[tuple[str, str], str], tuple[bytes, bytes]] = field(default_factory=dict)
    event_rvs: list[int] = field(default_factory=list)
    event_namespaces: list[str] = field(default_factory=list)
    event_lines: list[bytes] = field(default_factory=list)
    base: int = 0  # the absolute index of event_lines[0]
    compacted_rv: int = 0  # events at or before it are no longer kept
    changed: threading.Condition | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def resource(self) -> dict:
        return {"name": self.plural, "singularName": self.kind.lower(), "namespaced": self.namespaced, "kind": self.kind,
                "verbs": ["get", "list", "watch"]}


def served_kinds() -> list[Kind]:
    kueue = [("workloads", "Workload", True), ("localqueues", "LocalQueue", True), ("clusterqueues", "ClusterQueue", False),
             ("resourceflavors", "ResourceFlavor", False), ("cohorts", "Cohort", False),
             ("workloadpriorityclasses", "WorkloadPriorityClass", False), ("admissionchecks", "AdmissionCheck", False),
             ("multikueueconfigs", "MultiKueueConfig", False), ("multikueueclusters", "MultiKueueCluster", False)]
    core = [("namespaces", "Namespace", False), ("nodes", "Node", False), ("pods", "Pod", True), ("events", "Event", True)]
    return ([Kind(*KUEUE, plural, kind, namespaced) for plural, kind, namespaced in kueue]
            + [Kind("", "v1", plural, kind, namespaced) for plural, kind, namespaced in core]
            + [Kind("batch", "v1", "jobs", "Job", True),
               Kind("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)])


def kueue_crds() -> list[dict]:
    """The CustomResourceDefinitions of the Kueue kinds served (k9s reads them; the schema is open),
    Workloads' with the printer columns the Table answers use."""
    out = []
    for n, kind in enumerate(k for k in served_kinds() if k.group == KUEUE[0]):
        version: dict[str, Any] = {"name": kind.version, "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        if kind.plural in printing.PRINTER_COLUMNS:
            version["additionalPrinterColumns"] = [dict(c) for c in printing.PRINTER_COLUMNS[kind.plural]]
        out.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": _meta(f"{kind.plural}.{kind.group}", None, n),
                    "spec": {"group": kind.group, "scope": "Namespaced" if kind.namespaced else "Cluster",
                             "names": {"plural": kind.plural, "singular": kind.kind.lower(), "kind": kind.kind,
                                       "listKind": f"{kind.kind}List"},
                             "versions": [version]},
                    "status": {"acceptedNames": {"plural": kind.plural, "kind": kind.kind}, "storedVersions": [kind.version]}})
    return out


# ---------------------------------------------------------------------------------------------
# the generated world


@dataclass(frozen=True)
class WorldShape:
    workloads: int = 20_000
    local_queues: int = 50
    cluster_queues: int = 10
    namespaces: int = 10
    hot_rows: int = 8


def _time(offset_s: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_796_000_000 - offset_s))


def _meta(name: str, namespace: str | None, index: int, **extra: Any) -> dict:
    meta = {"name": name, "uid": f"00000000-0000-4000-8000-{index:012d}", "creationTimestamp": _time(index), "generation": 1}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


def _condition(type_: str, status: str, reason: str, message: str) -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": _time(0),
            "observedGeneration": 1}


#: The kinds a generated world is made of (and a saved one keeps).
WORLD_PLURALS = ("namespaces", "resourceflavors", "clusterqueues", "localqueues", "workloads", "customresourcedefinitions")


def world_objects(shape: WorldShape) -> dict[str, list[dict]]:
    """Objects per plural, with the fields the app's converters read (tau_tui/core/cluster/convert.py)."""
    namespaces = [f"team-{n:02d}" for n in range(shape.namespaces)] + [HOT_NAMESPACE]
    out: dict[str, list[dict]] = {"namespaces": [], "resourceflavors": [], "clusterqueues": [], "localqueues": [], "workloads": [],
                                  "customresourcedefinitions": kueue_crds()}
    for n, name in enumerate(namespaces):
        out["namespaces"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, None, n),
                                  "status": {"phase": "Active"}})
    for n, flavor in enumerate(FLAVORS):
        out["resourceflavors"].append({"apiVersion": "/".join(KUEUE), "kind": "ResourceFlavor", "metadata": _meta(flavor, None, n),
                                       "spec": {"nodeLabels": {"gpu.nvidia.com/class": flavor.upper()}}})
    for c in range(shape.cluster_queues):
        flavor = FLAVORS[c % len(FLAVORS)]
        out["clusterqueues"].append({
            "apiVersion": "/".join(KUEUE), "kind": "ClusterQueue", "metadata": _meta(f"cq-{c:02d}", None, c),
            "spec": {"cohortName": "all", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "stopPolicy": "None",
                     "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": flavor, "resources": [
                         {"name": "cpu", "nominalQuota": "2000"}, {"name": "memory", "nominalQuota": "16Ti"},
                         {"name": "nvidia.com/gpu", "nominalQuota": "800"}]}]}]},
            "status": {"pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0,
                       "flavorsUsage": [{"name": flavor, "resources": [{"name": "nvidia.com/gpu", "total": "0", "borrowed": "0"}]}],
                       "conditions": [_condition("Active", "True", "Ready", "Can admit new workloads")]}})
    queues = []
    for q in range(shape.local_queues):
        namespace, cq = namespaces[q % shape.namespaces], f"cq-{q % shape.cluster_queues:02d}"
        queues.append((namespace, f"lq-{q:02d}", cq))
        out["localqueues"].append({"apiVersion": "/".join(KUEUE), "kind": "LocalQueue", "metadata": _meta(f"lq-{q:02d}", namespace, q),
                                   "spec": {"clusterQueue": cq, "stopPolicy": "None"},
                                   "status": {"pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0}})
    for i in range(shape.hot_rows):
        out["workloads"].append(_workload(f"bench-{i:02d}", HOT_NAMESPACE, "q-0", "cq-00", FLAVORS[0], False, i, 1))
    for i in range(shape.workloads):
        namespace, lq, cq = queues[i % len(queues)] if queues else (namespaces[0], "lq-00", "cq-00")
        flavor = FLAVORS[int(cq[3:]) % len(FLAVORS)] if cq[3:].isdigit() else FLAVORS[0]
        out["workloads"].append(_workload(f"job-{i:05d}", namespace, lq, cq, flavor, i % 5 < 2, shape.hot_rows + i, 1 << (i % 4)))
    return out


def _workload(name: str, namespace: str, queue: str, cq: str, flavor: str, admitted: bool, index: int, gpus: int) -> dict:
    requests = {"nvidia.com/gpu": str(gpus), "cpu": str(8 * gpus), "memory": f"{64 * gpus}Gi"}
    status: dict[str, Any]
    if admitted:
        status = {"conditions": [_condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}"),
                                 _condition("Admitted", "True", "Admitted", "The workload is admitted")],
                  "admission": {"clusterQueue": cq, "podSetAssignments": [{
                      "name": "main", "flavors": {"nvidia.com/gpu": flavor, "cpu": flavor, "memory": flavor},
                      "resourceUsage": requests, "count": 1}]}}
    else:
        status = {"conditions": [_condition("QuotaReserved", "False", "Pending",
                                            f"couldn't assign flavors to pod set main: insufficient unused quota for "
                                            f"nvidia.com/gpu in flavor {flavor}, {gpus} more needed")]}
    return {"apiVersion": "/".join(KUEUE), "kind": "Workload",
            "metadata": _meta(name, namespace, index, labels={"kueue.x-k8s.io/queue-name": queue}),
            "spec": {"queueName": queue, "priority": index % 3 * 100, "active": True, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "main", "image": "busybox", "resources": {"requests": requests}}]}}}]},
            "status": status}


# ---------------------------------------------------------------------------------------------
# the store


class Store:
    """Every served kind's objects and events under one lock and one resourceVersion counter."""

    def __init__(self, history: int = 100_000):
        self.lock = threading.Lock()
        self.kinds = served_kinds()
        for kind in self.kinds:
            kind.changed = threading.Condition(self.lock)
        self.by_path = {(k.group, k.version, k.plural): k for k in self.kinds}
        self.by_plural = {k.plural: k for k in self.kinds}
        self.rv = 1
        self.history = history
        self.stopping = False

    def load(self, objects: dict[str, list[dict]], keep_versions: bool = False) -> None:
        """Serve ``objects``; each gets a new resourceVersion unless ``keep_versions`` (a saved world:
        an object unchanged since keeps its version, as on a real server after a restart)."""
        with self.lock:
            for plural, items in objects.items():
                kind = self.by_plural[plural]
                for obj in items:
                    self.rv += 1
                    if not keep_versions:
                        obj["metadata"]["resourceVersion"] = str(self.rv)
                    key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                    kind.objects[key] = obj
                    kind.encoded[key] = json.dumps(obj, separators=(",", ":")).encode()
            for kind in self.kinds:
                kind.keys = sorted(kind.objects)
                kind.compacted_rv = self.rv

    def modify(self, kind: Kind, key: tuple[str, str], change: Any) -> None:
        """Apply ``change(obj)`` to one object, as a MODIFIED event (the caller holds the lock)."""
        obj = kind.objects[key]
        change(obj)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        encoded = json.dumps(obj, separators=(",", ":")).encode()
        kind.encoded[key] = encoded
        kind.event_rvs.append(self.rv)
        kind.event_namespaces.append(key[0])
        kind.event_lines.append(b'{"type":"MODIFIED","object":' + encoded + b"}\n")
        if len(kind.event_lines) > self.history:
            drop = len(kind.event_lines) - self.history
            kind.compacted_rv = kind.event_rvs[drop - 1]
            del kind.event_rvs[:drop], kind.event_namespaces[:drop], kind.event_lines[:drop]
            kind.base += drop

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            for kind in self.kinds:
                assert kind.changed is not None
                kind.changed.notify_all()


# ---------------------------------------------------------------------------------------------
# the changer


class Changer(threading.Thread):
    """``rate`` changes/s for ``seconds``, paced by the clock, each written to ``out`` (JSON lines)."""

    def __init__(self, store: Store, rate: float, seconds: float, hot_share: float, out: Path | None, seq_start: int = 0):
        super().__init__(daemon=True, name="watch-source-changer")
        self.store, self.rate, self.seconds, self.hot_share, self.out = store, rate, seconds, hot_share, out
        self.seq_start = seq_start
        workloads = store.by_plural["workloads"]
        self.hot = [key for key in workloads.keys if key[0] == HOT_NAMESPACE]
        self.cold = [key for key in workloads.keys if key[0] != HOT_NAMESPACE]
        self.made = 0
        self.behind_max = 0  # the most changes due but not yet made at a tick: how far the changer lagged
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.go = threading.Event()
        self.halt = threading.Event()

    def run(self) -> None:
        self.go.wait()
        if self.halt.is_set():
            return
        sink = open(self.out, "w") if self.out else None
        start = self.started_at = time.monotonic()
        try:
            total = int(self.rate * self.seconds)
            while self.made < total and not self.halt.is_set():
                due = min(total, int((time.monotonic() - start) * self.rate) + 1)
                self.behind_max = max(self.behind_max, due - self.made)
                lines = self._changes(range(self.seq_start + self.made + 1, self.seq_start + due + 1))
                self.made = due
                if sink is not None:
                    sink.write("".join(lines))
                wait = start + self.made / self.rate - time.monotonic()
                if wait > 0:
                    self.halt.wait(max(wait, CHANGER_TICK_S))
        finally:
            self.ended_at = time.monotonic()
            if sink is not None:
                sink.close()

    def _row_for(self, seq: int) -> tuple[bool, tuple[str, str]]:
        """Whether change ``seq`` goes to a hot row, and which row: of changes 1..seq, int(seq * share)
        went to the hot rows; each group takes its rows round robin."""
        hot_so_far = int(seq * self.hot_share) if self.cold else seq
        if self.hot and hot_so_far != (int((seq - 1) * self.hot_share) if self.cold else seq - 1):
            return True, self.hot[(hot_so_far - 1) % len(self.hot)]
        return False, self.cold[(seq - hot_so_far - 1) % len(self.cold)]

    def _changes(self, seqs: range) -> list[str]:
        """One tick's changes, made under one hold of the lock; each one's time is read once the
        store holds it, before any watcher is woken."""
        store = self.store
        kind = store.by_plural["workloads"]
        made = []
        with store.lock:
            for seq in seqs:
                hot, key = self._row_for(seq)
                value = f"q-{seq}" if hot else f"change {seq}"
                store.modify(kind, key, _set_queue(value) if hot else _set_message(value))
                made.append((seq, key, value, hot, time.monotonic(), time.time()))
            assert kind.changed is not None
            kind.changed.notify_all()
        return [json.dumps({"seq": seq, "row": f"{key[0]}/{key[1]}", "name": key[1], "value": value, "hot": hot,
                            "at": at, "wall": wall}) + "\n" for seq, key, value, hot, at, wall in made]


def _set_queue(value: str) -> Any:
    def change(obj: dict) -> None:
        obj["spec"]["queueName"] = value
        obj["metadata"]["generation"] += 1
    return change


def _set_message(value: str) -> Any:
    def change(obj: dict) -> None:
        for condition in obj["status"]["conditions"]:
            if condition["type"] == "QuotaReserved":
                condition["message"] = condition["message"].split(" (change ")[0] + f" ({value})"
    return change


# ---------------------------------------------------------------------------------------------
# HTTP


def _status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason,
            "code": code}


ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class WatchSource:
    """The store served over HTTP on 127.0.0.1; ``start()`` returns the URL."""

    def __init__(self, shape: WorldShape | None = None, history: int = 100_000, bookmark_interval: float = 30.0, port: int = 0,
                 state: Path | None = None):
        self.store = Store(history)
        if state is not None and state.exists():
            saved = json.loads(state.read_text())
            # the objects keep their versions; the history starts above every version the last run gave,
            # so a watch resumed from one of them is answered 410 and relists (an unchanged object
            # comes back at its version, as after a real server's compaction)
            self.store.rv = int(saved["rv"]) + 1_000
            self.store.load(saved["objects"], keep_versions=True)
        else:
            self.store.load(world_objects(shape or WorldShape()))
        self.bookmark_interval = bookmark_interval
        self.snapshots: OrderedDict[str, tuple[float, int, list[bytes], str | None]] = OrderedDict()
        self.snapshots_lock = threading.Lock()
        self.snapshot_serial = 0
        self.connections: set[socket.socket] = set()
        self.expired_watches = 0
        self.requests_out: Any = None  # a text file: one line per request (method, path, Accept)
        self._requests_lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.changer: Changer | None = None
        self._thread: threading.Thread | None = None
        self._next_seq = 1_000_000_000  # change_now's sequence numbers, apart from the changer's

    def start(self) -> str:
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="watch-source-http")
        self._thread.start()
        return self.url

    def stop(self) -> None:
        if self.changer is not None:
            self.changer.halt.set()
            self.changer.go.set()
            self.changer.join(timeout=10)
        self.store.stop()
        self.server.shutdown()
        self.server.server_close()
        for connection in list(self.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def save_state(self, path: Path) -> None:
        """Every object the world was made of, as it is now, and the last resourceVersion (``--state``)."""
        with self.store.lock:
            objects = {plural: list(self.store.by_plural[plural].objects.values()) for plural in WORLD_PLURALS}
            text = json.dumps({"rv": self.store.rv, "objects": objects}, separators=(",", ":"))
        partial = path.with_suffix(".partial")
        partial.write_text(text)
        partial.replace(path)

    def start_changes(self, rate: float, seconds: float, hot_share: float = 0.5, out: Path | None = None,
                      wait: bool = False, seq_start: int = 0) -> Changer:
        self.changer = Changer(self.store, rate, seconds, hot_share, out, seq_start)
        self.changer.start()
        if not wait:
            self.changer.go.set()
        return self.changer

    def change_now(self, count: int, hot_share: float = 0.5) -> list[dict]:
        """``count`` changes made at once (tests): the records the changer writes for them."""
        first, self._next_seq = self._next_seq, self._next_seq + count
        changer = Changer(self.store, 1.0, 0.0, hot_share, None)
        return [json.loads(line) for line in changer._changes(range(first, first + count))]

    def note_request(self, method: str, path: str, accept: str | None) -> None:
        if self.requests_out is not None:
            with self._requests_lock:
                self.requests_out.write(f"{time.time():.3f} {method} {path} accept={accept or '-'}\n")
                self.requests_out.flush()

    def count(self, plural: str) -> int:
        with self.store.lock:
            return len(self.store.by_plural[plural].objects)

    def write_kubeconfig(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_text(json.dumps({  # JSON is YAML: any kubeconfig reader takes it
            "apiVersion": "v1", "kind": "Config", "current-context": "watch-source",
            "clusters": [{"name": "watch-source", "cluster": {"server": self.url}}],
            "users": [{"name": "watch-source", "user": {"token": "watch-source"}}],
            # No namespace: a tool reads every namespace, as on a cluster-admin's context.
            "contexts": [{"name": "watch-source", "context": {"cluster": "watch-source", "user": "watch-source"}}]}, indent=1))
        return target

    # -- lists ------------------------------------------------------------------------------

    def list_page(self, kind: Kind, namespace: str | None, limit: int, token: str | None,
                  table: str | None = None) -> tuple[int, bytes]:
        """A page of a list; ``table``: as a Table whose rows carry the objects as ``includeObject`` says."""
        now = time.monotonic()
        if token:
            try:
                ident, start = json.loads(base64.urlsafe_b64decode(token.encode()))
            except ValueError:
                return 400, json.dumps(_status(400, "BadRequest", "invalid continue token")).encode()
            with self.snapshots_lock:
                snapshot = self.snapshots.get(ident)
            if snapshot is None or now - snapshot[0] > CONTINUE_TTL_S:
                return 410, json.dumps(_status(410, "Expired", "The provided continue parameter is too old to display a "
                                                              "consistent list result. You can start a new list without "
                                                              "the continue parameter.")).encode()
            _, rv, items, snapshot_table = snapshot
            if snapshot_table != table:
                return 400, json.dumps(_status(400, "BadRequest", "the continue token is of a list in another format")).encode()
        else:
            with self.store.lock:
                rv = self.store.rv
                keys = [key for key in kind.keys if namespace is None or key[0] == namespace]
                items = [kind.encoded[key] for key in keys] if table is None else self.table_rows(kind, keys, table)
            ident, start = None, 0
        end = len(items) if limit <= 0 else min(len(items), start + limit)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if end < len(items):
            if ident is None:
                with self.snapshots_lock:
                    self.snapshot_serial += 1
                    ident = str(self.snapshot_serial)
                    self.snapshots[ident] = (now, rv, items, table)
                    while len(self.snapshots) > SNAPSHOTS_KEPT:
                        self.snapshots.popitem(last=False)
            meta["continue"] = base64.urlsafe_b64encode(json.dumps([ident, end]).encode()).decode()
            meta["remainingItemCount"] = len(items) - end
        if table is not None:
            return 200, printing.table(kind.plural, items[start:end], meta)
        head = json.dumps({"apiVersion": kind.api_version, "kind": f"{kind.kind}List", "metadata": meta})
        return 200, head[:-1].encode() + b',"items":[' + b",".join(items[start:end]) + b"]}"

    def table_rows(self, kind: Kind, keys: list[tuple[str, str]], include: str) -> list[bytes]:
        """The objects' Table rows; a row is kept while its object is unchanged (the encoding it was
        printed beside is still the object's).  The caller holds the store's lock."""
        rows = []
        for key in keys:
            encoded = kind.encoded[key]
            cached = kind.table_rows.get((key, include))
            if cached is None or cached[0] is not encoded:
                cached = kind.table_rows[(key, include)] = (encoded, printing.encoded_row(kind.plural, kind.objects[key], include))
            rows.append(cached[1])
        return rows

    # -- discovery --------------------------------------------------------------------------

    def discovery(self, parts: list[str]) -> dict | None:
        groups: dict[str, list[Kind]] = {}
        for kind in self.store.kinds:
            groups.setdefault(kind.group, []).append(kind)
        if parts == ["version"]:
            return SERVER_VERSION
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if parts == ["api", "v1"]:
            return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [k.resource() for k in groups[""]]}
        named = {g: kinds for g, kinds in groups.items() if g}

        def group_info(group: str) -> dict:
            version = named[group][0].version
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            return {"name": group, "versions": [gv], "preferredVersion": gv}
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_info(g) for g in named]}
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in named:
            return {"kind": "APIGroup", "apiVersion": "v1", **group_info(parts[1])}
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in named and parts[2] == named[parts[1]][0].version:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{parts[1]}/{parts[2]}",
                    "resources": [k.resource() for k in named[parts[1]]]}
        return None

    def resolve(self, parts: list[str]) -> tuple[Kind, str | None, str | None] | None:
        """(kind, namespace, name) of a resource path, or None."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 2:
            return None
        kind = self.store.by_path.get((group, version, rest[0]))
        if kind is None or (namespace is not None and not kind.namespaced):
            return None
        return kind, namespace, rest[1] if len(rest) == 2 else None


def _handler(source: WatchSource) -> type[BaseHTTPRequestHandler]:
    store = source.store

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 120  # an idle keep-alive connection, or a watcher that stopped reading
        table_headed = False  # a Table watch: its column definitions were sent

        def setup(self) -> None:
            super().setup()
            source.connections.add(self.connection)

        def finish(self) -> None:
            source.connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes | dict) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self) -> None:
            self._send(404, _status(404, "NotFound", f"the server could not find the requested resource ({self.path})"))

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            accept = self.headers.get("Accept")
            source.note_request("GET", self.path, accept)
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            table = query.get("includeObject", "Metadata") if printing.wants_table(accept) else None
            if table is not None and table not in printing.INCLUDE_OBJECT:
                self._send(400, _status(400, "BadRequest", f"includeObject must be one of {', '.join(printing.INCLUDE_OBJECT)}"))
                return
            if parts in (["healthz"], ["readyz"], ["livez"]):
                self._send(200, b"ok")
                return
            found = source.discovery(parts)
            if found is not None:
                self._send(200, found)
                return
            resolved = source.resolve(parts)
            if resolved is None:
                self._not_found()
                return
            kind, namespace, name = resolved
            if name is not None:
                key = (namespace or "", name)
                with store.lock:
                    encoded = kind.encoded.get(key)
                    if encoded is not None and table is not None:
                        encoded = printing.table(kind.plural, source.table_rows(kind, [key], table),
                                                 {"resourceVersion": kind.objects[key]["metadata"]["resourceVersion"]})
                if encoded is None:
                    self._send(404, _status(404, "NotFound", f'{kind.plural}.{kind.group or "core"} "{name}" not found'))
                else:
                    self._send(200, encoded)
                return
            if query.get("watch") in ("1", "true", "True"):
                self._watch(kind, namespace, query, table)
                return
            try:
                limit = int(query.get("limit", "0"))
            except ValueError:
                limit = 0
            self._send(*source.list_page(kind, namespace, limit, query.get("continue"), table))

        def do_POST(self) -> None:  # noqa: N802
            source.note_request(self.command, self.path, self.headers.get("Accept"))
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.command == "POST" and urlsplit(self.path).path == ACCESS_REVIEWS:
                # k9s asks before it lists a kind; every request here is allowed (any token is accepted).
                try:
                    review = json.loads(body)
                except ValueError:
                    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}
                review["status"] = {"allowed": True, "reason": "the watch source allows everything"}
                self._send(201, review)
                return
            self._not_found()

        do_PATCH = do_PUT = do_DELETE = do_POST  # noqa: N815

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        def _watch(self, kind: Kind, namespace: str | None, query: dict[str, str], table: str | None) -> None:
            bookmarks = query.get("allowWatchBookmarks") in ("1", "true", "True")
            try:
                asked = int(query.get("resourceVersion") or "0")
                timeout = float(query.get("timeoutSeconds") or WATCH_LONGEST_S)
            except ValueError:
                self._send(400, _status(400, "BadRequest", "resourceVersion and timeoutSeconds are numbers"))
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.table_headed = False
            changed = kind.changed
            assert changed is not None
            initial: list[bytes] = []
            with store.lock:
                if asked == 0:  # "any": the current state as ADDED, then what follows
                    initial = [b'{"type":"ADDED","object":' + kind.encoded[key] + b"}\n"
                               for key in kind.keys if namespace is None or key[0] == namespace]
                    at = kind.base + len(kind.event_lines)
                elif asked < kind.compacted_rv:
                    at = -1
                else:
                    at = kind.base + bisect_right(kind.event_rvs, asked)
            try:
                if initial:
                    self._events(kind, initial, table)
                if at >= 0:
                    self._stream(kind, namespace, at, time.monotonic() + min(timeout, WATCH_LONGEST_S), bookmarks, table)
                else:
                    self._gone(kind, f"too old resource version: {asked} ({kind.compacted_rv + 1})")
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True

        def _gone(self, kind: Kind, message: str) -> None:
            source.expired_watches += 1
            self._chunk(json.dumps({"type": "ERROR", "object": _status(410, "Expired", message)}).encode() + b"\n")

        def _events(self, kind: Kind, lines: list[bytes], table: str | None) -> None:
            """Event lines in one chunk; as a Table of one row each where the watch asked for Tables
            (the column definitions in its first event only, as the server sends them)."""
            if table is not None:
                lines = [printing.watch_event_as_table(kind.plural, line, table, headers=n == 0 and not self.table_headed)
                         for n, line in enumerate(lines)]
                self.table_headed = True
            self._chunk(b"".join(lines))

        def _stream(self, kind: Kind, namespace: str | None, at: int, deadline: float, bookmarks: bool,
                    table: str | None) -> None:
            changed = kind.changed
            assert changed is not None
            next_bookmark = time.monotonic() + source.bookmark_interval
            while True:
                bookmark_rv = None
                with store.lock:
                    while not store.stopping and at == kind.base + len(kind.event_lines):
                        now = time.monotonic()
                        if now >= deadline or (bookmarks and now >= next_bookmark):
                            bookmark_rv = store.rv  # every event of this kind up to it has been sent
                            break
                        changed.wait(min(deadline, next_bookmark if bookmarks else deadline) - now)
                    if store.stopping:
                        return
                    if at < kind.base:  # fell behind the kept history: the real server's answer
                        lines = None
                    else:
                        start = at - kind.base
                        lines = [line for line, ns in zip(kind.event_lines[start:], kind.event_namespaces[start:], strict=True)
                                 if namespace is None or ns == namespace]
                        at = kind.base + len(kind.event_lines)
                if lines is None:
                    self._gone(kind, f"the watcher fell behind the {store.history} events kept; too old resource version")
                    return
                if lines:
                    self._events(kind, lines, table)
                if bookmark_rv is not None:
                    if bookmarks:
                        self._chunk(json.dumps({"type": "BOOKMARK", "object": {
                            "kind": kind.kind, "apiVersion": kind.api_version,
                            "metadata": {"resourceVersion": str(bookmark_rv)}}}).encode() + b"\n")
                        next_bookmark = time.monotonic() + source.bookmark_interval
                    if time.monotonic() >= deadline:
                        return

    return Handler


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--local-queues", type=int, default=50)
    parser.add_argument("--cluster-queues", type=int, default=10)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--hot-rows", type=int, default=8, help=f"pending Workloads bench-NN in {HOT_NAMESPACE}")
    parser.add_argument("--hot-share", type=float, default=0.5, help="the share of changes that go to the hot rows")
    parser.add_argument("--rate", type=float, default=1000.0, help="changes/s")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of changes")
    parser.add_argument("--linger", type=float, default=5.0, help="seconds served after the changes end")
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="the longest this process runs")
    parser.add_argument("--wait-for-signal", action="store_true", help="start the changes on SIGUSR1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--history", type=int, default=100_000, help="watch events kept per kind")
    parser.add_argument("--bookmark-interval", type=float, default=30.0)
    parser.add_argument("--kubeconfig-out")
    parser.add_argument("--changes-out")
    parser.add_argument("--requests-out", help="a file: one line per request (method, path, Accept)")
    parser.add_argument("--state", help="a file the world is read from (when it exists) and written to at the end")
    parser.add_argument("--seq-start", type=int, default=0, help="this run's changes are numbered on from this")
    args = parser.parse_args()
    born = time.monotonic()
    shape = WorldShape(args.workloads, args.local_queues, args.cluster_queues, args.namespaces, args.hot_rows)
    state = Path(args.state) if args.state else None
    source = WatchSource(shape, args.history, args.bookmark_interval, args.port, state)
    if args.requests_out:
        source.requests_out = open(args.requests_out, "w")  # noqa: SIM115 (open for the process's life)
    url = source.start()
    if args.kubeconfig_out:
        source.write_kubeconfig(args.kubeconfig_out)
    changer = source.start_changes(args.rate, args.duration, args.hot_share,
                                   Path(args.changes_out) if args.changes_out else None, wait=True, seq_start=args.seq_start)
    def halt(*_: Any) -> None:
        changer.halt.set()
        changer.go.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, halt)
    if args.wait_for_signal:
        signal.signal(signal.SIGUSR1, lambda *_: changer.go.set())
    else:
        changer.go.set()
    print(f"READY {url} pid {os.getpid()}", flush=True)
    cpu_before = time.process_time()
    try:
        while changer.is_alive() and time.monotonic() - born < args.max_seconds:
            changer.join(timeout=0.5)
        if not changer.halt.is_set():
            changer.halt.wait(min(args.linger, max(0.0, args.max_seconds - (time.monotonic() - born))))
    finally:
        source.stop()
        if state is not None:
            source.save_state(state)
    ran = (changer.ended_at or time.monotonic()) - (changer.started_at or time.monotonic())
    print(json.dumps({"changes": changer.made, "seconds": round(ran, 3), "achieved_rate": round(changer.made / ran, 1) if ran > 0 else 0,
                      "most_behind": changer.behind_max, "expired_watches": source.expired_watches,
                      "source_cpu_s": round(time.process_time() - cpu_before, 3), "url": url}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
