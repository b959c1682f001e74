"""A simulated MultiKueue fleet for the engine, CLI and app tests: the demo
manager, two worker worlds, the lab plan, and an in-memory keyring."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.sim.backend import SimulatedBackend
from tau_tui.core.cluster.sim.scenario import build_world
from tau_tui.core.cluster.sim.world import SimulatedCluster
from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan
from tau_tui.core.operations.multikueue_steps.simulated_fleet import (
    SimFleet,
    SimFleetConnector,
    build_lab_fleet,
    lab_plan,
)

R = ResourceKind


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An OS keyring stand-in that lives in memory (set with keyring.set_keyring)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.entries:
            raise keyring.errors.PasswordDeleteError(username)
        del self.entries[(service, username)]


@dataclass
class Lab:
    world: SimulatedCluster
    fleet: SimFleet
    backend: SimulatedBackend
    connector: SimFleetConnector
    plan: MultiKueuePlan
    records: Path

    def exercise(self, flow: str, plan: MultiKueuePlan | None = None, **kwargs):
        return open_exercise(flow, self.backend, self.connector, plan or self.plan, wait=self.world.advance,
                             records_dir=self.records, **kwargs)

    def tokens(self) -> list[str]:
        """Every credential token the fleet minted (what a leak scan looks for)."""
        return sorted(t for w in self.fleet.workers.values() for t in w.store.tokens) + sorted(self.revoked)

    revoked: tuple = ()


def make_lab(tmp_path: Path, *, admin: bool = True) -> Lab:
    world = build_world("demo")
    fleet = build_lab_fleet(world)
    backend = SimulatedBackend(world)
    backend.start()
    return Lab(world, fleet, backend, SimFleetConnector(fleet), lab_plan(admin=admin), tmp_path / "records")


def lab_job(name: str = "mk-train", queue: str = "mk-lab-queue", namespace: str = "team-nlp", seconds: int = 100000) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": queue, "tau.azure.com/submission-id": f"lab-{name}"},
                         "annotations": {"tau.sim/duration-seconds": str(seconds)}},
            "spec": {"parallelism": 1, "completions": 1, "suspend": True, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "trainer", "image": "ghcr.io/azure/tau-train:1.4.2",
                                                          "resources": {"requests": {"nvidia.com/gpu": "8"},
                                                                        "limits": {"nvidia.com/gpu": "8"}}}]}}}}
