"""What a controller may reach of the world it runs in, as protocols the world and its
controllers satisfy: ``world.py`` builds the controllers, so they never import it."""

from __future__ import annotations

import threading
from collections.abc import Container, Mapping
from datetime import datetime
from typing import Any, Protocol

from tau_tui.core.cluster.kinds import ResourceType
from tau_tui.core.sim.controllers.workload_facts import WorkloadFacts
from tau_tui.core.sim.settings import SimSettings
from tau_tui.core.sim.store import SimStore


class KueuePeer(Protocol):
    def workloads_with_facts(self) -> list[tuple[dict[str, Any], WorkloadFacts]]: ...

    def evict(self, wl: dict[str, Any], reason: str, message: str, requeue: bool = True) -> None: ...


class MultiKueuePeer(Protocol):
    @property
    def worker_lost_at(self) -> Container[str]: ...


class JobsPeer(Protocol):
    def suspend_owner(self, rt: ResourceType, owner: dict[str, Any]) -> None: ...


class KubeletPeer(Protocol):
    def terminate_pod(self, namespace: str, name: str, outcome: str = "Succeeded", message: str = "",
                      at: datetime | None = None) -> None: ...


class ControllerWorld(Protocol):
    """The world's store, lock, settings, clock and event recorder, and the controllers that act
    on each other's objects."""

    @property
    def store(self) -> SimStore: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def settings(self) -> SimSettings: ...

    @property
    def api_down(self) -> str | None: ...

    @property
    def kueue(self) -> KueuePeer: ...

    @property
    def multikueue(self) -> MultiKueuePeer: ...

    @property
    def jobs(self) -> JobsPeer: ...

    @property
    def kubelet(self) -> KubeletPeer: ...

    def now(self) -> datetime: ...

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None: ...
