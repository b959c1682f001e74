"""The garbage collector in the simulation: deleting a Job, RayJob or
Workload deletes the Workloads and pods it owns."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.sim.controllers.base import Controller

R = ResourceKind


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
                        self.store.remove(dep_rt, dep["metadata"]["name"], ns)
