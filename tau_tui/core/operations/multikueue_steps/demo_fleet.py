"""The MultiKueue fleet of ``tau-tui --demo``, its plans and its keyring, so every platform-owner
flow can be walked to the end on the demo.

* The fleet: the two lab workers the setup wizard connects (``lab-worker-1``, ``lab-worker-2``)
  and the demo's own MultiKueue workers (``westus3-worker``, ``eastus2-worker``, named by the
  scenario's MultiKueueClusters), each a simulated API server.  The demo's own are already set up:
  their credential Secrets are on the manager.  The demo's identity system has also made a new
  credential for each worker, offered as kubeconfig context ``<worker>-new`` (what a rotation takes).
* The plans: setup connects the lab workers; rotation may take any worker; the drain names the
  demo's own MultiKueue lane and every worker the manager routes to (a MultiKueueCluster exists,
  or a drain removed it), read when the drain opens, so its discovery finds nothing outside the plan.
* The keyring: :class:`DemoKeyring`, in memory, one per demo (it lives with the fleet).  Only the
  demo's environment hands it out; the app and the CLI on a cluster use the OS keyring or refuse.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import yaml

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.drain_discovery import REMOVED_ANNOTATION
from tau_tui.core.operations.multikueue_steps.plan import KUEUE_NAMESPACE, MultiKueuePlan, WorkerPlan
from tau_tui.core.operations.multikueue_steps.simulated_fleet import SimFleet, build_lab_fleet, lab_plan
from tau_tui.core.sim.world import SimulatedCluster

R = ResourceKind
LAB_WORKERS = ("lab-worker-1", "lab-worker-2")
DEMO_PLAN_SOURCE = "the demo's built-in plan"


class DemoKeyring:
    """A keyring that lives in memory for one demo: what the rotation and the drain keep while a
    credential is in flight.  Nothing is written anywhere; it is gone when the demo ends."""

    DESCRIPTION = "demo keyring, in memory: nothing is stored"

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def delete_password(self, service: str, username: str) -> None:
        del self.entries[(service, username)]


def _own_workers(manager: SimulatedCluster) -> list[tuple[str, str]]:
    """(worker, credential Secret name) of the MultiKueueClusters the demo scenario made."""
    out = []
    for mkc in manager.store.items(R.MULTIKUEUE_CLUSTER.type):
        source = ((mkc.get("spec") or {}).get("clusterSource") or {}).get("kubeConfig") or {}
        out.append((mkc["metadata"]["name"], str(source.get("location") or f"{mkc['metadata']['name']}-kubeconfig")))
    return sorted(out)


def build_demo_fleet(manager: SimulatedCluster) -> SimFleet:
    """The fleet of ``tau-tui --demo``: lab workers to set up, the demo's own workers already set up."""
    own = [(name, secret) for name, secret in _own_workers(manager) if name not in LAB_WORKERS]
    fleet = build_lab_fleet(manager, workers=(*LAB_WORKERS, *(name for name, _ in own)))
    for name, secret in own:
        kubeconfig = yaml.safe_dump(fleet.contexts[name], sort_keys=False).encode()
        manager.store.put(SECRET, {"metadata": {"name": secret, "namespace": KUEUE_NAMESPACE},
                                   "type": "Opaque", "data": {"kubeconfig": base64.b64encode(kubeconfig).decode()}})
    for name in fleet.workers:
        fleet.mint(name, context=f"{name}-new")  # the new credential a rotation takes
    fleet.demo_keyring = DemoKeyring()
    return fleet


def _routed_workers(manager: SimulatedCluster, fleet: SimFleet) -> list[str]:
    """Fleet workers the manager routes to now, or that a drain removed (its step 5 still revokes them)."""
    with manager.lock:
        clusters = {o["metadata"]["name"] for o in manager.store.items(R.MULTIKUEUE_CLUSTER.type)}
        tau_cluster = manager.store.read(R.TAU_CLUSTER.type, "cluster") or {}
    raw = ((tau_cluster.get("metadata") or {}).get("annotations") or {}).get(REMOVED_ANNOTATION)
    try:
        removed = {str(ref).removeprefix("MultiKueueCluster ") for ref in json.loads(raw or "[]")}
    except ValueError:
        removed = set()
    return [name for name in fleet.workers if name in clusters or name in removed]


def demo_plan(flow: str, manager: SimulatedCluster, fleet: SimFleet) -> MultiKueuePlan:
    """The plan the demo's ``flow`` runs on (see the module's docstring)."""
    setup = lab_plan(LAB_WORKERS)
    if flow == "setup":
        return setup
    every = tuple(WorkerPlan(w, context=w, admin_context=w) for w in fleet.workers)
    if flow == "rotate":
        return replace(setup, workers=every, source=DEMO_PLAN_SOURCE)
    routed = set(_routed_workers(manager, fleet))
    workers = tuple(w for w in every if w.name in routed) or every
    # the demo scenario's own MultiKueue lane (scenarios/demo.yaml), which the drain takes down
    return replace(setup, workers=workers, source=DEMO_PLAN_SOURCE, admission_check="multikueue",
                   config="research-workers", cluster_queue="multikueue-cq", local_queue="multikueue-queue",
                   profile="azure.research.multicluster.h100")


def demo_keyring(fleet: Any) -> DemoKeyring | None:
    """The demo's in-memory keyring (None for anything but the demo's fleet)."""
    found = getattr(fleet, "demo_keyring", None)
    return found if isinstance(found, DemoKeyring) else None
