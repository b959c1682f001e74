"""A simulated MultiKueue fleet for the engine, CLI and app tests: the demo
manager, two worker worlds, the lab plan, and an in-memory keyring."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import keyring.errors
import yaml

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.demo_fleet import DemoKeyring
from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan
from tau_tui.core.operations.multikueue_steps.simulated_fleet import (
    SimFleet,
    SimFleetConnector,
    build_lab_fleet,
    lab_plan,
)
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tau_tui.core.sim.world import SimulatedCluster
from tests import builders

R = ResourceKind
#: The engine's confirm callback for a test that accepts every preview.
YES = lambda preview: True  # noqa: E731
#: The lab's plan as `tau-tui multikueue --plan` reads it.
LAB_PLAN = """\
workers:
  - {name: lab-worker-1, context: lab-worker-1, adminContext: lab-worker-1}
  - {name: lab-worker-2, context: lab-worker-2, adminContext: lab-worker-2}
namespaces: [team-nlp]
lanes: [multicluster]
admissionCheck: mk-lab
config: mk-lab-workers
clusterQueue: mk-lab-cq
localQueue: mk-lab-queue
profile: azure.research.multicluster.lab
flavor: mk-lab-gpu
"""
LAB_IMAGE = "ghcr.io/azure/tau-train:1.4.2"


class MemoryKeyring(DemoKeyring, keyring.backend.KeyringBackend):
    """An OS keyring stand-in that lives in memory (set with keyring.set_keyring): the demo's
    in-memory store, as a keyring backend."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        DemoKeyring.__init__(self)
        keyring.backend.KeyringBackend.__init__(self)

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
        kwargs.setdefault("now", self.world_seconds)
        return open_exercise(flow, self.backend, self.connector, plan or self.plan, wait=self.world.advance,
                             records_dir=self.records, **kwargs)

    def world_seconds(self) -> float:
        """The simulated clock ``world.advance`` moves, in seconds (the exercises' deadlines run on it)."""
        return self.world.now().timestamp()

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


#: The demo scenario's own MultiKueue wiring: workers with no API server in the simulated fleet.
DEMO_MULTIKUEUE = {"profile": "azure.research.multicluster.h100", "local_queue": ("team-nlp", "multikueue-queue"),
                   "cluster_queue": "multikueue-cq", "admission_check": "multikueue", "config": "research-workers",
                   "clusters": ("westus3-worker", "eastus2-worker"), "jobs": (("team-nlp", "mixtral-distill"),)}


def retire_demo_multikueue(lab: Lab) -> None:
    """Remove the demo's own MultiKueue wiring and its run, leaving only the lab plan's.  A drain
    discovers every MultiKueue profile and queue on the manager and refuses one whose workers
    (westus3-worker, eastus2-worker: no API server to check directly) the plan does not list."""
    store, demo = lab.world.store, DEMO_MULTIKUEUE
    store.update(R.TAU_CLUSTER.type, "cluster", None, lambda o: o["spec"].__setitem__(
        "workloadProfiles", [p for p in o["spec"]["workloadProfiles"] if p["name"] != demo["profile"]]))
    for ns, name in demo["jobs"]:
        store.remove(R.JOB.type, name, ns)
        for wl in [w for w in store.items(R.WORKLOAD.type) if w["metadata"]["namespace"] == ns
                   and any(o.get("name") == name for o in w["metadata"].get("ownerReferences") or ())]:
            store.remove(R.WORKLOAD.type, wl["metadata"]["name"], ns)
    store.remove(R.LOCAL_QUEUE.type, demo["local_queue"][1], demo["local_queue"][0])
    for rt, name in ((R.CLUSTER_QUEUE.type, demo["cluster_queue"]), (R.ADMISSION_CHECK.type, demo["admission_check"]),
                     (R.MULTIKUEUE_CONFIG.type, demo["config"]), *((R.MULTIKUEUE_CLUSTER.type, c) for c in demo["clusters"])):
        store.remove(rt, name)
    lab.world.advance(2)


