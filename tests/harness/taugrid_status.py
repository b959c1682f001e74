"""A stand-in for TauGrid's status writer (tau-core's observer) on the T3 manager.

The harness runs no TauGrid controller. This writes `TauCluster/cluster` status the way tau-core
does (taugrid.md §3.3, §4.1), computed here from the raw Kueue objects read with the kubernetes
client, never through tau-tui's own evaluation (`tau_tui.core.operations.multikueue`), which is
what the MultiKueue tests check:

* `MultiKueueReady` follows the seed's rule ("a correctly controlled and active AdmissionCheck,
  its referenced MultiKueueConfig, and at least one active MultiKueueCluster must all resolve"),
  step by step as `multikueue_prerequisites.go` does: the AdmissionChecks whose controllerName is
  exactly kueue.x-k8s.io/multikueue; the first one that is Active=True, names a MultiKueueConfig
  that exists and lists a MultiKueueCluster with Active=True gives True, reason Ready; otherwise
  False, reason PrerequisitesNotReady, with the sorted issues.
* each declared profile is resolved (its LocalQueues, ClusterQueues, flavors, topologies and
  priority classes) with the sub-conditions of §3.3 and `Ready` at the TauCluster's generation;
  a multiKueue profile is ExecutionReady only when every backing ClusterQueue uses MultiKueue
  checks alone, each Active, and MultiKueueReady is True.

Only the profile-set hash comes from tau-tui (`compute_profile_set_hash`): it is the client's
gate format, which any writer must match byte for byte.

`StatusWriter.running()` republishes on a short interval in a background thread while a CLI
runs (bounded by a count of rounds, stopped when the block ends).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tau_tui.core.runconfig.profiles import compute_profile_set_hash

KUEUE = ("kueue.x-k8s.io", "v1beta2")
TAU = ("tau.azure.com", "v1alpha1")
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
TAUCLUSTER = "cluster"
#: How often the background writer republishes, and how many rounds it runs at most (about 40 min).
REPUBLISH_SECONDS = 1.0
MAX_ROUNDS = 2400


def _condition(obj: dict | None, cond_type: str) -> dict | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or () if c.get("type") == cond_type), None)


def _true(obj: dict | None, cond_type: str) -> bool:
    return (_condition(obj, cond_type) or {}).get("status") == "True"


class StatusWriter:
    """Writes TauCluster/cluster status on the manager behind `api_client`."""

    def __init__(self, api_client: k8s.ApiClient):
        self.custom = k8s.CustomObjectsApi(api_client)
        self.scheduling = k8s.SchedulingV1Api(api_client)
        self.rounds = 0
        self.errors: list[str] = []

    # ----- raw reads ---------------------------------------------------------------
    def _cluster_object(self, plural: str, name: str) -> dict | None:
        try:
            return self.custom.get_cluster_custom_object(*KUEUE, plural, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def _local_queue(self, namespace: str, name: str) -> dict | None:
        try:
            return self.custom.get_namespaced_custom_object(*KUEUE, namespace, "localqueues", name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def _priority_class_exists(self, name: str) -> bool:
        try:
            self.scheduling.read_priority_class(name)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True

    # ----- MultiKueueReady ---------------------------------------------------------
    def multikueue_ready(self) -> tuple[str, str, str]:
        """(status, reason, message) of MultiKueueReady from the raw objects (the seed's rule)."""
        checks = sorted((ac for ac in self.custom.list_cluster_custom_object(*KUEUE, "admissionchecks")["items"]
                         if (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER),
                        key=lambda ac: ac["metadata"]["name"])
        if not checks:
            return "False", "PrerequisitesNotReady", f"no AdmissionCheck uses controller {MULTIKUEUE_CONTROLLER}"
        issues = []
        for check in checks:
            name = check["metadata"]["name"]
            if not _true(check, "Active"):
                issues.append(f"AdmissionCheck {name} is not Active")
                continue
            params = (check.get("spec") or {}).get("parameters") or {}
            if (params.get("apiGroup"), params.get("kind")) != ("kueue.x-k8s.io", "MultiKueueConfig") or not params.get("name"):
                issues.append(f"AdmissionCheck {name} does not reference a MultiKueueConfig")
                continue
            config = self._cluster_object("multikueueconfigs", params["name"])
            clusters = ((config or {}).get("spec") or {}).get("clusters") or []
            if config is None or not clusters:
                issues.append(f"AdmissionCheck {name}: MultiKueueConfig {params['name']} "
                              + ("not found" if config is None else "lists no clusters"))
                continue
            if not any(_true(self._cluster_object("multikueueclusters", c), "Active") for c in clusters):
                issues.append(f"AdmissionCheck {name}: no MultiKueueCluster of {', '.join(clusters)} is Active")
                continue
            return "True", "Ready", f"AdmissionCheck {name!r} has an active MultiKueue config and worker"
        return "False", "PrerequisitesNotReady", "; ".join(sorted(issues))

    # ----- profiles ----------------------------------------------------------------
    def _is_multikueue_check(self, name: str) -> bool:
        check = self._cluster_object("admissionchecks", name)
        return check is not None and (check.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER

    def resolve_profile(self, declared: dict, spec: dict, generation: int, mk_ready: bool, now: str) -> dict:
        namespaces = list((declared.get("applicability") or {}).get("namespaces") or ())
        queue = declared.get("defaultLocalQueue") or ""
        if not namespaces:  # a global profile resolves through the shared LocalQueues
            namespaces = [q.get("namespace") for q in (spec.get("queues") or {}).get("sharedLocalQueues") or ()]
        local_queues, missing_lqs = [], []
        for ns in namespaces:
            lq = self._local_queue(ns, queue)
            if lq is None:
                missing_lqs.append(f"{ns}/{queue}")
            else:
                local_queues.append({"namespace": ns, "name": queue, "clusterQueue": (lq.get("spec") or {}).get("clusterQueue", "")})
        cq_names = sorted({q["clusterQueue"] for q in local_queues if q["clusterQueue"]})
        cqs = {name: self._cluster_object("clusterqueues", name) for name in cq_names}
        inactive_cqs = [name for name, cq in cqs.items() if not _true(cq, "Active")]
        flavor_names = sorted({f.get("name") for cq in cqs.values() for group in ((cq or {}).get("spec") or {}).get("resourceGroups") or ()
                               for f in group.get("flavors") or () if f.get("name")})
        flavors = {name: self._cluster_object("resourceflavors", name) for name in flavor_names}
        missing_flavors = [name for name, flavor in flavors.items() if flavor is None]
        topology_names = sorted({(f.get("spec") or {}).get("topologyName") for f in flavors.values() if f and (f.get("spec") or {}).get("topologyName")})
        missing_topologies = [t for t in topology_names if self._cluster_object("topologies", t) is None]
        priorities = declared.get("priorities") or {}
        wpc, ppc = priorities.get("workloadPriorityClassName"), priorities.get("podPriorityClassName")
        missing_priorities = []
        if not declared.get("disableDefaultPriorities"):
            if wpc and self._cluster_object("workloadpriorityclasses", wpc) is None:
                missing_priorities.append(f"WorkloadPriorityClass {wpc}")
            if ppc and not self._priority_class_exists(ppc):
                missing_priorities.append(f"PriorityClass {ppc}")
        execution = ("True", "Ready", "single-cluster")
        if declared.get("executionTarget") == "multiKueue":
            wiring = []
            for name, cq in cqs.items():
                strategy = ((cq or {}).get("spec") or {}).get("admissionChecksStrategy") or {}
                checks = [c.get("name") for c in strategy.get("admissionChecks") or ()] + list(((cq or {}).get("spec") or {}).get("admissionChecks") or ())
                if not checks or not all(self._is_multikueue_check(c) and _true(self._cluster_object("admissionchecks", c), "Active") for c in checks):
                    wiring.append(f"ClusterQueue {name} does not use only Active MultiKueue checks ({checks})")
            if wiring or not cqs:
                execution = ("False", "MultiKueueWiringNotReady", "; ".join(wiring) or "no backing ClusterQueue")
            elif not mk_ready:
                execution = ("False", "PrerequisitesNotReady", "MultiKueueReady is not True")
            else:
                execution = ("True", "Ready", "MultiKueue wiring and prerequisites ready")
        subs = [
            ("LocalQueuesResolved", not missing_lqs and bool(local_queues), "missing: " + ", ".join(missing_lqs) if missing_lqs else "resolved"),
            ("ClusterQueuesReady", bool(cqs) and not inactive_cqs, "not Active: " + ", ".join(inactive_cqs) if inactive_cqs else "Active"),
            ("ExecutionReady", execution[0] == "True", execution[2]),
            ("ResourceFlavorsReady", not missing_flavors, "missing: " + ", ".join(missing_flavors) if missing_flavors else "present"),
            ("TopologiesReady", not missing_topologies, "missing: " + ", ".join(missing_topologies) if missing_topologies else "present"),
            ("PriorityClassesReady", not missing_priorities, "missing: " + ", ".join(missing_priorities) if missing_priorities else "present"),
        ]
        conditions = [{"type": kind, "status": "True" if ok else "False",
                       "reason": (execution[1] if kind == "ExecutionReady" else (kind if ok else f"{kind.removesuffix('Ready').removesuffix('Resolved')}NotReady")),
                       "message": message, "observedGeneration": generation, "lastTransitionTime": now} for kind, ok, message in subs]
        ready = all(ok for _, ok, _ in subs)
        conditions.append({"type": "Ready", "status": "True" if ready else "False",
                           "reason": "WorkloadProfileReady" if ready else "WorkloadProfileNotReady",
                           "message": "all sub-conditions are True" if ready else "; ".join(f"{k}: {m}" for k, ok, m in subs if not ok),
                           "observedGeneration": generation, "lastTransitionTime": now})
        return {**declared, "localQueues": local_queues, "clusterQueues": cq_names, "resourceFlavors": flavor_names,
                "topologies": topology_names, "workloadPriorityClasses": [wpc] if wpc else [],
                "podPriorityClasses": [ppc] if ppc else [], "conditions": conditions}

    # ----- the status ----------------------------------------------------------------
    def publish(self) -> dict:
        """Compute and write TauCluster/cluster status once; returns what was written."""
        tc = self.custom.get_cluster_custom_object(*TAU, "clusters", TAUCLUSTER)
        generation = tc["metadata"]["generation"]
        spec = tc.get("spec") or {}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        mk_status, mk_reason, mk_message = self.multikueue_ready()
        profiles = [self.resolve_profile(p, spec, generation, mk_status == "True", now) for p in spec.get("workloadProfiles") or ()]
        all_ready = all(_true({"status": p}, "Ready") for p in profiles)
        set_condition = (("True", "NoWorkloadProfiles", "no workload profiles are declared") if not profiles
                         else ("True", "WorkloadProfilesReady", "all workload profiles are ready") if all_ready
                         else ("False", "WorkloadProfilesNotReady", "some workload profiles are not ready"))
        status = {
            "observedGeneration": generation,
            "workloadProfiles": {"observedGeneration": generation, "observed": True, "ready": bool(profiles) and all_ready,
                                 "drifted": False, "profileSetHash": compute_profile_set_hash(profiles), "profiles": profiles},
            "conditions": [
                {"type": "WorkloadProfilesReady", "status": set_condition[0], "reason": set_condition[1],
                 "message": set_condition[2], "observedGeneration": generation, "lastTransitionTime": now},
                {"type": "MultiKueueReady", "status": mk_status, "reason": mk_reason, "message": mk_message,
                 "observedGeneration": generation, "lastTransitionTime": now}],
        }
        self.custom.patch_cluster_custom_object_status(*TAU, "clusters", TAUCLUSTER, {"status": status})
        self.rounds += 1
        return status

    @contextmanager
    def running(self, interval: float = REPUBLISH_SECONDS, max_rounds: int = MAX_ROUNDS) -> Iterator[StatusWriter]:
        """Republish every `interval` seconds in a background thread, at most `max_rounds` times,
        until the block ends. An API error (the manager busy) is kept in `errors` and retried."""
        stop = threading.Event()

        def loop() -> None:
            for _ in range(max_rounds):
                try:
                    self.publish()
                except Exception as err:  # noqa: BLE001  (kept for the test to show; the next round retries)
                    self.errors = (self.errors + [f"{type(err).__name__}: {str(err)[:200]}"])[-20:]
                if stop.wait(interval):
                    return

        thread = threading.Thread(target=loop, name="taugrid-status-writer", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=30)
