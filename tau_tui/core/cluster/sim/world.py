"""The simulated cluster: API store plus small controllers that behave like
Kueue, the Job and RayJob controllers, the scheduler, MultiKueue, the GPU
node agent and the Tau controller, advanced in ticks of an injectable clock.

Deterministic: names and UIDs come from one seeded RNG, time only from the
clock, and controllers visit objects in sorted order."""

from __future__ import annotations

import copy
import hashlib
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool import LogChunkRequest
from tau_tui.core.cluster.names import GPU_RESOURCE_NAMES, MULTIKUEUE_CONTROLLER_NAME, QUEUE_NAME_LABEL, is_gpu_resource
from tau_tui.core.cluster.clock import Clock, ManualClock
from tau_tui.core.cluster.common import ApiFailure
from tau_tui.core.cluster.sim.simlogs import ContainerLog, SimLogReader, to_ns
from tau_tui.core.cluster.sim.store import SimStore
from tau_tui.core.gpuhealth.report import GpuTelemetry
from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.convert import format_time, parse_quantity, pod_requests, queue_order_timestamp

R = ResourceKind
SIM_PREFIX = "sim.tau-tui.io/"
DURATION_ANNOTATION = SIM_PREFIX + "duration-seconds"
#: Log style of a pod's main container (train, json, ...); a Job may set it for its pods.
LOG_STYLE_ANNOTATION = SIM_PREFIX + "log-style"
OUTCOME_ANNOTATION = SIM_PREFIX + "outcome"
RESTARTS_ANNOTATION = SIM_PREFIX + "restarts"
MK_MANAGED_BY = "kueue.x-k8s.io/multikueue"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MAX_EVENTS = 1500


def workload_name(kind: str, group: str, owner_name: str, owner_uid: str) -> str:
    """Kueue's jobframework naming (kueue.md A2.2)."""
    prefix = f"{kind.lower()}-{owner_name}"[: 253 - 6]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