def lab_job(name: str = "mk-train", queue: str = "mk-lab-queue", namespace: str = "team-nlp", seconds: int = 100000) -> dict:
    return builders.job(
        name, namespace, labels={"kueue.x-k8s.io/queue-name": queue, "tau.azure.com/submission-id": f"lab-{name}"},
        annotations={"tau.sim/duration-seconds": str(seconds)}, suspend=True, api=True,
        spec={"parallelism": 1, "completions": 1},
        pod_spec={"restartPolicy": "Never", "containers": [{"name": "trainer", "image": LAB_IMAGE, "resources": {
            "requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}]})


def lab_pod(node: str, run: str = "mk-train", namespace: str = "team-nlp", *, name: str | None = None,
            labels: dict[str, str] | None = None, image: str = LAB_IMAGE, **more: Any) -> dict:
    """A Running pod of ``run`` on ``node`` (a worker's, where MultiKueue placed the run)."""
    return builders.pod(name or f"{run}-0-abcde", namespace, node=node, containers=("trainer",), image=image,
                        labels={"job-name": run} if labels is None else labels, api=True, **more)


def dispatch(lab: Lab, name: str = "mk-train") -> str:
    """Submit ``name`` to the lab queue and let MultiKueue place it on lab-worker-1; its Workload's name."""
    lab.backend.submit([lab_job(name)])
    lab.world.advance(15)
    [wl] = [w for w in lab.backend.workloads("team-nlp") if w.queue_name == "mk-lab-queue" and name in w.name]
    assert wl.cluster_name == "lab-worker-1"
    return wl.name


def drive_cli_with(lab: Lab, tmp_path: Path, monkeypatch) -> Lab:
    """`tau-tui multikueue …` in this test works on ``lab``, its records and state under ``tmp_path``."""
    from tau_tui.commands import multikueue_command

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(multikueue_command, "multikueue_environment", lambda args: (lab.backend, lab.connector, lab.world.advance))
    return lab


def token_of(lab: Lab, secret_name: str, namespace: str = "kueue-system") -> str:
    """The bearer token in the worker kubeconfig Secret ``secret_name`` on the manager."""
    data = lab.world.store.read(SECRET, secret_name, namespace)["data"]["kubeconfig"]
    return str(yaml.safe_load(base64.b64decode(data))["users"][0]["user"]["token"])


def revoke_by_hand(lab: Lab, worker: str, token: str) -> None:
    """What an identity system does: the token stops authenticating on the worker."""
    lab.fleet.workers[worker].store.tokens.pop(token, None)


def without_admin(plan: MultiKueuePlan) -> MultiKueuePlan:
    """The plan without adminContext: the tool cannot revoke on the workers (setup reads the matrix with it)."""
    return plan.__class__(**{**plan.__dict__, "workers": tuple(
        w.__class__(**{**w.__dict__, "admin_context": None}) for w in plan.workers)})


def route_cli_to(lab: Lab, tmp_path: Path, monkeypatch) -> None:
    """Every `tau-tui` command in this test works on ``lab``: `multikueue` gets its manager and workers;
    `profiles`, `render` and `submit` read TauCluster/cluster from its manager (the kubernetes client's
    CustomObjectsApi answered by the simulated API), and `submit` sends through its backend; records,
    state and config under ``tmp_path``."""
    from types import SimpleNamespace

    from tau_tui.commands import connection, multikueue_command
    from tau_tui.core.operations.multikueue_steps.access import BackendAccess

    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.delenv("TAU_TEAM", raising=False)
    manager = BackendAccess(lab.backend, "manager")

    class SimCustomObjects:
        def __init__(self, api_client: object) -> None:
            pass

        def get_cluster_custom_object(self, group: str, version: str, plural: str, name: str) -> dict | None:
            return manager.get(R.TAU_CLUSTER.type, name)

    monkeypatch.setattr(multikueue_command, "multikueue_environment", lambda args: (lab.backend, lab.connector, lab.world.advance))
    monkeypatch.setattr("kubernetes.client.CustomObjectsApi", SimCustomObjects)
    monkeypatch.setattr(connection, "api_client", lambda context, timeouts=None: object())
    lab.backend.http = SimpleNamespace(api_client=object())
    monkeypatch.setattr("tau_tui.core.cluster.real.KubernetesBackend", lambda **kwargs: lab.backend)
    lab.records = tmp_path / "xdg_data_home" / "tau-tui" / "multikueue" / "records"


def tau_project(tmp_path: Path, profile: str, *, team: str | None = None, name: str = "mk-train") -> Path:
    """A tau.yaml (and its train.py) in the tenant namespace naming ``profile`` (and ``team``)."""
    project = tmp_path / f"project-{name}"
    project.mkdir(exist_ok=True)
    lines = [f"name: {name}", "image: python:3.12-slim", "entrypoint: train.py", "policy:", "  namespace: team-nlp",
             f"  profile: {profile}"] + ([f"  team: {team}"] if team else [])
    (project / "tau.yaml").write_text("\n".join(lines) + "\n")
    (project / "train.py").write_text("print('train')\n")
    return project / "tau.yaml"


def cli_lab(tmp_path: Path, monkeypatch, *, retire: bool = False) -> Lab:
    """A lab that `tau-tui multikueue` drives (:func:`drive_cli_with`), the lab plan written to
    ``lab.plan_path``; ``retire``: without the demo's own MultiKueue wiring (a drain discovers it)."""
    lab = drive_cli_with(make_lab(tmp_path), tmp_path, monkeypatch)
    if retire:
        retire_demo_multikueue(lab)
    (tmp_path / "plan.yaml").write_text(LAB_PLAN)
    lab.plan_path = str(tmp_path / "plan.yaml")
    lab.records = tmp_path / "data" / "tau-tui" / "multikueue" / "records"
    return lab


def lab_with_a_run_placed(tmp_path: Path, monkeypatch) -> Lab:
    """The lab set up, with its state under ``tmp_path`` and `mk-train` submitted and placed on a worker."""
    from tau_tui.core.operations.multikueue_steps.engine import Outcome

    for var, sub in (("XDG_STATE_HOME", "state"), ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    lab = make_lab(tmp_path)
    assert lab.exercise("setup").run(YES, timeout=30) is Outcome.VERIFIED
    assert all(r.ok for r in lab.backend.submit([lab_job()]))
    lab.world.advance(15)
    return lab
