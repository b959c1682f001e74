"""Contract environments: one per backend, same operations.

A test gets an ``env`` and uses ``env.backend()`` (the ClusterBackend under
test) plus admin helpers that set up state the way a cluster admin would.
``env.settle(predicate)`` waits for the cluster to get there: the simulated
env advances its clock, the real env polls."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from tau_tui.core.cluster.clock import ManualClock
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.cluster_process import SimulatedClusterProcess
from tau_tui.core.sim.process_backend import ProcessSimulatedBackend
from tau_tui.core.sim.settings import SimSettings
from tau_tui.core.sim.store import qualified
from tau_tui.core.sim.world import SimulatedCluster

_counter = itertools.count(1)

#: Read access to every watched kind (what the restricted identity gets),
#: as (apiGroup, resource) pairs.
READ_RESOURCES = sorted({(k.type.group, k.type.plural) for k in ResourceKind})


def contract_world(visibility_api: bool = True) -> SimulatedCluster:
    """The contract suite's simulated cluster: like tier 2, two Ready GPU nodes with 8 GPUs each."""
    world = SimulatedCluster(ManualClock(datetime(2025, 3, 3, 9, 0, tzinfo=UTC)), seed=42,
                             settings=SimSettings(visibility_api=visibility_api, default_duration_seconds=3600,
                                                  log_interval_seconds=1, events=True, context="sim-contract"))
    for ns in ("default", "kueue-system"):
        world.store.put(ResourceKind.NAMESPACE.type, {"metadata": {"name": ns}})
    for i in range(2):
        capacity = {"cpu": "96", "memory": "1843Gi", "pods": "110", "nvidia.com/gpu": "8"}
        world.store.put(ResourceKind.NODE.type, {
            "metadata": {"name": f"sim-gpu-{i}", "labels": {"kubernetes.io/hostname": f"sim-gpu-{i}"}},
            "spec": {}, "status": {"capacity": capacity, "allocatable": capacity,
                                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
    return world


def restricted_identity(namespace: str) -> tuple[str, list[str]]:
    """A ServiceAccount name and what it may read: every watched kind (and pod logs)."""
    identity = f"system:serviceaccount:{namespace}:restricted-{next(_counter)}"
    return identity, [qualified(ResourceType(g, "v1", p, "", True)) for g, p in READ_RESOURCES]


def wait_real(predicate: Callable[[], bool], timeout: float = 60.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class SimulatedEnv:
    """What both simulated environments share: backends and the admin helpers, as calls on the
    world (:meth:`_world`, a dotted name such as ``store.put``)."""

    name = "sim"
    has_pods = True  # the simulated kubelet runs pods and writes logs

    def __init__(self, visibility_api: bool) -> None:
        self.has_visibility_api = visibility_api
        self.backends: list[ClusterBackend] = []

    def _world(self, name: str, *args: Any) -> Any:
        raise NotImplementedError

    def _new_backend(self, identity: str | None, namespace: str | None) -> ClusterBackend:
        raise NotImplementedError

    # -- backends -----------------------------------------------------------

    def backend(self, namespace: str | None = None) -> ClusterBackend:
        return self._new_backend(None, namespace)

    def restricted_backend(self, namespace: str, deny: tuple[str, ...]) -> ClusterBackend:
        """A backend as a ServiceAccount allowed to read every watched kind
        except the qualified resources in ``deny`` (no mutations)."""
        identity, resources = restricted_identity(namespace)
        self._world("store.grant", identity, ("get", "list", "watch"), [r for r in resources if r not in deny] + ["pods/log"])
        return self._new_backend(identity, namespace)

    # -- admin helpers --------------------------------------------------------

    def unique_namespace(self, prefix: str = "ct") -> str:
        name = f"{prefix}-{next(_counter)}"
        self._world("store.put", ResourceKind.NAMESPACE.type, {"metadata": {"name": name}})
        self._world("tick")
        return name

    def create(self, rt: ResourceType, obj: Mapping[str, Any]) -> dict:
        created = self._world("store.api_create", None, rt, (obj.get("metadata") or {}).get("namespace"), dict(obj), False)
        self._world("tick")
        return created  # type: ignore[no-any-return]

    def patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict:
        out = self._world("store.api_patch", None, rt, name, namespace, dict(patch), False)
        self._world("tick")
        return out  # type: ignore[no-any-return]

    def delete(self, rt: ResourceType, name: str, namespace: str | None) -> None:
        self._world("store.api_delete", None, rt, name, namespace, False)
        self._world("tick")

    def read(self, rt: ResourceType, name: str, namespace: str | None) -> dict | None:
        return self._world("store.read", rt, name, namespace)  # type: ignore[no-any-return]

    def settle(self, predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
        """Advance simulated time (1 s ticks, at most ``timeout`` seconds)."""
        for _ in range(int(timeout)):
            if predicate():
                return True
            self._world("advance", 1)
            time.sleep(0.02)  # let log threads catch up with the new simulated second
        return predicate()

    def advance(self, seconds: float) -> None:
        self._world("advance", seconds)

    def break_log_streams(self) -> None:
        self._world("break_log_streams")

    def close(self) -> None:
        for backend in self.backends:
            backend.close()


class SimEnv(SimulatedEnv):
    """The simulated cluster in the test's process."""

    def __init__(self, visibility_api: bool = True):
        super().__init__(visibility_api)
        self.world = contract_world(visibility_api)

    def _world(self, name: str, *args: Any) -> Any:
        target: Any = self.world
        for part in name.split("."):
            target = getattr(target, part)
        return target(*args)

    def _new_backend(self, identity: str | None, namespace: str | None) -> ClusterBackend:
        backend = SimulatedBackend(self.world, identity=identity, namespace=namespace)
        backend.start()
        self.backends.append(backend)
        return backend


class ProcessSimEnv(SimulatedEnv):
    """The same simulated cluster in a process of its own (as ``tau-tui --demo large`` runs it),
    reached through ProcessSimulatedBackend; the admin helpers are calls on that process's world."""

    name = "sim-process"

    def __init__(self, visibility_api: bool = True):
        super().__init__(visibility_api)
        self.process = SimulatedClusterProcess("tests.contract.envs:contract_world", [visibility_api], realtime=False)

    def _world(self, name: str, *args: Any) -> Any:
        """A call on the world; returns once every backend of this env has its effect cached."""
        result, marks = self.process.call(None, name, *args)
        for backend in self.backends:
            if isinstance(backend, ProcessSimulatedBackend) and backend.session is not None:
                backend.wait_for_batch(marks.get(backend.session, 0))
        return result

    def _new_backend(self, identity: str | None, namespace: str | None) -> ClusterBackend:
        backend = ProcessSimulatedBackend(self.process, identity=identity, namespace=namespace)
        backend.start()
        backend.wait_synced(30)
        self.backends.append(backend)
        return backend

    def close(self) -> None:
        super().close()
        self.process.stop()
