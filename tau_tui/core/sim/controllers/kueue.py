"""Kueue in the simulation: the job webhook and CRD rules, Workloads for
queued Jobs and RayJobs, quota reservation in queue order (the order the
visibility API reports as positions), eviction and stop policies, and the
ClusterQueue/LocalQueue status counters."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.convert import format_time, parse_quantity, pod_requests, queue_order_timestamp
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import QUEUE_NAME_LABEL
from tau_tui.core.sim.conditions import cond, is_true, set_condition
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.controllers.jobs import owner_of
from tau_tui.core.sim.controllers.multikueue import multikueue_check_of
from tau_tui.core.sim.controllers.workload_facts import WorkloadFacts, WorkloadFactsCache
from tau_tui.core.sim.controllers.world_view import ControllerWorld
from tau_tui.core.sim.pending_positions import PendingPositions

R = ResourceKind
MK_MANAGED_BY = "kueue.x-k8s.io/multikueue"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def workload_name(kind: str, group: str, owner_name: str, owner_uid: str) -> str:
    """Kueue's jobframework naming (kueue.md A2.2)."""
    prefix = f"{kind.lower()}-{owner_name}"[: 253 - 6]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()[:5]
    return f"{prefix}-{digest}"


def stop_policy(queue: Mapping[str, Any] | None) -> str:
    """A ClusterQueue's or LocalQueue's spec.stopPolicy; "None" when unset (or no queue)."""
    return ((queue or {}).get("spec") or {}).get("stopPolicy") or "None"


def check_names(cq: Mapping[str, Any]) -> list[str]:
    """The AdmissionChecks a ClusterQueue requires, in spec order."""
    return [r.get("name", "") for r in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ()]


