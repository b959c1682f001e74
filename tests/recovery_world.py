"""A small simulated cluster with one run rendered from a tau.yaml with ``resilience.max_retries: 2``
(three 8-GPU nodes, one queue), shared by the retry/resume tests of the core, the CLI and the app."""

from __future__ import annotations

from pathlib import Path

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import PodView
from tau_tui.core.runconfig.loader import load_config
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import ProfileSet
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.world import SimulatedCluster
from tests.scenarios import one_queue_scenario

NS, RUN = "team-a", "finetune"
SCENARIO = one_queue_scenario("recovery", seed=5, warmup_seconds=10, nodes=3, cpu=256, memory="2000Gi")
CONFIG = """\
name: finetune
image: ghcr.io/example/train:1
entrypoint: train.py
compute:
  gpus: 8
policy:
  queue: q
storage:
  data_pvc: data
resilience:
  max_retries: 2
"""


def recovery_world(tmp_path: Path, *, realtime: bool = True) -> tuple[SimulatedCluster, SimulatedBackend]:
    """The world with the run submitted (not yet admitted); ``realtime=False`` for app tests."""
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    (tmp_path / "tau.yaml").write_text(CONFIG)
    (tmp_path / "train.py").write_text("print('training')\n")
    world = build_world(str(tmp_path / "scenario.yaml"))
    backend = SimulatedBackend(world, realtime=realtime)
    run = render_run(load_config(tmp_path / "tau.yaml"), ProfileSet("none", None, "", []), RenderOptions(NS, None, None, None))
    assert all(r.ok for r in backend.submit(run.manifests))
    return world, backend


def running_pod(world: SimulatedCluster, backend: SimulatedBackend, name: str) -> PodView:
    """Advance the clock until the run's first pod runs."""
    for _ in range(60):
        pods = [p for p in backend.fetch(ResourceKind.POD, NS, f"job-name={name}") if isinstance(p, PodView)]
        if pods and pods[0].phase == "Running":
            return pods[0]
        world.advance(1)
    raise AssertionError(f"{name} never ran")


def fail_by_xid79(world: SimulatedCluster, backend: SimulatedBackend) -> str:
    """Run the job, then let the agent report XID 79 on its node (the pod dies); returns the node."""
    node = running_pod(world, backend, RUN).node_name or ""
    world.gpu_fault(node, "unhealthy", "Xid79", "GPU has fallen off the bus (Xid 79)", 3)
    world.advance(2)
    return node


def fail_by_oom(world: SimulatedCluster, backend: SimulatedBackend) -> str:
    """Run the job, then its container is OOMKilled (exit 137) and the Job fails; returns the pod."""
    pod = running_pod(world, backend, RUN).name

    def oom_killed(o: dict) -> None:
        for status in o["status"]["containerStatuses"]:
            status["state"]["terminated"].update(reason="OOMKilled", exitCode=137)

    world.kubelet.terminate_pod(NS, pod, "Failed", "Killed")
    world.store.update(ResourceKind.POD.type, pod, NS, oom_killed)
    world.advance(2)
    return pod
