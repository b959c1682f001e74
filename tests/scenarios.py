"""Small simulated clusters written as scenario YAML: H100 nodes behind one ClusterQueue and one
LocalQueue ``q`` in team-a, with the jobs a test needs."""

from __future__ import annotations

from pathlib import Path

from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.world import SimulatedCluster


def one_queue_scenario(name: str, *, seed: int, warmup_seconds: int, nodes: int, cpu: int, memory: str,
                       jobs: tuple[str, ...] = (), timeline: tuple[str, ...] = ()) -> str:
    """``nodes`` 8-GPU nodes and a queue of their GPUs (and ``cpu``, ``memory``); ``jobs`` and
    ``timeline``: the scenario's lines of each (flow-style mappings)."""
    text = f"""\
name: {name}
seed: {seed}
start: "2025-03-04T02:00:00Z"
warmupSeconds: {warmup_seconds}
namespaces: [default, team-a]
nodes:
  - {{prefix: gpu-, count: {nodes}, gpus: {{nvidia.com/gpu: 8}}, labels: {{tau.azure.com/gpu-class: h100-80gb}}}}
objects:
  - {{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {{name: h100}}, spec: {{nodeLabels: {{tau.azure.com/gpu-class: h100-80gb}}}}}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {{name: cq}}
    spec:
      namespaceSelector: {{}}
      resourceGroups:
        - coveredResources: [cpu, memory, nvidia.com/gpu]
          flavors: [{{name: h100, resources: [{{name: cpu, nominalQuota: {cpu}}}, {{name: memory, nominalQuota: {memory}}}, {{name: nvidia.com/gpu, nominalQuota: {8 * nodes}}}]}}]
  - {{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {{name: q, namespace: team-a}}, spec: {{clusterQueue: cq}}}}
"""
    for section, lines in (("jobs", jobs), ("timeline", timeline)):
        if lines:
            text += f"{section}:\n" + "".join(f"  - {line}\n" for line in lines)
    return text


#: One node, one queue of 8 GPUs: "blocker" holds them until 10 s after the start, so "first" is
#: queued at the start and runs after it; "second" waits behind "first" for an hour.
TINY = one_queue_scenario("tiny", seed=3, warmup_seconds=40, nodes=1, cpu=64, memory="512Gi", jobs=(
    "{at: -35, kind: Job, name: blocker, namespace: team-a, queue: q, gpus: 8, durationSeconds: 45}",
    "{at: -20, kind: Job, name: first, namespace: team-a, queue: q, gpus: 8, durationSeconds: 3600}",
    "{at: -10, kind: Job, name: second, namespace: team-a, queue: q, gpus: 8, durationSeconds: 7200}",
))


def demo_backend(namespace: str | None = None) -> tuple[SimulatedCluster, SimulatedBackend]:
    """The ``demo`` scenario at its start instant, synced; time moves only via ``world.advance``."""
    world = build_world("demo")
    backend = SimulatedBackend(world, namespace=namespace, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    return world, backend


def write_tiny_scenario(directory: Path) -> Path:
    """The tiny scenario as ``directory``/tiny.yaml (for ``--demo PATH``)."""
    path = directory / "tiny.yaml"
    path.write_text(TINY)
    return path


def tiny_backend(directory: Path) -> tuple[SimulatedCluster, SimulatedBackend]:
    """The tiny scenario's world ("blocker" succeeds 30-40 s in, "first" then runs) and a started,
    synced backend watching it; the caller closes the backend."""
    world = build_world(str(write_tiny_scenario(directory)))
    backend = SimulatedBackend(world)
    backend.start()
    assert backend.wait_synced(10)
    return world, backend