def cond(type_: str, status: str, reason: str, message: str, now: datetime, generation: int | None = None) -> dict:
    out = {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": format_time(now)}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def set_condition(obj: dict, new: dict) -> None:
    """Upsert a condition; keeps lastTransitionTime when the status is unchanged."""
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") == new["type"]:
            if c.get("status") == new["status"]:
                new = dict(new, lastTransitionTime=c.get("lastTransitionTime", new["lastTransitionTime"]))
            conds[i] = new
            return
    conds.append(new)


def get_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    c = get_condition(obj, type_)
    return c is not None and c.get("status") == "True"


@dataclass
class SimSettings:
    visibility_api: bool = True
    default_duration_seconds: float = 900.0
    log_interval_seconds: float = 2.0
    worker_lost_timeout_seconds: float = 900.0
    heartbeat_seconds: float = 240.0
    events: bool = True
    context: str = "sim"


class SimulatedCluster:
    def __init__(self, clock: Clock, seed: int = 1, settings: SimSettings | None = None):
        self.clock = clock
        self.settings = settings or SimSettings()
        self.store = SimStore(seed, lambda: self.clock.now())
        self.lock = self.store.lock
        self.logs: dict[tuple[str, str, str, bool], ContainerLog] = {}
        self.log_break_generation = 0
        self._worker_lost_at: dict[str, datetime] = {}
        self._last_heartbeat: datetime | None = None
        self._timeline: list[tuple[datetime, Callable[[], None]]] = []
        self._order_cache: dict[tuple[str, str], tuple] = {}
        self.agent_nodes: set[str] = set()
        self.tau_profiles: list[dict] | None = None
        self.store.admission_hooks.append(self._webhook)
        self.store.delete_hooks.append(self._on_delete)
        self.store.validators.append(self._validate)
        self.ticks = 0
        #: Called after every tick, outside the lock (backends flush their caches).
        self.tick_listeners: list[Callable[[], None]] = []
        #: API outage injection: while ``api_down`` holds a message, attached
        #: backends stop receiving changes and report reconnecting/stale.
        self.api_down: str | None = None
        self.api_down_stale = False
        #: Called (outside the lock) when the outage state changes.
        self.connectivity_listeners: list[Callable[[], None]] = []

    # -- time ----------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def advance(self, seconds: float, step: float = 1.0) -> None:
        """Move a ManualClock forward, ticking every ``step`` seconds."""
        if not isinstance(self.clock, ManualClock):
            raise RuntimeError("advance() needs a ManualClock; a real-time simulation ticks by itself")
        left = seconds
        while left > 1e-9:
            delta = min(step, left)
            self.clock.advance(delta)
            left -= delta
            self.tick()

    def at(self, offset_seconds: float, action: Callable[[], None]) -> None:
        """Schedule a timeline action ``offset_seconds`` from now."""
        with self.lock:
            self._timeline.append((self.now() + timedelta(seconds=offset_seconds), action))
            self._timeline.sort(key=lambda item: item[0])

    # -- API outage (fault injection) ----------------------------------------

    def api_outage(self, message: str = "dial tcp 127.0.0.1:6443: connect: connection refused", stale: bool = False) -> None:
        """The API server stops answering: backends keep their last data and
        report reconnecting (or, with ``stale``, stale) since now."""
        self._set_api_down(message, stale)

    def api_restore(self) -> None:
        self._set_api_down(None, False)

    def _set_api_down(self, message: str | None, stale: bool) -> None:
        with self.lock:
            self.api_down = message
            self.api_down_stale = stale
            listeners = list(self.connectivity_listeners)
        for listener in listeners:  # outside the lock: listeners read the world back
            listener()

    # -- the tick ------------------------------------------------------------

    def tick(self) -> None:
        with self.lock:
            now = self.now()
            self.ticks += 1
            while self._timeline and self._timeline[0][0] <= now:
                _, action = self._timeline.pop(0)
                action()
            self._reconcile_owners()
            self._multikueue_clusters()
            self._stop_policies()
            self._schedule()
            self._multikueue_dispatch()
            self._start_admitted()
            self._bind_and_run_pods()
            self._finish_pods(now)
            self._finish_jobs()
            self._queue_status()
            self._agent_heartbeat(now)
            self._tau_status()
            self.store.changed.notify_all()
        for listener in list(self.tick_listeners):
            listener()

    # -- webhooks (create) ---------------------------------------------------

    def _webhook(self, rt: ResourceType, obj: dict) -> None:
        meta = obj.setdefault("metadata", {})
        if rt is R.POD.type:
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        labels = meta.get("labels") or {}
        if rt in (R.JOB.type, R.RAY_JOB.type) and labels.get(QUEUE_NAME_LABEL):
            spec = obj.setdefault("spec", {})
            if rt is R.RAY_JOB.type and spec.get("clusterSelector"):
                raise ApiFailure(422, "Invalid", "admission webhook \"vrayjob.kb.io\" denied the request: spec.clusterSelector: a kueue managed job should not use an existing cluster",
                                 {"reason": "Invalid", "code": 422, "message": "admission webhook \"vrayjob.kb.io\" denied the request",
                                  "details": {"causes": [{"field": "spec.clusterSelector", "message": "a kueue managed job should not use an existing cluster"}]}})
            spec["suspend"] = True
            cq = self._cq_for_queue(meta.get("namespace", ""), labels[QUEUE_NAME_LABEL])
            if cq is not None and self._multikueue_check_of(cq) is not None and rt is R.JOB.type:
                spec.setdefault("managedBy", MK_MANAGED_BY)
        if rt is R.WORKLOAD.type:
            spec = obj.get("spec") or {}
            if len(spec.get("podSets") or ()) > 8:
                raise ApiFailure(422, "Invalid", "Workload is invalid: spec.podSets: at most 8 items")

    @staticmethod
    def _validate(rt: ResourceType, obj: dict) -> None:
        """The CRD schema rules the simulation enforces (kueue.md A1)."""
        name = (obj.get("metadata") or {}).get("name")
        if rt is R.MULTIKUEUE_CONFIG.type:
            clusters = (obj.get("spec") or {}).get("clusters") or []
            if not 1 <= len(clusters) <= 20:
                raise ApiFailure(422, "Invalid", f'MultiKueueConfig.kueue.x-k8s.io "{name}" is invalid', {
                    "reason": "Invalid", "code": 422, "message": f'MultiKueueConfig.kueue.x-k8s.io "{name}" is invalid',
                    "details": {"name": name, "causes": [{"field": "spec.clusters", "message": "must have between 1 and 20 items"}]}})
        if rt is R.CLUSTER_QUEUE.type or rt is R.LOCAL_QUEUE.type:
            policy = (obj.get("spec") or {}).get("stopPolicy")
            if policy not in (None, "None", "Hold", "HoldAndDrain"):
                raise ApiFailure(422, "Invalid", f'{rt.kind} "{name}" is invalid', {
                    "reason": "Invalid", "code": 422, "details": {"name": name, "causes": [
                        {"field": "spec.stopPolicy", "message": f'Unsupported value: "{policy}"'}]}})

    def _on_delete(self, rt: ResourceType, obj: dict) -> None:
        """Garbage collection by owner, as the GC controller does."""
        uid = (obj.get("metadata") or {}).get("uid")
        ns = (obj.get("metadata") or {}).get("namespace")
        if rt in (R.JOB.type, R.RAY_JOB.type, R.WORKLOAD.type):
            for dep_rt in (R.WORKLOAD.type, R.POD.type):
                for dep in list(self.store.items(dep_rt, ns)):
                    refs = (dep.get("metadata") or {}).get("ownerReferences") or ()
                    labels = (dep.get("metadata") or {}).get("labels") or {}
                    if any(r.get("uid") == uid for r in refs) or (dep_rt is R.POD.type and labels.get("sim.tau-tui.io/owner-uid") == uid):
                        self.store.remove(dep_rt, dep["metadata"]["name"], ns)

    # -- lookups ---------------------------------------------------------------

    def _cq_for_queue(self, namespace: str, lq_name: str) -> dict | None:
        lq = self.store.read(R.LOCAL_QUEUE.type, lq_name, namespace)
        if lq is None:
            return None
        return self.store.read(R.CLUSTER_QUEUE.type, (lq.get("spec") or {}).get("clusterQueue", ""))

    def _multikueue_check_of(self, cq: Mapping[str, Any]) -> dict | None:
        for ref in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
            ac = self.store.read(R.ADMISSION_CHECK.type, ref.get("name", ""))
            if ac is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER_NAME:
                return ac
        return None

    def _check_names(self, cq: Mapping[str, Any]) -> list[str]:
        return [r.get("name", "") for r in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ()]

    def _owner_of(self, wl: Mapping[str, Any]) -> tuple[ResourceType, dict] | None:
        for ref in (wl.get("metadata") or {}).get("ownerReferences") or ():
            rt = R.JOB.type if ref.get("kind") == "Job" else R.RAY_JOB.type if ref.get("kind") == "RayJob" else None
            if rt is not None:
                owner = self.store.read(rt, ref.get("name", ""), wl["metadata"].get("namespace"))
                if owner is not None and owner["metadata"].get("uid") == ref.get("uid"):
                    return rt, owner
        return None

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if not self.settings.events:
            return
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        if self.store.read(R.NAMESPACE.type, ns) is None:
            return
        now = format_time(self.now())
        name = f"{meta.get('name', 'x')}.{self.store.rand5()}{self.store.rand5()}"
        self.store.put(R.EVENT.type, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": obj.get("kind"), "name": meta.get("name"), "namespace": meta.get("namespace"),
                               "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion")},
            "type": type_, "reason": reason, "message": message, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "tau-sim"},
        })
        events = self.store.bucket(R.EVENT.type)
        while len(events) > MAX_EVENTS:
            (old_ns, old_name) = next(iter(events))
            self.store.remove(R.EVENT.type, old_name, old_ns)

    # -- Kueue: jobs -> workloads ----------------------------------------------

    def _reconcile_owners(self) -> None:
        existing = {
            ((w["metadata"].get("labels") or {}).get(JOB_UID_LABEL)) for w in self.store.items(R.WORKLOAD.type)
        }
        for rt, kind, group in ((R.JOB.type, "Job", "batch"), (R.RAY_JOB.type, "RayJob", "ray.io")):
            for owner in sorted(self.store.items(rt), key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"])):
                meta = owner["metadata"]
                queue = (meta.get("labels") or {}).get(QUEUE_NAME_LABEL)
                if not queue or meta["uid"] in existing:
                    continue
                self.store.put(R.WORKLOAD.type, self._workload_for(owner, kind, group, queue))
                existing.add(meta["uid"])

    def _workload_for(self, owner: dict, kind: str, group: str, queue: str) -> dict:
        meta = owner["metadata"]
        spec = owner.get("spec") or {}
        if kind == "Job":
            pod_sets = [{"name": "main", "count": int(spec.get("parallelism") or 1), "template": spec.get("template") or {}}]
        else:
            rcs = spec.get("rayClusterSpec") or {}
            pod_sets = [{"name": "head", "count": 1, "template": (rcs.get("headGroupSpec") or {}).get("template") or {}}]
            for group_spec in rcs.get("workerGroupSpecs") or ():
                pod_sets.append({"name": group_spec.get("groupName", "workers"), "count": int(group_spec.get("replicas") or 1),
                                 "template": group_spec.get("template") or {}})
        wpc_name = (meta.get("labels") or {}).get(PRIORITY_CLASS_LABEL)
        wl_spec: dict[str, Any] = {"queueName": queue, "podSets": pod_sets, "active": True}
        priority = 0
        if wpc_name:
            wpc = self.store.read(R.WORKLOAD_PRIORITY_CLASS.type, wpc_name)
            if wpc is not None:
                priority = int(wpc.get("value") or 0)
                wl_spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": wpc_name}
        wl_spec["priority"] = priority
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {
                "name": workload_name(kind, group, meta["name"], meta["uid"]),
                "namespace": meta["namespace"],
                "labels": {JOB_UID_LABEL: meta["uid"]},
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                "ownerReferences": [{"apiVersion": owner.get("apiVersion"), "kind": kind, "name": meta["name"],
                                     "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": wl_spec,
            "status": {"conditions": [cond("QuotaReserved", "False", "Pending", "waiting for quota", self.now())]},
        }

    # -- Kueue: admission --------------------------------------------------------

    def _order_key(self, wl: dict) -> tuple:
        meta = wl["metadata"]
        cache_key = (meta["uid"], meta["resourceVersion"])
        hit = self._order_cache.get(cache_key)
        if hit is None:
            spec = wl.get("spec") or {}
            boost = int((meta.get("annotations") or {}).get("kueue.x-k8s.io/priority-boost") or 0)
            ts = queue_order_timestamp(wl)
            hit = (-(int(spec.get("priority") or 0) + boost), ts.timestamp() if ts else 0.0, meta["uid"])
            if len(self._order_cache) > 200_000:
                self._order_cache.clear()
            self._order_cache[cache_key] = hit
        return hit

    @staticmethod
    def _pending(wl: Mapping[str, Any]) -> bool:
        spec = wl.get("spec") or {}
        return bool(spec.get("queueName")) and spec.get("active", True) is not False and not is_true(wl, "QuotaReserved") and not is_true(wl, "Finished")

    def pending_by_cluster_queue(self) -> dict[str, list[dict]]:
        """Pending workloads per ClusterQueue in Kueue order (used by the
        scheduler and by the simulated visibility API)."""
        lq_cq = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
                 for lq in self.store.items(R.LOCAL_QUEUE.type)}
        out: dict[str, list[dict]] = {}
        for wl in self.store.items(R.WORKLOAD.type):
            if not self._pending(wl):
                continue
            cq = lq_cq.get((wl["metadata"]["namespace"], wl["spec"]["queueName"]))
            if cq:
                out.setdefault(cq, []).append(wl)
        for items in out.values():
            items.sort(key=self._order_key)
        return out

    def _usage(self) -> dict[str, dict[tuple[str, str], float]]:
        """Reserved quota per ClusterQueue: {(flavor, resource): amount}."""
        usage: dict[str, dict[tuple[str, str], float]] = {}
        for wl in self.store.items(R.WORKLOAD.type):
            adm = (wl.get("status") or {}).get("admission")
            if not adm or not is_true(wl, "QuotaReserved") or is_true(wl, "Finished"):
                continue
            slot = usage.setdefault(adm.get("clusterQueue", ""), {})
            for psa in adm.get("podSetAssignments") or ():
                for res, value in (psa.get("resourceUsage") or {}).items():
                    flavor = (psa.get("flavors") or {}).get(res, "")
                    slot[(flavor, res)] = slot.get((flavor, res), 0.0) + parse_quantity(value)
        return usage

    def _wl_requests(self, wl: Mapping[str, Any]) -> list[tuple[str, int, dict[str, float]]]:
        meta = wl["metadata"]
        key = ("req", meta["uid"], meta.get("generation"))
        hit = self._order_cache.get(key)
        if hit is None:
            hit = self._order_cache[key] = self._compute_requests(wl)
        return hit

    @staticmethod
    def _compute_requests(wl: Mapping[str, Any]) -> list[tuple[str, int, dict[str, float]]]:
        out = []
        for ps in (wl.get("spec") or {}).get("podSets") or ():
            count = int(ps.get("count") or 1)
            per_pod = pod_requests(((ps.get("template") or {}).get("spec")) or {})
            out.append((ps.get("name", ""), count, {k: v * count for k, v in per_pod.items() if v}))
        return out

    def _assign_flavors(self, cq: Mapping[str, Any], wl: Mapping[str, Any], used: dict[tuple[str, str], float]) -> tuple[list[dict] | None, str]:
        groups = (cq.get("spec") or {}).get("resourceGroups") or ()
        assignments = []
        extra: dict[tuple[str, str], float] = {}
        for ps_name, count, totals in self._wl_requests(wl):
            flavors: dict[str, str] = {}
            usage: dict[str, str] = {}
            for group in groups:
                covered = [r for r in group.get("coveredResources") or () if r in totals]
                if not covered:
                    continue
                chosen = None
                last_problem = ""
                for flavor in group.get("flavors") or ():
                    fname = flavor.get("name", "")
                    if self.store.read(R.RESOURCE_FLAVOR.type, fname) is None:
                        last_problem = f"flavor {fname} not found"
                        continue
                    quota = {r.get("name"): parse_quantity(r.get("nominalQuota")) for r in flavor.get("resources") or ()}
                    ok = True
                    for res in covered:
                        have = used.get((fname, res), 0.0) + extra.get((fname, res), 0.0)
                        if have + totals[res] > quota.get(res, 0.0) + 1e-9:
                            ok = False
                            last_problem = f"insufficient unused quota for {res} in flavor {fname}"
                            break
                    if ok:
                        chosen = fname
                        break
                if chosen is None:
                    return None, f"couldn't assign flavors to pod set {ps_name}: {last_problem or 'no flavor fits'}"
                for res in covered:
                    flavors[res] = chosen
                    usage[res] = f"{totals[res]:g}"
                    extra[(chosen, res)] = extra.get((chosen, res), 0.0) + totals[res]
            missing = [r for r in totals if r not in flavors]
            if missing:
                return None, f"couldn't assign flavors to pod set {ps_name}: resource {missing[0]} unavailable in ClusterQueue"
            assignments.append({"name": ps_name, "flavors": flavors, "resourceUsage": usage, "count": count})
        for k, v in extra.items():
            used[k] = used.get(k, 0.0) + v
        return assignments, ""

    def _schedule(self) -> None:
        now = self.now()
        usage = self._usage()
        for cq_name, items in sorted(self.pending_by_cluster_queue().items()):
            cq = self.store.read(R.CLUSTER_QUEUE.type, cq_name)
            if cq is None or ((cq.get("spec") or {}).get("stopPolicy") or "None") != "None":
                continue
            strict = (cq.get("spec") or {}).get("queueingStrategy") == "StrictFIFO"
            used = usage.setdefault(cq_name, {})
            # Failures do not change usage, so identical requests fail identically
            # until something is admitted in this ClusterQueue.
            failed: dict[Any, str] = {}
            for wl in items:
                meta = wl["metadata"]
                lq = self.store.read(R.LOCAL_QUEUE.type, wl["spec"]["queueName"], meta["namespace"])
                if lq is None or ((lq.get("spec") or {}).get("stopPolicy") or "None") != "None":
                    continue
                requeue_at = parse_time(((wl.get("status") or {}).get("requeueState") or {}).get("requeueAt"))
                if requeue_at is not None and requeue_at > now:
                    continue
                signature = tuple((n, c, tuple(sorted(t.items()))) for n, c, t in self._wl_requests(wl))
                if signature in failed:
                    assignments, problem = None, failed[signature]
                else:
                    assignments, problem = self._assign_flavors(cq, wl, used)
                    if assignments is None:
                        failed[signature] = problem
                    else:
                        failed.clear()
                if assignments is None:
                    current = get_condition(wl, "QuotaReserved") or {}
                    if (current.get("status"), current.get("reason"), current.get("message")) != ("False", "Pending", problem):
                        def pending(obj: dict, problem: str = problem) -> None:
                            set_condition(obj, cond("QuotaReserved", "False", "Pending", problem, now))
                        self.store.update(R.WORKLOAD.type, meta["name"], meta["namespace"], pending)
                    if strict:
                        break
                    continue
                checks = self._check_names(cq)

                def reserve(obj: dict, assignments=assignments, checks=checks, cq_name=cq_name) -> None:
                    st = obj.setdefault("status", {})
                    st["admission"] = {"clusterQueue": cq_name, "podSetAssignments": assignments}
                    st.pop("requeueState", None)
                    set_condition(obj, cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq_name}", now))
                    if is_true(obj, "Evicted"):
                        set_condition(obj, cond("Evicted", "False", "QuotaReserved", "Previously: evicted", now))
                    if checks:
                        st["admissionChecks"] = [{"name": c, "state": "Pending", "message": "", "lastTransitionTime": format_time(now)} for c in checks]
                        set_condition(obj, cond("Admitted", "False", "UnsatisfiedChecks", "The workload has not all admission checks", now))
                    else:
                        set_condition(obj, cond("Admitted", "True", "Admitted", "The workload is admitted", now))
                new = self.store.update(R.WORKLOAD.type, meta["name"], meta["namespace"], reserve)
                if new is not None:
                    self._event(new, "Normal", "QuotaReserved", f"Quota reserved in ClusterQueue {cq_name}")
                    if not checks:
                        self._event(new, "Normal", "Admitted", f"Admitted by ClusterQueue {cq_name}")

    def _evict(self, wl: dict, reason: str, message: str, requeue: bool = True) -> None:
        now = self.now()
        meta = wl["metadata"]

        def evict(obj: dict) -> None:
            st = obj.setdefault("status", {})
            st.pop("admission", None)
            st.pop("admissionChecks", None)
            st.pop("clusterName", None)
            st.pop("nominatedClusterNames", None)
            set_condition(obj, cond("Evicted", "True", reason, message, now))
            set_condition(obj, cond("QuotaReserved", "False", "Pending", message, now))
            set_condition(obj, cond("Admitted", "False", "NoReservation", "The workload has no reservation", now))
            if requeue:
                set_condition(obj, cond("Requeued", "True", reason, message, now))
        self.store.update(R.WORKLOAD.type, meta["name"], meta["namespace"], evict)
        self._event(wl, "Normal", "EvictedDueTo" + reason, message)
        owner = self._owner_of(wl)
        if owner is not None:
            rt, obj = owner
            self._suspend_owner(rt, obj)

    def _suspend_owner(self, rt: ResourceType, owner: dict) -> None:
        meta = owner["metadata"]

        def suspend(obj: dict) -> None:
            obj.setdefault("spec", {})["suspend"] = True
            st = obj.setdefault("status", {})
            if rt is R.JOB.type:
                st["active"] = 0
                st.pop("ready", None)
            else:
                st["jobDeploymentStatus"] = "Suspended"
        self.store.update(rt, meta["name"], meta["namespace"], suspend)
        for pod in list(self.store.items(R.POD.type, meta["namespace"])):
            labels = pod["metadata"].get("labels") or {}
            if labels.get("sim.tau-tui.io/owner-uid") == meta["uid"]:
                self.store.remove(R.POD.type, pod["metadata"]["name"], meta["namespace"])

    def _stop_policies(self) -> None:
        """Hold cancels reservations still waiting for checks; HoldAndDrain
        also evicts admitted workloads (kueue.md A1.2, A1.4)."""
        for wl in sorted(self.store.items(R.WORKLOAD.type), key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"])):
            adm = (wl.get("status") or {}).get("admission")
            if not adm or is_true(wl, "Finished") or not is_true(wl, "QuotaReserved"):
                continue
            cq = self.store.read(R.CLUSTER_QUEUE.type, adm.get("clusterQueue", ""))
            lq = self.store.read(R.LOCAL_QUEUE.type, wl["spec"].get("queueName", ""), wl["metadata"]["namespace"])
            cq_policy = ((cq or {}).get("spec") or {}).get("stopPolicy") or "None"
            lq_policy = ((lq or {}).get("spec") or {}).get("stopPolicy") or "None"
            admitted = is_true(wl, "Admitted")
            if cq_policy == "HoldAndDrain" or (cq_policy == "Hold" and not admitted):
                self._evict(wl, "ClusterQueueStopped", "The ClusterQueue is stopped")
            elif lq_policy == "HoldAndDrain" or (lq_policy == "Hold" and not admitted):
                self._evict(wl, "LocalQueueStopped", "The LocalQueue is stopped")

    # -- MultiKueue ----------------------------------------------------------------

    def _multikueue_clusters(self) -> None:
        """AdmissionCheck Active from its config's clusters (kueue.md A1.7)."""
        now = self.now()
        for ac in sorted(self.store.items(R.ADMISSION_CHECK.type), key=lambda o: o["metadata"]["name"]):
            if (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE_CONTROLLER_NAME:
                if get_condition(ac, "Active") is None:
                    self.store.update(R.ADMISSION_CHECK.type, ac["metadata"]["name"], None,
                                      lambda o: set_condition(o, cond("Active", "True", "Active", "The admission check is active", now)))
                continue
            params = (ac.get("spec") or {}).get("parameters") or {}
            config = self.store.read(R.MULTIKUEUE_CONFIG.type, params.get("name", "")) if params.get("kind") == "MultiKueueConfig" else None
            if config is None:
                new = cond("Active", "False", "BadConfig", f"Cannot load the AdmissionChecks parameters: MultiKueueConfig {params.get('name')!r} not found", now)
            else:
                names = list((config.get("spec") or {}).get("clusters") or ())
                missing = [n for n in names if self.store.read(R.MULTIKUEUE_CLUSTER.type, n) is None]
                inactive = [n for n in names if n not in missing and not is_true(self.store.read(R.MULTIKUEUE_CLUSTER.type, n) or {}, "Active")]
                active = [n for n in names if n not in missing and n not in inactive]
                if not active:
                    new = cond("Active", "False", "NoUsableClusters", "No usable clusters: " + ", ".join(names), now)
                elif missing or inactive:
                    msg = "; ".join(p for p in (f"Missing clusters: {missing}" if missing else "", f"Inactive clusters: {inactive}" if inactive else "") if p)
                    new = cond("Active", "True", "SomeActiveClusters", msg, now)
                else:
                    new = cond("Active", "True", "Active", "The admission check is active", now)
            self.store.update(R.ADMISSION_CHECK.type, ac["metadata"]["name"], None, lambda o, new=new: set_condition(o, new))

    def set_multikueue_cluster_active(self, name: str, active: bool, message: str = "") -> None:
        """Fault injection: a worker stalls (or comes back)."""
        now = self.now()
        with self.lock:
            if active:
                new = cond("Active", "True", "Active", "Connected", now)
                self._worker_lost_at.pop(name, None)
            else:
                new = cond("Active", "False", "ClientConnectionFailed", message or "Get \"https://worker:6443/api\": dial tcp: i/o timeout", now)
                self._worker_lost_at.setdefault(name, now)
            obj = self.store.update(R.MULTIKUEUE_CLUSTER.type, name, None, lambda o: set_condition(o, new))
            if obj is not None:
                self._event(obj, "Normal" if active else "Warning", "Connected" if active else "ClientConnectionFailed", new["message"])

    def _multikueue_dispatch(self) -> None:
        now = self.now()
        for wl in sorted(self.store.items(R.WORKLOAD.type), key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"])):
            st = wl.get("status") or {}
            if not st.get("admission") or is_true(wl, "Finished"):
                continue
            cq = self.store.read(R.CLUSTER_QUEUE.type, st["admission"].get("clusterQueue", ""))
            ac = self._multikueue_check_of(cq or {})
            checks = {c.get("name"): c for c in st.get("admissionChecks") or ()}
            if ac is None:
                # non-MultiKueue checks in the simulation pass at once
                if checks and any(c.get("state") != "Ready" for c in checks.values()):
                    self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], self._all_checks_ready(now))
                continue
            name = ac["metadata"]["name"]
            config = self.store.read(R.MULTIKUEUE_CONFIG.type, ((ac.get("spec") or {}).get("parameters") or {}).get("name", "")) or {}
            workers = sorted(n for n in (config.get("spec") or {}).get("clusters") or ()
                             if is_true(self.store.read(R.MULTIKUEUE_CLUSTER.type, n) or {}, "Active"))
            state = (checks.get(name) or {}).get("state", "Pending")
            cluster_name = st.get("clusterName")
            if cluster_name:
                lost_at = self._worker_lost_at.get(cluster_name)
                if lost_at is not None and (now - lost_at).total_seconds() >= self.settings.worker_lost_timeout_seconds:
                    self._evict(wl, "AdmissionCheck", f"Reserving remote lost: worker {cluster_name}")
                continue
            if state != "Pending":
                continue
            if not workers:
                def waiting(obj: dict) -> None:
                    for c in obj["status"].get("admissionChecks") or ():
                        if c.get("name") == name:
                            c["message"] = "No usable clusters: every MultiKueueCluster is inactive"
                self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], waiting)
                continue
            if not st.get("nominatedClusterNames"):
                self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"],
                                  lambda o, w=workers: o["status"].__setitem__("nominatedClusterNames", list(w)))
                continue
            winner = workers[0]

            def place(obj: dict, winner=winner, name=name) -> None:
                obj["status"]["clusterName"] = winner
                obj["status"].pop("nominatedClusterNames", None)
                for c in obj["status"].get("admissionChecks") or ():
                    if c.get("name") == name:
                        c.update(state="Ready", message=f'The workload got reservation on "{winner}"', lastTransitionTime=format_time(now))
                if all(c.get("state") == "Ready" for c in obj["status"].get("admissionChecks") or ()):
                    set_condition(obj, cond("Admitted", "True", "Admitted", "The workload is admitted", now))
            new = self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"], place)
            if new is not None:
                self._event(new, "Normal", "Admitted", f"Admitted; dispatched to worker {winner}")

    @staticmethod
    def _all_checks_ready(now: datetime) -> Callable[[dict], None]:
        def ready(obj: dict) -> None:
            for c in obj["status"].get("admissionChecks") or ():
                c.update(state="Ready", lastTransitionTime=format_time(now))
            set_condition(obj, cond("Admitted", "True", "Admitted", "The workload is admitted", now))
        return ready

    # -- Job / RayJob controllers and pods ----------------------------------------

    def _start_admitted(self) -> None:
        now = self.now()
        for wl in sorted(self.store.items(R.WORKLOAD.type), key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"])):
            if not is_true(wl, "Admitted") or is_true(wl, "Finished"):
                continue
            owner = self._owner_of(wl)
            if owner is None:
                continue
            rt, obj = owner
            if not (obj.get("spec") or {}).get("suspend"):
                continue
            remote = (wl.get("status") or {}).get("clusterName")
            meta = obj["metadata"]
            if rt is R.JOB.type:
                def unsuspend(o: dict, remote=remote) -> None:
                    o["spec"]["suspend"] = False
                    st = o.setdefault("status", {})
                    st.setdefault("startTime", format_time(now))
                    if remote:  # MultiKueue: status mirrored from the worker; no local pods
                        st["active"] = int(o["spec"].get("parallelism") or 1)
                self.store.update(rt, meta["name"], meta["namespace"], unsuspend)
                if not remote:
                    self._create_job_pods(obj, wl)
            else:
                cluster = f"{meta['name']}-raycluster-{self.store.rand5()}"

                def unsuspend_ray(o: dict, cluster=cluster) -> None:
                    o["spec"]["suspend"] = False
                    st = o.setdefault("status", {})
                    st["rayClusterName"] = st.get("rayClusterName") or cluster
                    st["jobId"] = st.get("jobId") or f"{meta['name']}-{self.store.rand5()}"
                    st["jobDeploymentStatus"] = "Running"
                    st["jobStatus"] = "RUNNING"
                    st.setdefault("startTime", format_time(now))
                new = self.store.update(rt, meta["name"], meta["namespace"], unsuspend_ray)
                if not remote and new is not None:
                    self._create_ray_pods(new, wl)
            self._event(obj, "Normal", "Started", f"Admitted by clusterQueue {wl['status']['admission']['clusterQueue']}")

    def _pod(self, owner: dict, name: str, template: dict, labels: dict[str, str], flavors: Mapping[str, str], style: str) -> dict:
        meta = owner["metadata"]
        spec = copy.deepcopy(template.get("spec") or {})
        spec.setdefault("restartPolicy", "Never")
        node_selector = dict(spec.get("nodeSelector") or {})
        for flavor_name in set(flavors.values()):
            flavor = self.store.read(R.RESOURCE_FLAVOR.type, flavor_name) or {}
            node_selector.update((flavor.get("spec") or {}).get("nodeLabels") or {})
        if node_selector:
            spec["nodeSelector"] = node_selector
        all_labels = dict((template.get("metadata") or {}).get("labels") or {})
        all_labels.update(labels)
        all_labels["sim.tau-tui.io/owner-uid"] = meta["uid"]
        annotations = dict(meta.get("annotations") or {})
        # Like the Job controller, pods carry the template's annotations; scenarios may also set
        # simulator knobs on the owner object.
        pod_annotations = dict((template.get("metadata") or {}).get("annotations") or {})
        pod_annotations.update({k: v for k, v in annotations.items() if k.startswith(SIM_PREFIX)})
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": meta["namespace"], "labels": all_labels,
                         "annotations": pod_annotations
                         | {LOG_STYLE_ANNOTATION: annotations.get(LOG_STYLE_ANNOTATION, style) if style == "train" else style},
                         "ownerReferences": [{"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"), "name": meta["name"],
                                              "uid": meta["uid"], "controller": True}]},
            "spec": spec,
            "status": {"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable", "waiting for a node", self.now())]},
        }

    def _create_job_pods(self, job: dict, wl: dict) -> None:
        meta = job["metadata"]
        flavors = {}
        for psa in (wl["status"]["admission"].get("podSetAssignments") or ()):
            flavors.update(psa.get("flavors") or {})
        count = int((job.get("spec") or {}).get("parallelism") or 1)
        for index in range(count):
            name = f"{meta['name']}-{index}-{self.store.rand5()}" if count > 1 else f"{meta['name']}-{self.store.rand5()}"
            labels = {"job-name": meta["name"], "batch.kubernetes.io/job-name": meta["name"],
                      "controller-uid": meta["uid"], "batch.kubernetes.io/job-completion-index": str(index)}
            self.store.put(R.POD.type, self._pod(job, name, (job.get("spec") or {}).get("template") or {}, labels, flavors, "train"))

    def _create_ray_pods(self, rayjob: dict, wl: dict) -> None:
        cluster = rayjob["status"]["rayClusterName"]
        rcs = (rayjob.get("spec") or {}).get("rayClusterSpec") or {}
        psa = {p.get("name"): p.get("flavors") or {} for p in wl["status"]["admission"].get("podSetAssignments") or ()}
        head_tpl = (rcs.get("headGroupSpec") or {}).get("template") or {}
        self.store.put(R.POD.type, self._pod(rayjob, f"{cluster}-head-{self.store.rand5()}", head_tpl,
                                             {"ray.io/cluster": cluster, "ray.io/node-type": "head", "ray.io/group": "headgroup"},
                                             psa.get("head", {}), "ray-head"))
        for group in rcs.get("workerGroupSpecs") or ():
            gname = group.get("groupName", "workers")
            for _ in range(int(group.get("replicas") or 1)):
                self.store.put(R.POD.type, self._pod(rayjob, f"{cluster}-{gname}-worker-{self.store.rand5()}", group.get("template") or {},
                                                     {"ray.io/cluster": cluster, "ray.io/node-type": "worker", "ray.io/group": gname},
                                                     psa.get(gname, {}), "ray-worker"))

    def _node_free(self) -> dict[str, dict[str, float]]:
        free: dict[str, dict[str, float]] = {}
        for node in self.store.items(R.NODE.type):
            alloc = (node.get("status") or {}).get("allocatable") or {}
            free[node["metadata"]["name"]] = {k: parse_quantity(v) for k, v in alloc.items() if is_gpu_resource(k)}
        for pod in self.store.items(R.POD.type):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or node not in free:
                continue
            for res, value in pod_requests(pod.get("spec") or {}).items():
                if is_gpu_resource(res):
                    free[node][res] = free[node].get(res, 0.0) - value
        return free

    def _schedulable_nodes(self) -> list[dict]:
        out = []
        for node in sorted(self.store.items(R.NODE.type), key=lambda n: n["metadata"]["name"]):
            if (node.get("spec") or {}).get("unschedulable"):
                continue
            if not is_true(node, "Ready") or is_true(node, "GPUUnhealthy"):
                continue
            out.append(node)
        return out

    def _bind_and_run_pods(self) -> None:
        now = self.now()
        pending = [p for p in self.store.items(R.POD.type)
                   if (p.get("status") or {}).get("phase") == "Pending" or ((p.get("status") or {}).get("phase") == "Running" and False)]
        if not pending:
            return
        free = None
        nodes = None
        by_selector: dict[tuple, list[str]] = {}
        for pod in sorted(pending, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
            meta = pod["metadata"]
            spec = pod.get("spec") or {}
            if spec.get("nodeName"):
                self._run_pod(pod, now)
                continue
            if free is None:
                free, nodes = self._node_free(), self._schedulable_nodes()
            need = {k: v for k, v in pod_requests(spec).items() if is_gpu_resource(k) and v}
            selector = spec.get("nodeSelector") or {}
            sel_key = tuple(sorted(selector.items()))
            candidates = by_selector.get(sel_key)
            if candidates is None:
                candidates = by_selector[sel_key] = [
                    n["metadata"]["name"] for n in nodes or ()
                    if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())]
            target = None
            for node_name in candidates:
                slot = free.get(node_name, {})
                if all(slot.get(r, 0.0) >= v - 1e-9 for r, v in need.items()):
                    target = node_name
                    break
            if target is None:
                continue
            for r, v in need.items():
                free[target][r] -= v
            if need and all(v <= 1e-9 for v in free[target].values()):
                for lst in by_selector.values():
                    if target in lst:
                        lst.remove(target)

            def bind(o: dict, target=target) -> None:
                o["spec"]["nodeName"] = target
                set_condition(o, cond("PodScheduled", "True", "Scheduled", f"assigned to {target}", now))
            new = self.store.update(R.POD.type, meta["name"], meta["namespace"], bind)
            if new is not None:
                self._event(new, "Normal", "Scheduled", f"Successfully assigned {meta['namespace']}/{meta['name']} to {target}")

    def _run_pod(self, pod: dict, now: datetime) -> None:
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        ann = meta.get("annotations") or {}
        restarts = int(ann.get(RESTARTS_ANNOTATION) or 0)
        style = ann.get("sim.tau-tui.io/log-style", "train")
        start_ns = to_ns(now)
        interval = int(self.settings.log_interval_seconds * 1_000_000_000)
        seed_base = int(meta["uid"].replace("-", "")[:8], 16)
        for i, c in enumerate(spec.get("containers") or ()):
            key = (meta["namespace"], meta["name"], c["name"], False)
            log = self.logs.get(key) or ContainerLog(style=style if i == 0 else "train", seed=seed_base + i,
                                                     start_ns=start_ns, interval_ns=interval)
            self.logs[key] = log
            if restarts:
                prev = ContainerLog(style=style, seed=seed_base + 100 + i, start_ns=start_ns - 120 * 1_000_000_000, interval_ns=interval)
                prev.stop(start_ns - 1_000_000_000, ("RuntimeError: CUDA error: uncorrectable ECC error encountered",
                                                     "Traceback ends; container exited with code 1"))
                self.logs[(meta["namespace"], meta["name"], c["name"], True)] = prev
        for c in spec.get("initContainers") or ():
            key = (meta["namespace"], meta["name"], c["name"], False)
            init = ContainerLog(style="init", seed=seed_base + 50, start_ns=start_ns - 10 * 1_000_000_000, interval_ns=1_000_000_000)
            init.stop(start_ns - 1, ("init done",))
            self.logs[key] = init

        def run(o: dict) -> None:
            st = o["status"]
            st["phase"] = "Running"
            st["startTime"] = format_time(now)
            st["containerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": restarts,
                                        "state": {"running": {"startedAt": format_time(now)}}} for c in spec.get("containers") or ()]
            if spec.get("initContainers"):
                st["initContainerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": 0,
                                                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}} for c in spec["initContainers"]]
            set_condition(o, cond("Ready", "True", "", "", now))
        self.store.update(R.POD.type, meta["name"], meta["namespace"], run)
        self._event(pod, "Normal", "Started", f"Started container {((spec.get('containers') or [{}])[0]).get('name')}")

    def _pod_deadline(self, pod: dict) -> datetime | None:
        st = pod.get("status") or {}
        start = parse_time(st.get("startTime"))
        if start is None:
            return None
        ann = pod["metadata"].get("annotations") or {}
        duration = float(ann.get(DURATION_ANNOTATION) or self.settings.default_duration_seconds)
        return start + timedelta(seconds=duration)

    def _finish_pods(self, now: datetime) -> None:
        for pod in sorted(self.store.items(R.POD.type), key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            deadline = self._pod_deadline(pod)
            if deadline is None or now < deadline:
                continue
            outcome = (pod["metadata"].get("annotations") or {}).get(OUTCOME_ANNOTATION, "Succeeded")
            self.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], outcome, at=deadline)

    def terminate_pod(self, namespace: str, name: str, outcome: str = "Succeeded", message: str = "", at: datetime | None = None) -> None:
        """End a pod's containers (used by completion and by GPU faults)."""
        at = at or self.now()
        pod = self.store.read(R.POD.type, name, namespace)
        if pod is None:
            return
        failed = outcome == "Failed"
        last = ("training finished; final checkpoint written",) if not failed else (
            message or "RuntimeError: NCCL error: unhandled system error", "process exited with code 1")
        for c in (pod.get("spec") or {}).get("containers") or ():
            log = self.logs.get((namespace, name, c["name"], False))
            if log is not None and not log.finished:
                log.stop(to_ns(at), last)

        def end(o: dict) -> None:
            st = o["status"]
            st["phase"] = "Failed" if failed else "Succeeded"
            st["containerStatuses"] = [{"name": c["name"], "ready": False, "restartCount": cs.get("restartCount", 0),
                                        "state": {"terminated": {"exitCode": 1 if failed else 0,
                                                                 "reason": "Error" if failed else "Completed",
                                                                 "finishedAt": format_time(at)}}}
                                       for c, cs in zip(o["spec"].get("containers") or (), st.get("containerStatuses") or [{}] * 99)]
            set_condition(o, cond("Ready", "False", "PodCompleted", "", at))
        self.store.update(R.POD.type, name, namespace, end)

    def _finish_jobs(self) -> None:
        now = self.now()
        pods_by_owner: dict[str, list[dict]] = {}
        for pod in self.store.items(R.POD.type):
            uid = (pod["metadata"].get("labels") or {}).get("sim.tau-tui.io/owner-uid")
            if uid:
                pods_by_owner.setdefault(uid, []).append(pod)
        for wl in sorted(self.store.items(R.WORKLOAD.type), key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"])):
            if not is_true(wl, "Admitted") or is_true(wl, "Finished"):
                continue
            owner = self._owner_of(wl)
            if owner is None:
                continue
            rt, obj = owner
            if (obj.get("spec") or {}).get("suspend"):
                continue
            remote = (wl.get("status") or {}).get("clusterName")
            if remote:
                start = parse_time((obj.get("status") or {}).get("startTime"))
                duration = float((obj["metadata"].get("annotations") or {}).get(DURATION_ANNOTATION) or self.settings.default_duration_seconds)
                if remote in self._worker_lost_at or start is None or now < start + timedelta(seconds=duration):
                    continue
                outcome = (obj["metadata"].get("annotations") or {}).get(OUTCOME_ANNOTATION, "Succeeded")
            else:
                pods = pods_by_owner.get(obj["metadata"]["uid"], [])
                phases = [(p.get("status") or {}).get("phase") for p in pods]
                running = sum(1 for p in phases if p == "Running")
                if rt is R.JOB.type and (obj.get("status") or {}).get("active") != running:
                    self.store.update(rt, obj["metadata"]["name"], obj["metadata"]["namespace"],
                                      lambda o, n=running: o.setdefault("status", {}).__setitem__("active", n))
                if not pods or any(p not in ("Succeeded", "Failed") for p in phases):
                    continue
                outcome = "Failed" if "Failed" in phases else "Succeeded"
            self._complete(rt, obj, wl, outcome, now, pods_by_owner.get(obj["metadata"]["uid"], []))

    def _complete(self, rt: ResourceType, owner: dict, wl: dict, outcome: str, now: datetime, pods: list[dict]) -> None:
        meta = owner["metadata"]
        failed = outcome == "Failed"
        if rt is R.JOB.type:
            def done(o: dict) -> None:
                st = o.setdefault("status", {})
                n = len(pods) or int(o["spec"].get("parallelism") or 1)
                st.update(active=0, succeeded=0 if failed else n, failed=1 if failed else 0)
                if not failed:
                    st["completionTime"] = format_time(now)
                    set_condition(o, cond("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", now))
                    set_condition(o, cond("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", now))
                else:
                    set_condition(o, cond("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", now))
                    set_condition(o, cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", now))
        else:
            def done(o: dict) -> None:
                st = o.setdefault("status", {})
                st.update(jobStatus="FAILED" if failed else "SUCCEEDED", jobDeploymentStatus="Failed" if failed else "Complete",
                          endTime=format_time(now))
        self.store.update(rt, meta["name"], meta["namespace"], done)
        message = "Job finished successfully" if not failed else "Job failed: BackoffLimitExceeded"
        self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"],
                          lambda o: set_condition(o, cond("Finished", "True", "Failed" if failed else "Succeeded", message, now)))
        self._event(owner, "Warning" if failed else "Normal", "Failed" if failed else "Completed", message)

    # -- queue status ---------------------------------------------------------------

    def _queue_status(self) -> None:
        now = self.now()
        usage = self._usage()
        admitted_usage: dict[str, dict[tuple[str, str], float]] = {}
        counts_cq: dict[str, list[int]] = {}
        counts_lq: dict[tuple[str, str], list[int]] = {}
        lq_usage: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
        lq_cq = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
                 for lq in self.store.items(R.LOCAL_QUEUE.type)}
        for wl in self.store.items(R.WORKLOAD.type):
            if is_true(wl, "Finished"):
                continue
            spec = wl.get("spec") or {}
            lq_key = (wl["metadata"]["namespace"], spec.get("queueName") or "")
            adm = (wl.get("status") or {}).get("admission")
            cq = adm.get("clusterQueue") if adm and is_true(wl, "QuotaReserved") else lq_cq.get(lq_key)
            if cq is None:
                continue
            slot_cq = counts_cq.setdefault(cq, [0, 0, 0])
            slot_lq = counts_lq.setdefault(lq_key, [0, 0, 0])
            if is_true(wl, "QuotaReserved"):
                slot_cq[1] += 1
                slot_lq[1] += 1
                if is_true(wl, "Admitted"):
                    slot_cq[2] += 1
                    slot_lq[2] += 1
                    au = admitted_usage.setdefault(cq, {})
                    lu = lq_usage.setdefault(lq_key, {})
                    for psa in adm.get("podSetAssignments") or ():
                        for res, value in (psa.get("resourceUsage") or {}).items():
                            k = ((psa.get("flavors") or {}).get(res, ""), res)
                            au[k] = au.get(k, 0.0) + parse_quantity(value)
                            lu[k] = lu.get(k, 0.0) + parse_quantity(value)
            elif self._pending(wl):
                slot_cq[0] += 1
                slot_lq[0] += 1

        def flavor_list(cq_obj: Mapping[str, Any], amounts: Mapping[tuple[str, str], float]) -> list[dict]:
            out = []
            for group in (cq_obj.get("spec") or {}).get("resourceGroups") or ():
                for flavor in group.get("flavors") or ():
                    fname = flavor.get("name", "")
                    out.append({"name": fname, "resources": [
                        {"name": r, "total": f"{amounts.get((fname, r), 0.0):g}", "borrowed": "0"}
                        for r in group.get("coveredResources") or ()]})
            return out

        for cq in sorted(self.store.items(R.CLUSTER_QUEUE.type), key=lambda o: o["metadata"]["name"]):
            name = cq["metadata"]["name"]
            pend, reserving, admitted = counts_cq.get(name, [0, 0, 0])
            policy = (cq.get("spec") or {}).get("stopPolicy") or "None"
            missing_flavors = [f.get("name") for g in (cq.get("spec") or {}).get("resourceGroups") or () for f in g.get("flavors") or ()
                               if self.store.read(R.RESOURCE_FLAVOR.type, f.get("name", "")) is None]
            missing_checks = [c for c in self._check_names(cq) if self.store.read(R.ADMISSION_CHECK.type, c) is None]
            if policy != "None":
                active = cond("Active", "False", "Stopped", "The ClusterQueue is stopped", now, cq["metadata"].get("generation"))
            elif missing_flavors:
                active = cond("Active", "False", "FlavorNotFound", f"Can't admit new workloads: references missing ResourceFlavor(s): {missing_flavors}", now, cq["metadata"].get("generation"))
            elif missing_checks:
                active = cond("Active", "False", "AdmissionCheckNotFound", f"Can't admit new workloads: references missing AdmissionCheck(s): {missing_checks}", now, cq["metadata"].get("generation"))
            else:
                active = cond("Active", "True", "Ready", "Can admit new workloads", now, cq["metadata"].get("generation"))

            def cq_status(o: dict, active=active, pend=pend, reserving=reserving, admitted=admitted, name=name) -> None:
                st = o.setdefault("status", {})
                st.update(pendingWorkloads=pend, reservingWorkloads=reserving, admittedWorkloads=admitted,
                          flavorsReservation=flavor_list(o, usage.get(name, {})),
                          flavorsUsage=flavor_list(o, admitted_usage.get(name, {})))
                set_condition(o, active)
            self.store.update(R.CLUSTER_QUEUE.type, name, None, cq_status)

        for lq in sorted(self.store.items(R.LOCAL_QUEUE.type), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            key = (lq["metadata"]["namespace"], lq["metadata"]["name"])
            pend, reserving, admitted = counts_lq.get(key, [0, 0, 0])
            policy = (lq.get("spec") or {}).get("stopPolicy") or "None"
            cq = self.store.read(R.CLUSTER_QUEUE.type, (lq.get("spec") or {}).get("clusterQueue", ""))
            if policy != "None":
                active = cond("Active", "False", "Stopped", "LocalQueue is stopped", now)
            elif cq is None:
                active = cond("Active", "False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue", now)
            elif not is_true(cq, "Active"):
                active = cond("Active", "False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue", now)
            else:
                active = cond("Active", "True", "Ready", "Can submit new workloads to localQueue", now)

            def lq_status(o: dict, active=active, pend=pend, reserving=reserving, admitted=admitted, key=key, cq=cq) -> None:
                st = o.setdefault("status", {})
                st.update(pendingWorkloads=pend, reservingWorkloads=reserving, admittedWorkloads=admitted,
                          flavorsUsage=flavor_list(cq or {}, lq_usage.get(key, {})))
                set_condition(o, active)
            self.store.update(R.LOCAL_QUEUE.type, key[1], key[0], lq_status)

    # -- GPU node agent -------------------------------------------------------------

    def _agent_heartbeat(self, now: datetime) -> None:
        if self._last_heartbeat is not None and (now - self._last_heartbeat).total_seconds() < self.settings.heartbeat_seconds:
            return
        self._last_heartbeat = now
        stamp = format_time(now)
        for name in sorted(self.agent_nodes):
            def beat(o: dict) -> None:
                for c in (o.get("status") or {}).get("conditions") or ():
                    if c.get("type") in ("GPUUnhealthy", "GPUDegraded"):
                        c["lastHeartbeatTime"] = stamp
            self.store.update(R.NODE.type, name, None, beat)
            def report(o: dict, name=name) -> None:
                status = o.setdefault("status", {})
                status["observedAt"] = stamp
                self._refresh_telemetry(name, status)
            self.store.update(R.GPU_HEALTH.type, name, None, report)

    def gpu_fault(self, node: str, verdict: str = "unhealthy", code: str = "Xid79", message: str = "GPU has fallen off the bus (Xid 79)",
                  gpu_index: int = 0, kill_pods: bool = True) -> None:
        """Fault injection: the agent reports a GPU fault on ``node``."""
        now = self.now()
        stamp = format_time(now)
        with self.lock:
            unhealthy = verdict == "unhealthy"
            self.agent_nodes.add(node)

            def mark(o: dict) -> None:
                set_condition(o, dict(cond("GPUUnhealthy", "True" if unhealthy else "False",
                                           code if unhealthy else "NoUnhealthyGPUs", message if unhealthy else "no unhealthy GPU", now),
                                      lastHeartbeatTime=stamp))
                set_condition(o, dict(cond("GPUDegraded", "True" if not unhealthy else "False",
                                           code if not unhealthy else "NoDegradedGPUs", message if not unhealthy else "no degraded GPU", now),
                                      lastHeartbeatTime=stamp))
                if unhealthy:
                    taints = list(o.setdefault("spec", {}).get("taints") or [])
                    if not any(t.get("key") == "tau-tui.io/gpu-unhealthy" for t in taints):
                        taints.append({"key": "tau-tui.io/gpu-unhealthy", "effect": "NoSchedule", "value": code})
                    o["spec"]["taints"] = taints
            obj = self.store.update(R.NODE.type, node, None, mark)
            if obj is None:
                return
            self._put_health(node, verdict, [(gpu_index, code, message)], now)
            self._event(obj, "Warning", "GPUUnhealthy" if unhealthy else "GPUDegraded", f"gpu{gpu_index}: {message}")
            if unhealthy and kill_pods:
                for pod in sorted(self.store.items(R.POD.type), key=lambda p: p["metadata"]["name"]):
                    if (pod.get("spec") or {}).get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running":
                        self.terminate_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], "Failed",
                                           f"RuntimeError: CUDA error: unspecified launch failure ({code} on {node} gpu{gpu_index})")

    def gpu_recover(self, node: str) -> None:
        now = self.now()
        stamp = format_time(now)
        with self.lock:
            def heal(o: dict) -> None:
                set_condition(o, dict(cond("GPUUnhealthy", "False", "NoUnhealthyGPUs", "no unhealthy GPU", now), lastHeartbeatTime=stamp))
                set_condition(o, dict(cond("GPUDegraded", "False", "NoDegradedGPUs", "no degraded GPU", now), lastHeartbeatTime=stamp))
                o.setdefault("spec", {})["taints"] = [t for t in o["spec"].get("taints") or () if t.get("key") != "tau-tui.io/gpu-unhealthy"]
            self.store.update(R.NODE.type, node, None, heal)
            self._put_health(node, "healthy", [], now)

    def _gpu_telemetry(self, node: str, index: int, busy: bool, problem: tuple[str, str] | None) -> dict | None:
        """What the agent's NVML reader reports for one GPU, in the agent's
        shape (``GpuTelemetry`` dumped by alias, unset fields left out).
        Deterministic per node and GPU; a GPU that fell off the bus reads nothing."""
        code = problem[0] if problem else ""
        if code in ("Xid79", "Xid74"):  # NVML cannot reach the device
            return None
        digest = hashlib.sha256(f"{node}/{index}".encode()).digest()
        total = 80 * 1024**3
        sbe = 214 if "Ecc" in code or "ECC" in code else digest[3] % 3
        telemetry = GpuTelemetry(
            utilization_gpu=85 + digest[0] % 15 if busy else 0,
            memory_used_bytes=int(total * (0.72 + digest[1] % 20 / 100)) if busy else 512 * 1024**2,
            memory_total_bytes=total,
            temperature_c=float((64 if busy else 36) + digest[2] % 12 + (20 if code == "ThermalSlowdown" else 0)),
            temperature_slowdown_c=87.0,
            power_w=float((520 if busy else 70) + digest[4] % 90),
            power_limit_w=700.0,
            clock_events=["HwThermalSlowdown"] if code == "ThermalSlowdown" else [],
            ecc_volatile_sbe=sbe,
            ecc_volatile_dbe=1 if code == "Xid48" else 0,
            ecc_aggregate_dbe=1 if code == "Xid48" else 0,
            remap_pending=False,
            remap_failure=False,
            pcie_replay_count=digest[5] % 4,
            persistence_mode=True,
            mig_enabled=False,
        )
        return telemetry.model_dump(by_alias=True, mode="json", exclude_none=True)

    def _busy_gpus(self, node: str) -> int:
        """GPUs requested by running pods bound to ``node``."""
        busy = 0.0
        for pod in self.store.items(R.POD.type):
            if (pod.get("spec") or {}).get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running":
                busy += sum(v for k, v in pod_requests(pod.get("spec") or {}).items() if k in GPU_RESOURCE_NAMES[:1])
        return int(busy)

    def _refresh_telemetry(self, node: str, status: dict) -> None:
        """The agent's periodic report: utilisation and memory follow the pods on the node."""
        busy = self._busy_gpus(node)
        for gpu in status.get("gpus") or ():
            index = int(gpu.get("index", 0))
            reasons = gpu.get("reasons") or []
            problem = (reasons[0].get("code", ""), reasons[0].get("message", "")) if reasons else None
            telemetry = self._gpu_telemetry(node, index, index < busy, problem)
            if telemetry is None:
                gpu.pop("telemetry", None)
            else:
                gpu["telemetry"] = telemetry

    def _put_health(self, node: str, verdict: str, problems: list[tuple[int, str, str]], now: datetime) -> None:
        node_obj = self.store.read(R.NODE.type, node) or {}
        alloc = (node_obj.get("status") or {}).get("capacity") or {}
        count = int(sum(parse_quantity(v) for k, v in alloc.items() if k in GPU_RESOURCE_NAMES[:1])) or 8
        product = ((node_obj.get("metadata") or {}).get("labels") or {}).get("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")
        model = product.replace("-", " ")
        bad = {i: (code, msg) for i, code, msg in problems}
        busy = self._busy_gpus(node)
        gpus = []
        for i in range(count):
            if i in bad:
                code, msg = bad[i]
                gpu = {"index": i, "uuid": f"GPU-{node}-{i:02d}", "name": model, "verdict": verdict,
                       "reasons": [{"code": code, "severity": verdict, "action": "RESET_GPU" if verdict == "unhealthy" else "NONE",
                                    "message": msg, "since": format_time(now)}]}
            else:
                gpu = {"index": i, "uuid": f"GPU-{node}-{i:02d}", "name": model, "verdict": "healthy", "reasons": []}
            telemetry = self._gpu_telemetry(node, i, i < busy, bad.get(i))
            if telemetry is not None:
                gpu["telemetry"] = telemetry
            gpus.append(gpu)
        obj = {"apiVersion": R.GPU_HEALTH.type.api_version, "kind": R.GPU_HEALTH.type.kind,
               "metadata": {"name": node, "labels": {"tau-tui.io/gpu-health-managed": "true"}},
               "status": {"nodeName": node, "verdict": verdict, "reasons": [], "gpus": gpus, "observedAt": format_time(now),
                          "nvmlAvailable": True, "driverVersion": "550.90.07", "gpuCount": count, "expectedGpuCount": count}}
        existing = self.store.read(R.GPU_HEALTH.type, node)
        if existing is None:
            self.store.put(R.GPU_HEALTH.type, obj)
        else:
            self.store.update(R.GPU_HEALTH.type, node, None, lambda o: o.__setitem__("status", obj["status"]))

    # -- Tau controller ------------------------------------------------------------

    def _tau_status(self) -> None:
        if self.tau_profiles is None:
            return
        from tau_tui.core.cluster.sim.taucluster import resolved_tau_cluster_status

        tc = self.store.read(R.TAU_CLUSTER.type, "cluster")
        if tc is None:
            return
        status = resolved_tau_cluster_status(self, tc, self.now())
        self.store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o.__setitem__("status", status))

    # -- logs ------------------------------------------------------------------------

    def open_container_log(self, request: LogChunkRequest) -> SimLogReader:
        with self.lock:
            pod = self.store.read(R.POD.type, request.pod, request.namespace)
            if pod is None:
                raise ApiFailure(404, "NotFound", f'pods "{request.pod}" not found')
            names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or ()] + \
                    [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or ()]
            if request.container not in names:
                raise ApiFailure(400, "BadRequest", f"container {request.container} is not valid for pod {request.pod}")
            log = self.logs.get((request.namespace, request.pod, request.container, request.previous))
            if log is None:
                if request.previous:
                    raise ApiFailure(400, "BadRequest", f'previous terminated container "{request.container}" in pod "{request.pod}" not found')
                if (pod.get("status") or {}).get("phase") == "Pending":
                    raise ApiFailure(400, "BadRequest", f'container "{request.container}" in pod "{request.pod}" is waiting to start: ContainerCreating')
                log = self.logs.setdefault((request.namespace, request.pod, request.container, False), ContainerLog(finished=True))
            key = (request.namespace, request.pod, request.container)

            def done() -> bool:
                current = self.store.read(R.POD.type, key[1], key[0])
                return current is None or log.finished or request.previous
            return SimLogReader(log, request, self.lock, self.store.changed, lambda: to_ns(self.now()),
                                lambda: self.log_break_generation, done)

    def write_log(self, namespace: str, pod: str, container: str, text: str, newline: bool = True, at: datetime | None = None) -> None:
        """Append to a container log directly (tests, scripted scenarios)."""
        with self.lock:
            log = self.logs.setdefault((namespace, pod, container, False), ContainerLog(start_ns=1 << 62))
            log.write(to_ns(at or self.now()), text, newline)
            self.store.changed.notify_all()

    def break_log_streams(self) -> None:
        """Fault injection: every open log stream fails with a connection reset."""
        with self.lock:
            self.log_break_generation += 1
            self.store.changed.notify_all()


class RealtimeTicker(threading.Thread):
    """Ticks a simulation against the wall clock (``tau-tui --demo``)."""

    def __init__(self, world: SimulatedCluster, interval: float = 1.0, on_tick: Callable[[], None] | None = None):
        super().__init__(name="tau-sim-ticker", daemon=True)
        self.world = world
        self.interval = interval
        self.on_tick = on_tick
        self._stop = threading.Event()

    def run(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            started = time.monotonic()
            self.world.tick()
            if self.on_tick is not None:
                self.on_tick()
            # A big scenario may tick slower than the interval: keep the UI
            # thread room by waiting at least twice the tick's own cost.
            wait = max(self.interval, 2 * (time.monotonic() - started))

    def stop(self) -> None:
        self._stop.set()
