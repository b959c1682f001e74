"""The garbage collector in the simulation: deleting a Job, RayJob or
Workload deletes the Workloads and pods it owns."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.sim.controllers.base import Controller

R = ResourceKind
#: A pod's terminationGracePeriodSeconds when its spec does not say (the Kubernetes default).
DEFAULT_GRACE_SECONDS = 30


class GarbageCollector(Controller):
    def on_delete(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Garbage collection by owner, as the GC controller does."""
        uid = (obj.get("metadata") or {}).get("uid")
        ns = (obj.get("metadata") or {}).get("namespace")
        if rt in (R.JOB.type, R.RAY_JOB.type, R.WORKLOAD.type):
            for dep_rt in (R.WORKLOAD.type, R.POD.type):
                for dep in list(self.store.items(dep_rt, ns)):
                    refs = (dep.get("metadata") or {}).get("ownerReferences") or ()
                    labels = (dep.get("metadata") or {}).get("labels") or {}
                    if any(r.get("uid") == uid for r in refs) or (dep_rt is R.POD.type and labels.get("sim.tau-tui.io/owner-uid") == uid):
                        if dep_rt is R.POD.type and self._terminate_gracefully(dep):
                            continue
                        self.store.remove(dep_rt, dep["metadata"]["name"], ns)

    def _terminate_gracefully(self, pod: dict[str, Any]) -> bool:
        """A running pod on a node keeps its GPUs until its grace period ends (the kubelet then removes
        it); as the API server does, ``deletionTimestamp`` is the end of that period."""
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed") or not (pod.get("spec") or {}).get("nodeName"):
            return False
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return True
        grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
        until = format_time(self.now() + timedelta(seconds=grace))

        def mark(o: dict[str, Any]) -> None:
            o["metadata"]["deletionTimestamp"] = until
            o["metadata"]["deletionGracePeriodSeconds"] = grace

        self.store.update(R.POD.type, pod["metadata"]["name"], pod["metadata"].get("namespace"), mark)
        return True
