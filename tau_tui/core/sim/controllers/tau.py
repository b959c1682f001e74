"""The simulated Tau controller: resolves ``TauCluster/cluster``
``spec.workloadProfiles`` into ``status.workloadProfiles`` the way the real
observer does (taugrid.md §3.3, §4.1), so the profile gate in
:mod:`tau_tui.core.runconfig.profiles` accepts it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.controllers.kueue import check_names
from tau_tui.core.sim.controllers.world_view import ControllerWorld

R = ResourceKind
PRIORITY_CLASS = ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
TOPOLOGY = ResourceType("kueue.x-k8s.io", "v1beta2", "topologies", "Topology", False)


def profile_set_hash(profiles: list[dict[str, Any]]) -> str:
    """The hook that computes ``status.workloadProfiles.profileSetHash``: the
    same function the client gate recomputes (tau_tui.core.runconfig.profiles)."""
    from tau_tui.core.runconfig.profiles import compute_profile_set_hash

    return compute_profile_set_hash(profiles)


def _cond(type_: str, ok: bool, reason_ok: str, reason_bad: str, message: str, now: str, generation: int) -> dict[str, Any]:
    return {"type": type_, "status": "True" if ok else "False", "reason": reason_ok if ok else reason_bad,
            "message": message, "lastTransitionTime": now, "observedGeneration": generation}


def _is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    conditions: list[Mapping[str, Any]] = ((obj or {}).get("status") or {}).get("conditions") or []
    for c in conditions:
        if c.get("type") == type_:
            return c.get("status") == "True"
    return False


def multikueue_ready(world: ControllerWorld, generation: int, now: str) -> dict[str, Any]:
    """TauCluster MultiKueueReady (taugrid.md §4.1)."""
    store = world.store
    checks = sorted((ac for ac in store.items(R.ADMISSION_CHECK.type)
                     if (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER_NAME),
                    key=lambda o: o["metadata"]["name"])
    if not checks:
        return _cond("MultiKueueReady", False, "Ready", "PrerequisitesNotReady",
                     "no AdmissionCheck uses controller kueue.x-k8s.io/multikueue", now, generation)
    issues = []
    for ac in checks:
        name = ac["metadata"]["name"]
        params = (ac.get("spec") or {}).get("parameters") or {}
        if not _is_true(ac, "Active"):
            issues.append(f"AdmissionCheck {name} is not Active")
            continue
        if params.get("apiGroup") != "kueue.x-k8s.io" or params.get("kind") != "MultiKueueConfig":
            issues.append(f"AdmissionCheck {name} parameters are not a MultiKueueConfig")
            continue
        config = store.read(R.MULTIKUEUE_CONFIG.type, params.get("name", ""))
        if config is None:
            issues.append(f"MultiKueueConfig {params.get('name')} not found")
            continue
        clusters = (config.get("spec") or {}).get("clusters") or ()
        if not any(_is_true(store.read(R.MULTIKUEUE_CLUSTER.type, c), "Active") for c in clusters):
            issues.append(f"MultiKueueConfig {params.get('name')} has no Active MultiKueueCluster")
            continue
        return _cond("MultiKueueReady", True, "Ready", "PrerequisitesNotReady",
                     f'AdmissionCheck "{name}" has an active MultiKueue config and worker', now, generation)
    return _cond("MultiKueueReady", False, "Ready", "PrerequisitesNotReady", "; ".join(sorted(issues)), now, generation)


def _resolve_profile(world: ControllerWorld, tc: Mapping[str, Any], declared: Mapping[str, Any], mk_ready: bool,
                     now: str, generation: int) -> dict[str, Any]:
    store = world.store
    spec = tc.get("spec") or {}
    profile = {k: v for k, v in declared.items()}
    namespaces = list((declared.get("applicability") or {}).get("namespaces") or ())
    lq_name = declared.get("defaultLocalQueue", "")
    if not namespaces:
        shared = [q for q in (spec.get("queues") or {}).get("sharedLocalQueues") or () if q.get("name") == lq_name]
        namespaces = [q.get("namespace", "") for q in shared]
    local_queues, missing_lq = [], []
    for ns in sorted(set(namespaces)):
        lq = store.read(R.LOCAL_QUEUE.type, lq_name, ns)
        if lq is None:
            missing_lq.append(f"{ns}/{lq_name}")
        else:
            local_queues.append({"namespace": ns, "name": lq_name, "clusterQueue": (lq.get("spec") or {}).get("clusterQueue", "")})
    cq_names = sorted({q["clusterQueue"] for q in local_queues})
    cqs = {n: store.read(R.CLUSTER_QUEUE.type, n) for n in cq_names}
    flavors = sorted({f.get("name", "") for cq in cqs.values() if cq for g in (cq.get("spec") or {}).get("resourceGroups") or ()
                      for f in g.get("flavors") or ()})
    topologies = sorted({(store.read(R.RESOURCE_FLAVOR.type, f) or {}).get("spec", {}).get("topologyName") for f in flavors} - {None})
    priorities = declared.get("priorities") or {}
    wpcs = [priorities["workloadPriorityClassName"]] if priorities.get("workloadPriorityClassName") else []
    ppcs = [priorities["podPriorityClassName"]] if priorities.get("podPriorityClassName") else []
    profile.update(localQueues=local_queues, clusterQueues=cq_names, resourceFlavors=flavors, topologies=topologies,
                   workloadPriorityClasses=wpcs, podPriorityClasses=ppcs)

    lq_ok = bool(local_queues) and not missing_lq
    cq_bad = [n for n, cq in cqs.items() if cq is None or not _is_true(cq, "Active")]
    flavor_bad = [f for f in flavors if store.read(R.RESOURCE_FLAVOR.type, f) is None]
    topo_bad = [t for t in topologies if store.read(TOPOLOGY, t) is None]
    prio_bad = [w for w in wpcs if store.read(R.WORKLOAD_PRIORITY_CLASS.type, w) is None] + \
               [p for p in ppcs if store.read(PRIORITY_CLASS, p) is None]
    if declared.get("executionTarget") == "multiKueue":
        only_mk = all(cq is not None and (check_names(cq) and all(
            (store.read(R.ADMISSION_CHECK.type, c) or {}).get("spec", {}).get("controllerName") == MULTIKUEUE_CONTROLLER_NAME
            for c in check_names(cq))) for cq in cqs.values()) and bool(cqs)
        if not only_mk:
            execution = _cond("ExecutionReady", False, "Ready", "MultiKueueWiringNotReady",
                              "every ClusterQueue must reference only MultiKueue AdmissionChecks", now, generation)
        elif not mk_ready:
            execution = _cond("ExecutionReady", False, "Ready", "PrerequisitesNotReady", "TauCluster MultiKueueReady is not True", now, generation)
        else:
            execution = _cond("ExecutionReady", True, "Ready", "", "MultiKueue execution is ready", now, generation)
    else:
        execution = _cond("ExecutionReady", True, "Ready", "", "single-cluster execution", now, generation)
    conds = [
        _cond("LocalQueuesResolved", lq_ok, "Resolved", "LocalQueueNotFound",
              "resolved" if lq_ok else f"missing LocalQueue(s): {', '.join(missing_lq) or lq_name}", now, generation),
        _cond("ClusterQueuesReady", bool(cqs) and not cq_bad, "Ready", "ClusterQueueNotReady",
              "ready" if cqs and not cq_bad else f"not Active: {', '.join(cq_bad) or 'none resolved'}", now, generation),
        execution,
        _cond("ResourceFlavorsReady", not flavor_bad, "Ready", "ResourceFlavorNotFound",
              "ready" if not flavor_bad else f"missing: {', '.join(flavor_bad)}", now, generation),
        _cond("TopologiesReady", not topo_bad, "Ready", "TopologyNotFound",
              "ready" if not topo_bad else f"missing: {', '.join(topo_bad)}", now, generation),
        _cond("PriorityClassesReady", not prio_bad, "Ready", "PriorityClassNotFound",
              "ready" if not prio_bad else f"missing: {', '.join(prio_bad)}", now, generation),
    ]
    ready = all(c["status"] == "True" for c in conds)
    failing = [c["type"] for c in conds if c["status"] != "True"]
    conds.append(_cond("Ready", ready, "WorkloadProfileReady", "WorkloadProfileNotReady",
                       "profile is ready" if ready else f"not ready: {', '.join(failing)}", now, generation))
    profile["conditions"] = conds
    return profile


def resolved_tau_cluster_status(world: ControllerWorld, tc: Mapping[str, Any], now_dt: datetime) -> dict[str, Any]:
    now = format_time(now_dt)
    generation = int((tc.get("metadata") or {}).get("generation") or 1)
    old = tc.get("status") or {}
    declared = list((tc.get("spec") or {}).get("workloadProfiles") or ())
    mk = multikueue_ready(world, generation, now)
    profiles = [_resolve_profile(world, tc, p, mk["status"] == "True", now, generation) for p in declared]
    all_ready = all(any(c["type"] == "Ready" and c["status"] == "True" for c in p["conditions"]) for p in profiles)
    if not declared:
        set_cond = _cond("WorkloadProfilesReady", True, "NoWorkloadProfiles", "", "no workload profiles declared", now, generation)
    else:
        set_cond = _cond("WorkloadProfilesReady", all_ready, "WorkloadProfilesReady", "WorkloadProfilesNotReady",
                         "all workload profiles are ready" if all_ready else "some workload profiles are not ready", now, generation)
    conditions = [
        _cond("Ready", True, "Ready", "NotReady", "TauCluster reconciled", now, generation),
        _cond("QueuesReady", True, "Ready", "NotReady", "queues observed", now, generation),
        set_cond,
        mk,
    ]
    # Keep transition times stable when nothing changed (no spurious updates).
    old_conds = {c.get("type"): c for c in old.get("conditions") or ()}
    for c in conditions:
        prev = old_conds.get(c["type"])
        if prev is not None and prev.get("status") == c["status"]:
            c["lastTransitionTime"] = prev.get("lastTransitionTime", c["lastTransitionTime"])
    for p in profiles:
        old_p = next((q for q in (old.get("workloadProfiles") or {}).get("profiles") or () if q.get("name") == p.get("name")), None)
        old_pc = {c.get("type"): c for c in (old_p or {}).get("conditions") or ()}
        for c in p["conditions"]:
            prev = old_pc.get(c["type"])
            if prev is not None and prev.get("status") == c["status"]:
                c["lastTransitionTime"] = prev.get("lastTransitionTime", c["lastTransitionTime"])
    return {
        "phase": "Ready" if all_ready else "Degraded",
        "observedGeneration": generation,
        "workloadProfiles": {
            "observedGeneration": generation,
            "observed": len(profiles),
            "ready": sum(1 for p in profiles if any(c["type"] == "Ready" and c["status"] == "True" for c in p["conditions"])),
            "drifted": 0,
            "profileSetHash": profile_set_hash(profiles),
            "profiles": profiles,
        },
        "conditions": conditions,
    }


class TauController(Controller):
    def __init__(self, world: ControllerWorld):
        super().__init__(world)
        #: The TauCluster's declared workload profiles; None = no Tau controller in this scenario.
        self.profiles: list[dict[str, Any]] | None = None

    def update_status(self) -> None:
        if self.profiles is None:
            return
        tc = self.store.read(R.TAU_CLUSTER.type, "cluster")
        if tc is None:
            return
        status = resolved_tau_cluster_status(self.world, tc, self.now())
        self.store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o.__setitem__("status", status))
