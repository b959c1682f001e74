"""The Job and RayJob controllers in the simulation: unsuspend admitted
owners and create their pods from the templates, suspend evicted ones, and
complete them when their pods (or, under MultiKueue, the worker) finish."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.sim.annotations import (
    DURATION_ANNOTATION,
    LOG_STYLE_ANNOTATION,
    OUTCOME_ANNOTATION,
    SIM_PREFIX,
)
from tau_tui.core.sim.conditions import cond, set_condition
from tau_tui.core.sim.controllers.base import Controller
from tau_tui.core.sim.store import SimStore

R = ResourceKind


def owner_of(store: SimStore, wl: Mapping[str, Any]) -> tuple[ResourceType, dict[str, Any]] | None:
    for ref in (wl.get("metadata") or {}).get("ownerReferences") or ():
        rt = R.JOB.type if ref.get("kind") == "Job" else R.RAY_JOB.type if ref.get("kind") == "RayJob" else None
        if rt is not None:
            owner = store.read(rt, ref.get("name", ""), wl["metadata"].get("namespace"))
            if owner is not None and owner["metadata"].get("uid") == ref.get("uid"):
                return rt, owner
    return None


class JobController(Controller):
    def suspend_owner(self, rt: ResourceType, owner: dict[str, Any]) -> None:
        meta = owner["metadata"]

        def suspend(obj: dict[str, Any]) -> None:
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

    # -- Job / RayJob controllers and pods ----------------------------------------

    def _admitted_workloads(self) -> list[dict[str, Any]]:
        """Admitted, unfinished Workloads by namespace and name (filtered before sorting: most are not)."""
        admitted = [wl for wl, facts in self.world.kueue.workloads_with_facts() if facts.admitted and not facts.finished]
        return sorted(admitted, key=lambda w: (w["metadata"]["namespace"], w["metadata"]["name"]))

    def start_admitted(self) -> None:
        now = self.now()
        for wl in self._admitted_workloads():
            owner = owner_of(self.store, wl)
            if owner is None:
                continue
            rt, obj = owner
            if not (obj.get("spec") or {}).get("suspend"):
                continue
            remote = (wl.get("status") or {}).get("clusterName")
            meta = obj["metadata"]
            if rt is R.JOB.type:
                def unsuspend(o: dict[str, Any], remote: str | None = remote) -> None:
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

                def unsuspend_ray(o: dict[str, Any], cluster: str = cluster, meta: dict[str, Any] = meta) -> None:
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
            self.event(obj, "Normal", "Started", f"Admitted by clusterQueue {wl['status']['admission']['clusterQueue']}")

    def _pod(self, owner: dict[str, Any], name: str, template: dict[str, Any], labels: dict[str, str], flavors: Mapping[str, str], style: str) -> dict[str, Any]:
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

    def _create_job_pods(self, job: dict[str, Any], wl: dict[str, Any]) -> None:
        meta = job["metadata"]
        flavors: dict[str, str] = {}
        for psa in (wl["status"]["admission"].get("podSetAssignments") or ()):
            flavors.update(psa.get("flavors") or {})
        count = int((job.get("spec") or {}).get("parallelism") or 1)
        for index in range(count):
            name = f"{meta['name']}-{index}-{self.store.rand5()}" if count > 1 else f"{meta['name']}-{self.store.rand5()}"
            labels = {"job-name": meta["name"], "batch.kubernetes.io/job-name": meta["name"],
                      "controller-uid": meta["uid"], "batch.kubernetes.io/job-completion-index": str(index)}
            self.store.put(R.POD.type, self._pod(job, name, (job.get("spec") or {}).get("template") or {}, labels, flavors, "train"))

    def _create_ray_pods(self, rayjob: dict[str, Any], wl: dict[str, Any]) -> None:
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

    def finish_jobs(self) -> None:
        now = self.now()
        pods_by_owner: dict[str, list[dict[str, Any]]] = {}
        for pod in self.store.items(R.POD.type):
            uid = (pod["metadata"].get("labels") or {}).get("sim.tau-tui.io/owner-uid")
            if uid:
                pods_by_owner.setdefault(uid, []).append(pod)
        for wl in self._admitted_workloads():
            owner = owner_of(self.store, wl)
            if owner is None:
                continue
            rt, obj = owner
            if (obj.get("spec") or {}).get("suspend"):
                continue
            remote = (wl.get("status") or {}).get("clusterName")
            if remote:
                start = parse_time((obj.get("status") or {}).get("startTime"))
                duration = float((obj["metadata"].get("annotations") or {}).get(DURATION_ANNOTATION) or self.settings.default_duration_seconds)
                if remote in self.world.multikueue.worker_lost_at or start is None or now < start + timedelta(seconds=duration):
                    continue
                outcome = (obj["metadata"].get("annotations") or {}).get(OUTCOME_ANNOTATION, "Succeeded")
            else:
                pods = pods_by_owner.get(obj["metadata"]["uid"], [])
                phases = [(p.get("status") or {}).get("phase") for p in pods]
                running = sum(1 for p in phases if p == "Running")
                if rt is R.JOB.type and (obj.get("status") or {}).get("active") != running:
                    def set_active(o: dict[str, Any], running: int = running) -> None:
                        o.setdefault("status", {})["active"] = running
                    self.store.update(rt, obj["metadata"]["name"], obj["metadata"]["namespace"], set_active)
                if not pods or any(p not in ("Succeeded", "Failed") for p in phases):
                    continue
                outcome = "Failed" if "Failed" in phases else "Succeeded"
            self._complete(rt, obj, wl, outcome, now, pods_by_owner.get(obj["metadata"]["uid"], []))

    def _complete(self, rt: ResourceType, owner: dict[str, Any], wl: dict[str, Any], outcome: str, now: datetime, pods: list[dict[str, Any]]) -> None:
        meta = owner["metadata"]
        failed = outcome == "Failed"
        if rt is R.JOB.type:
            def done(o: dict[str, Any]) -> None:
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
            def done(o: dict[str, Any]) -> None:
                st = o.setdefault("status", {})
                st.update(jobStatus="FAILED" if failed else "SUCCEEDED", jobDeploymentStatus="Failed" if failed else "Complete",
                          endTime=format_time(now))
        self.store.update(rt, meta["name"], meta["namespace"], done)
        message = "Job finished successfully" if not failed else "Job failed: BackoffLimitExceeded"
        self.store.update(R.WORKLOAD.type, wl["metadata"]["name"], wl["metadata"]["namespace"],
                          lambda o: set_condition(o, cond("Finished", "True", "Failed" if failed else "Succeeded", message, now)))
        self.event(owner, "Warning" if failed else "Normal", "Failed" if failed else "Completed", message)