class KueueController(Controller):
    def __init__(self, world: ControllerWorld):
        super().__init__(world)
        # Keyed (uid, resourceVersion) → order key, and ("req", uid, generation) → pod set requests.
        self._order_cache: dict[tuple[Any, ...], Any] = {}
        # The store revision the pending lists were built at: between changes the scheduler and
        # every visibility read (one per LocalQueue) share one build instead of scanning all workloads each.
        self._pending_at_revision: int | None = None
        self._pending_lists: dict[str, list[dict[str, Any]]] = {}
        self._positions: dict[str, PendingPositions] = {}
        self._facts = WorkloadFactsCache()

    # -- webhooks (create) ---------------------------------------------------

    def webhook(self, rt: ResourceType, obj: dict[str, Any]) -> None:
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
            if cq is not None and multikueue_check_of(self.store, cq) is not None and rt is R.JOB.type:
                spec.setdefault("managedBy", MK_MANAGED_BY)
        if rt is R.WORKLOAD.type:
            spec = obj.get("spec") or {}
            if len(spec.get("podSets") or ()) > 8:
                raise ApiFailure(422, "Invalid", "Workload is invalid: spec.podSets: at most 8 items")

    @staticmethod
    def validate(rt: ResourceType, obj: dict[str, Any]) -> None:
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

    # -- lookups ---------------------------------------------------------------

    def _cq_for_queue(self, namespace: str, lq_name: str) -> dict[str, Any] | None:
        lq = self.store.read(R.LOCAL_QUEUE.type, lq_name, namespace)
        if lq is None:
            return None
        return self.store.read(R.CLUSTER_QUEUE.type, (lq.get("spec") or {}).get("clusterQueue", ""))

    # -- Kueue: jobs -> workloads ----------------------------------------------

    def reconcile_owners(self) -> None:
        existing = {
            ((w["metadata"].get("labels") or {}).get(JOB_UID_LABEL)) for w in self.store.items(R.WORKLOAD.type)
        }
        for rt, kind, group in ((R.JOB.type, "Job", "batch"), (R.RAY_JOB.type, "RayJob", "ray.io")):
            # Only owners without a Workload are sorted (into a stable creation order): at 20,000 Jobs
            # sorting them all every tick cost more than the rest of this method.
            new = [o for o in self.store.items(rt) if o["metadata"]["uid"] not in existing
                   and (o["metadata"].get("labels") or {}).get(QUEUE_NAME_LABEL)]
            for owner in sorted(new, key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"])):
                queue = owner["metadata"]["labels"][QUEUE_NAME_LABEL]
                self.store.put(R.WORKLOAD.type, self._workload_for(owner, kind, group, queue))

    def _workload_for(self, owner: dict[str, Any], kind: str, group: str, queue: str) -> dict[str, Any]:
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

    def _order_key(self, wl: dict[str, Any]) -> tuple[Any, ...]:
        meta = wl["metadata"]
        cache_key = (meta["uid"], meta["resourceVersion"])
        hit: tuple[Any, ...] | None = self._order_cache.get(cache_key)
        if hit is None:
            spec = wl.get("spec") or {}
            boost = int((meta.get("annotations") or {}).get("kueue.x-k8s.io/priority-boost") or 0)
            ts = queue_order_timestamp(wl)
            hit = (-(int(spec.get("priority") or 0) + boost), ts.timestamp() if ts else 0.0, meta["uid"])
            if len(self._order_cache) > 200_000:
                self._order_cache.clear()
            self._order_cache[cache_key] = hit
        return hit

    def workloads_with_facts(self) -> list[tuple[dict[str, Any], WorkloadFacts]]:
        """Every Workload with what this controller reads from it, kept per stored version (see workload_facts)."""
        workloads = self.store.items(R.WORKLOAD.type)
        if len(self._facts) > 2 * len(workloads) + 1000:
            self._facts.keep_only({w["metadata"]["uid"] for w in workloads})
        of = self._facts.of
        return [(wl, of(wl)) for wl in workloads]

    def pending_by_cluster_queue(self) -> dict[str, list[dict[str, Any]]]:
        """Pending workloads per ClusterQueue in Kueue order (used by the
        scheduler and by the simulated visibility API).  Shared until the store
        changes: callers must not modify the lists."""
        if self._pending_at_revision != self.store.rv:
            self._pending_lists = self._build_pending_by_cluster_queue()
            self._pending_at_revision = self.store.rv
            self._positions = {}
        return self._pending_lists

    def pending_positions(self, cluster_queue: str) -> PendingPositions:
        """The positions of ``cluster_queue``'s pending Workloads, shared until the store changes."""
        lists = self.pending_by_cluster_queue()
        positions = self._positions.get(cluster_queue)
        if positions is None:
            positions = self._positions[cluster_queue] = PendingPositions.of(lists.get(cluster_queue, []))
        return positions

    def _build_pending_by_cluster_queue(self) -> dict[str, list[dict[str, Any]]]:
        lq_cq = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
                 for lq in self.store.items(R.LOCAL_QUEUE.type)}
        out: dict[str, list[dict[str, Any]]] = {}
        for wl, facts in self.workloads_with_facts():
            if not facts.pending:
                continue
            cq = lq_cq.get((facts.namespace, facts.queue_name))
            if cq:
                out.setdefault(cq, []).append(wl)
        for items in out.values():
            items.sort(key=self._order_key)
        return out

    def _usage(self) -> dict[str, dict[tuple[str, str], float]]:
        """Reserved quota per ClusterQueue: {(flavor, resource): amount}."""
        usage: dict[str, dict[tuple[str, str], float]] = {}
        for _wl, facts in self.workloads_with_facts():
            if facts.cluster_queue is None or facts.finished:
                continue
            slot = usage.setdefault(facts.cluster_queue, {})
            for key, amount in facts.usage:
                slot[key] = slot.get(key, 0.0) + amount
        return usage

    def _wl_requests(self, wl: Mapping[str, Any]) -> list[tuple[str, int, dict[str, float]]]:
        meta = wl["metadata"]
        key = ("req", meta["uid"], meta.get("generation"))
        hit: list[tuple[str, int, dict[str, float]]] | None = self._order_cache.get(key)
        if hit is None:
            hit = self._order_cache[key] = self._compute_requests(wl)
        return hit

    def _request_signature(self, wl: Mapping[str, Any]) -> tuple[Any, ...]:
        """The requests as one hashable value: equal requests fail to fit alike (see schedule)."""
        meta = wl["metadata"]
        key = ("sig", meta["uid"], meta.get("generation"))
        hit: tuple[Any, ...] | None = self._order_cache.get(key)
        if hit is None:
            hit = self._order_cache[key] = tuple((n, c, tuple(sorted(t.items()))) for n, c, t in self._wl_requests(wl))
        return hit

    @staticmethod
    def _compute_requests(wl: Mapping[str, Any]) -> list[tuple[str, int, dict[str, float]]]:
        out = []
        for ps in (wl.get("spec") or {}).get("podSets") or ():
            count = int(ps.get("count") or 1)
            per_pod = pod_requests(((ps.get("template") or {}).get("spec")) or {})
            out.append((ps.get("name", ""), count, {k: v * count for k, v in per_pod.items() if v}))
        return out

    def _assign_flavors(self, cq: Mapping[str, Any], wl: Mapping[str, Any], used: dict[tuple[str, str], float]) -> tuple[list[dict[str, Any]] | None, str]:
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

    def schedule(self) -> None:
        now = self.now()
        usage = self._usage()
        open_queues: dict[tuple[str, str], bool] = {}  # LocalQueue (namespace, name) → admits
        for cq_name, items in sorted(self.pending_by_cluster_queue().items()):
            cq = self.store.read(R.CLUSTER_QUEUE.type, cq_name)
            if cq is None or stop_policy(cq) != "None":
                continue
            strict = (cq.get("spec") or {}).get("queueingStrategy") == "StrictFIFO"
            used = usage.setdefault(cq_name, {})
            # Failures do not change usage, so identical requests fail identically
            # until something is admitted in this ClusterQueue.
            failed: dict[Any, str] = {}
            for wl in items:
                meta = wl["metadata"]
                facts = self._facts.of(wl)
                queue_key = (facts.namespace, facts.queue_name)
                if queue_key not in open_queues:
                    open_queues[queue_key] = self._queue_open(facts)
                if not open_queues[queue_key]:
                    continue
                if facts.requeue_at is not None and facts.requeue_at > now:
                    continue
                signature = self._request_signature(wl)
                if signature in failed:
                    assignments, problem = None, failed[signature]
                else:
                    assignments, problem = self._assign_flavors(cq, wl, used)
                    if assignments is None:
                        failed[signature] = problem
                    else:
                        failed.clear()
                if assignments is None:
                    if facts.quota_reserved != ("False", "Pending", problem):
                        def pending(obj: dict[str, Any], problem: str = problem) -> None:
                            set_condition(obj, cond("QuotaReserved", "False", "Pending", problem, now))
                        self.store.update(R.WORKLOAD.type, meta["name"], meta["namespace"], pending)
                    if strict:
                        break
                    continue
                checks = check_names(cq)

                def reserve(obj: dict[str, Any], assignments: list[dict[str, Any]] = assignments, checks: list[str] = checks,
                            cq_name: str = cq_name) -> None:
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
                    self.event(new, "Normal", "QuotaReserved", f"Quota reserved in ClusterQueue {cq_name}")
                    if not checks:
                        self.event(new, "Normal", "Admitted", f"Admitted by ClusterQueue {cq_name}")

    def _queue_open(self, facts: WorkloadFacts) -> bool:
        lq = self.store.read(R.LOCAL_QUEUE.type, facts.queue_name, facts.namespace)
        return lq is not None and stop_policy(lq) == "None"

    def evict(self, wl: dict[str, Any], reason: str, message: str, requeue: bool = True) -> None:
        now = self.now()
        meta = wl["metadata"]

        def evict(obj: dict[str, Any]) -> None:
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
        self.event(wl, "Normal", "EvictedDueTo" + reason, message)
        owner = owner_of(self.store, wl)
        if owner is not None:
            rt, obj = owner
            self.world.jobs.suspend_owner(rt, obj)

    def stop_policies(self) -> None:
        """Hold cancels reservations still waiting for checks; HoldAndDrain
        also evicts admitted workloads (kueue.md A1.2, A1.4)."""
        holding = [(wl, facts) for wl, facts in self.workloads_with_facts()
                   if facts.cluster_queue is not None and not facts.finished]
        for wl, facts in sorted(holding, key=lambda pair: (pair[1].namespace, pair[0]["metadata"]["name"])):
            cq = self.store.read(R.CLUSTER_QUEUE.type, facts.cluster_queue or "")
            lq = self.store.read(R.LOCAL_QUEUE.type, facts.queue_name, facts.namespace)
            cq_policy = stop_policy(cq)
            lq_policy = stop_policy(lq)
            admitted = is_true(wl, "Admitted")
            if cq_policy == "HoldAndDrain" or (cq_policy == "Hold" and not admitted):
                self.evict(wl, "ClusterQueueStopped", "The ClusterQueue is stopped")
            elif lq_policy == "HoldAndDrain" or (lq_policy == "Hold" and not admitted):
                self.evict(wl, "LocalQueueStopped", "The LocalQueue is stopped")

    # -- queue status ---------------------------------------------------------------

    def queue_status(self) -> None:
        now = self.now()
        usage = self._usage()
        admitted_usage: dict[str, dict[tuple[str, str], float]] = {}
        counts_cq: dict[str, list[int]] = {}
        counts_lq: dict[tuple[str, str], list[int]] = {}
        lq_usage: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
        lq_cq = {(lq["metadata"]["namespace"], lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
                 for lq in self.store.items(R.LOCAL_QUEUE.type)}
        for _wl, facts in self.workloads_with_facts():
            if facts.finished:
                continue
            lq_key = (facts.namespace, facts.queue_name)
            cq = facts.cluster_queue if facts.cluster_queue is not None else lq_cq.get(lq_key)
            if cq is None:
                continue
            slot_cq = counts_cq.setdefault(cq, [0, 0, 0])
            slot_lq = counts_lq.setdefault(lq_key, [0, 0, 0])
            if facts.reserved:
                slot_cq[1] += 1
                slot_lq[1] += 1
                if facts.admitted:
                    slot_cq[2] += 1
                    slot_lq[2] += 1
                    au = admitted_usage.setdefault(cq, {})
                    lu = lq_usage.setdefault(lq_key, {})
                    for k, amount in facts.usage:
                        au[k] = au.get(k, 0.0) + amount
                        lu[k] = lu.get(k, 0.0) + amount
            elif facts.pending:
                slot_cq[0] += 1
                slot_lq[0] += 1

        def flavor_list(cq_obj: Mapping[str, Any], amounts: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
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
            policy = stop_policy(cq)
            missing_flavors = [f.get("name") for g in (cq.get("spec") or {}).get("resourceGroups") or () for f in g.get("flavors") or ()
                               if self.store.read(R.RESOURCE_FLAVOR.type, f.get("name", "")) is None]
            missing_checks = [c for c in check_names(cq) if self.store.read(R.ADMISSION_CHECK.type, c) is None]
            if policy != "None":
                active = cond("Active", "False", "Stopped", "The ClusterQueue is stopped", now, cq["metadata"].get("generation"))
            elif missing_flavors:
                active = cond("Active", "False", "FlavorNotFound", f"Can't admit new workloads: references missing ResourceFlavor(s): {missing_flavors}", now, cq["metadata"].get("generation"))
            elif missing_checks:
                active = cond("Active", "False", "AdmissionCheckNotFound", f"Can't admit new workloads: references missing AdmissionCheck(s): {missing_checks}", now, cq["metadata"].get("generation"))
            else:
                active = cond("Active", "True", "Ready", "Can admit new workloads", now, cq["metadata"].get("generation"))

            def cq_status(o: dict[str, Any], active: dict[str, Any] = active, pend: int = pend, reserving: int = reserving,
                          admitted: int = admitted, name: str = name) -> None:
                st = o.setdefault("status", {})
                st.update(pendingWorkloads=pend, reservingWorkloads=reserving, admittedWorkloads=admitted,
                          flavorsReservation=flavor_list(o, usage.get(name, {})),
                          flavorsUsage=flavor_list(o, admitted_usage.get(name, {})))
                set_condition(o, active)
            self.store.update(R.CLUSTER_QUEUE.type, name, None, cq_status)

        for lq in sorted(self.store.items(R.LOCAL_QUEUE.type), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            key = (lq["metadata"]["namespace"], lq["metadata"]["name"])
            pend, reserving, admitted = counts_lq.get(key, [0, 0, 0])
            policy = stop_policy(lq)
            cq = self.store.read(R.CLUSTER_QUEUE.type, (lq.get("spec") or {}).get("clusterQueue", ""))
            if policy != "None":
                active = cond("Active", "False", "Stopped", "LocalQueue is stopped", now)
            elif cq is None:
                active = cond("Active", "False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue", now)
            elif not is_true(cq, "Active"):
                active = cond("Active", "False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue", now)
            else:
                active = cond("Active", "True", "Ready", "Can submit new workloads to localQueue", now)

            def lq_status(o: dict[str, Any], active: dict[str, Any] = active, pend: int = pend, reserving: int = reserving,
                          admitted: int = admitted, key: tuple[str, str] = key, cq: dict[str, Any] | None = cq) -> None:
                st = o.setdefault("status", {})
                st.update(pendingWorkloads=pend, reservingWorkloads=reserving, admittedWorkloads=admitted,
                          flavorsUsage=flavor_list(cq or {}, lq_usage.get(key, {})))
                set_condition(o, active)
            self.store.update(R.LOCAL_QUEUE.type, key[1], key[0], lq_status)
