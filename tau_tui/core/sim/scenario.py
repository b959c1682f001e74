"""Scenario files (``tau_tui/scenarios/*.yaml``) → a populated simulated cluster.

A scenario is compact: node groups, raw Kueue/Tau objects, jobs submitted at
offsets from the scenario start (negative = before the user arrives, run
through a warm-up), a timeline of faults, and for big clusters a
``generate`` section expanded in code instead of a giant file."""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.clock import ManualClock
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.names import QUEUE_NAME_LABEL
from tau_tui.core.cluster.submission_kinds import resource_type_from_table
from tau_tui.core.sim.annotations import (
    DURATION_ANNOTATION,
    LOG_STYLE_ANNOTATION,
    OUTCOME_ANNOTATION,
    RESTARTS_ANNOTATION,
)
from tau_tui.core.sim.controllers.kueue import PRIORITY_CLASS_LABEL
from tau_tui.core.sim.controllers.tau import PRIORITY_CLASS, TOPOLOGY
from tau_tui.core.sim.generate import generate_large
from tau_tui.core.sim.node_groups import add_node_group
from tau_tui.core.sim.settings import SimSettings
from tau_tui.core.sim.tau_runs import rendered_run
from tau_tui.core.sim.world import SimulatedCluster

R = ResourceKind
SCENARIO_PACKAGE = "tau_tui.scenarios"
EXTRA_SCENARIO_TYPES = {("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASS, ("kueue.x-k8s.io", "Topology"): TOPOLOGY}


def scenario_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files(SCENARIO_PACKAGE).iterdir() if p.name.endswith(".yaml"))


def load_scenario_text(name_or_path: str) -> tuple[str, str]:
    """``(source, text)`` of a packaged scenario name or a file path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return str(path), path.read_text()
    resource = resources.files(SCENARIO_PACKAGE) / f"{name_or_path}.yaml"
    if not resource.is_file():
        raise ClusterError(f"unknown scenario {name_or_path!r}; available: {', '.join(scenario_names())}")
    return f"scenario {name_or_path}", resource.read_text()


def build_world(name_or_path: str = "demo", *, seed: int | None = None, warm_up: bool = True) -> SimulatedCluster:
    """Load a scenario and return its world at scenario start (ManualClock)."""
    source, text = load_scenario_text(name_or_path)
    try:
        spec = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ClusterError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(spec, Mapping):
        raise ClusterError(f"{source}: the top level must be a mapping")
    return ScenarioBuilder(spec, source, seed).build(warm_up)


class ScenarioBuilder:
    def __init__(self, spec: Mapping[str, Any], source: str, seed: int | None):
        self.spec = spec
        self.source = source
        self.seed = int(seed if seed is not None else spec.get("seed", 1))
        self.rng = random.Random(self.seed)
        start = parse_time(spec.get("start")) or datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
        self.start = start
        self.warmup = float(spec.get("warmupSeconds", 0))
        settings = spec.get("settings") or {}
        self.world = SimulatedCluster(
            ManualClock(start - timedelta(seconds=self.warmup)),
            self.seed,
            SimSettings(
                visibility_api=bool(settings.get("visibilityAPI", True)),
                default_duration_seconds=float(settings.get("defaultDurationSeconds", 900)),
                log_interval_seconds=float(settings.get("logIntervalSeconds", 2)),
                worker_lost_timeout_seconds=float(settings.get("workerLostTimeoutSeconds", 900)),
                heartbeat_seconds=float(settings.get("heartbeatSeconds", 240)),
                events=bool(settings.get("events", True)),
                context=str(spec.get("context") or f"sim-{spec.get('name', 'scenario')}"),
            ),
        )

    def _error(self, where: str, message: str) -> ClusterError:
        return ClusterError(f"{self.source}: {where}: {message}")

    def build(self, warm_up: bool) -> SimulatedCluster:
        world = self.world
        store = world.store
        with world.lock:
            for ns in self.spec.get("namespaces") or ():
                store.put(R.NAMESPACE.type, {"metadata": {"name": ns}, "status": {"phase": "Active"}})
            for i, group in enumerate(self.spec.get("nodes") or ()):
                add_node_group(self.world, group, self.source, f"nodes[{i}]")
            for i, obj in enumerate(self.spec.get("objects") or ()):
                self._object(obj, f"objects[{i}]")
            if self.spec.get("tauCluster") is not None:
                self._tau_cluster(self.spec["tauCluster"])
            if self.spec.get("generate"):
                generate_large(world, self.rng, self.source, self.spec["generate"])
            for i, job in enumerate(self.spec.get("jobs") or ()):
                offset = float(job.get("at", 0)) + self.warmup
                where = f"jobs[{i}]"
                manifests = self.tau_run(job, where) if job.get("tau") is not None else [self.job_manifest(job, where)]
                for manifest in manifests:  # a multi-node Job's headless Service first, as tau-tui submits them
                    world.at(offset, functools.partial(self._submit, manifest))
            for i, entry in enumerate(self.spec.get("timeline") or ()):
                world.at(float(entry.get("at", 0)) + self.warmup, self._timeline_action(entry, f"timeline[{i}]"))
            for entry in self.spec.get("logs") or ():
                world.at(float(entry.get("at", 0)) + self.warmup, self._log_action(entry))
        if warm_up:
            step = float(self.spec.get("warmupStepSeconds", 10))
            world.tick()
            if self.warmup:
                world.advance(self.warmup, step=step)
            world.tick()
        return world

    # -- pieces ------------------------------------------------------------

    def _object(self, obj: Mapping[str, Any], where: str) -> None:
        if not isinstance(obj, Mapping) or not obj.get("kind") or not obj.get("apiVersion"):
            raise self._error(where, "each object needs apiVersion and kind")
        api_version, kind = obj["apiVersion"], obj["kind"]
        rt = resource_type_from_table(api_version, kind)
        if rt is None:
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            rt = EXTRA_SCENARIO_TYPES.get((group, kind))
        if rt is None:
            raise self._error(where, f"unsupported kind {api_version}/{kind}")
        body = copy.deepcopy(dict(obj))
        if rt.group == "kueue.x-k8s.io":
            body["apiVersion"] = rt.api_version
        if not (body.get("metadata") or {}).get("name"):
            raise self._error(where, "metadata.name is required")
        self.world.store.put(rt, body)

    def _tau_cluster(self, spec: Mapping[str, Any]) -> None:
        self.world.tau.profiles = list((spec.get("spec") or {}).get("workloadProfiles") or ())
        body = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                "metadata": {"name": "cluster", "generation": 1}, "spec": copy.deepcopy(dict(spec.get("spec") or {}))}
        self.world.store.put(R.TAU_CLUSTER.type, body)

    def _sim_annotations(self, job: Mapping[str, Any]) -> dict[str, str]:
        """The simulator's knobs of a scenario job: how long it runs, how it ends, its log style."""
        annotations = {DURATION_ANNOTATION: str(job.get("durationSeconds", self.world.settings.default_duration_seconds))}
        if job.get("outcome"):
            annotations[OUTCOME_ANNOTATION] = job["outcome"]
        if job.get("logStyle"):
            annotations[LOG_STYLE_ANNOTATION] = str(job["logStyle"])
        if job.get("restarts"):
            annotations[RESTARTS_ANNOTATION] = str(job["restarts"])
        return annotations

    def tau_run(self, job: Mapping[str, Any], where: str) -> list[tuple[ResourceType, dict[str, Any]]]:
        """A job given as a tau.yaml (``tau:``), rendered as ``tau-tui submit`` renders it."""
        config = job.get("tau")
        if not isinstance(config, Mapping) or not job.get("namespace"):
            raise self._error(where, "tau: must be a tau.yaml mapping, with the job's namespace beside it")
        config = {"name": job.get("name"), **config} if job.get("name") else dict(config)
        return rendered_run(config, str(job["namespace"]), self._sim_annotations(job), f"{self.source}: {where}")

    def job_manifest(self, job: Mapping[str, Any], where: str) -> tuple[ResourceType, dict[str, Any]]:
        kind = job.get("kind", "Job")
        name, namespace, queue = job.get("name"), job.get("namespace"), job.get("queue")
        if not name or not namespace or not queue:
            raise self._error(where, "a job needs name, namespace and queue")
        labels = {"tau.azure.com/managed-by": "tau", "tau.azure.com/workspace": namespace, "tau.azure.com/job": name,
                  "tau.azure.com/submission-id": f"sim-{self.seed}-{name}", QUEUE_NAME_LABEL: queue,
                  **(job.get("labels") or {})}
        if job.get("profile"):
            labels["tau.azure.com/profile"] = job["profile"]
        if job.get("priorityClass"):
            labels[PRIORITY_CLASS_LABEL] = job["priorityClass"]
        annotations = self._sim_annotations(job)
        # e.g. tau.azure.com/checkpoint-uri; a run tau-tui submitted is written as tau: (a tau.yaml) instead
        annotations.update({str(k): str(v) for k, v in (job.get("annotations") or {}).items()})
        gpus = job.get("gpus", 8)
        gpu_resource = job.get("gpuResource", "nvidia.com/gpu")
        resources_ = {"cpu": str(job.get("cpu", 8)), "memory": str(job.get("memory", "64Gi"))}
        if gpus:
            resources_[gpu_resource] = str(gpus)
        container = {"name": job.get("container", "trainer"), "image": job.get("image", "ghcr.io/azure/tau-train:1.4.2"),
                     "command": ["torchrun", "train.py"], "resources": {"requests": resources_, "limits": dict(resources_)}}
        if job.get("env"):  # {NAME: value}: the container's environment, as a manifest would set it
            container["env"] = [{"name": str(k), "value": str(v)} for k, v in job["env"].items()]
        pod_spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
        if job.get("sidecar"):
            pod_spec["containers"].append({"name": "metrics", "image": "ghcr.io/azure/tau-metrics:0.3",
                                           "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}})
        if job.get("initContainer"):
            pod_spec["initContainers"] = [{"name": "fetch-data", "image": "ghcr.io/azure/tau-fetch:0.2",
                                           "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        meta = {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations}
        if kind == "Job":
            workers = int(job.get("workers", 1))
            return R.JOB.type, {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                                "spec": {"parallelism": workers, "completions": workers, "completionMode": "Indexed",
                                         "backoffLimit": 0, "suspend": True,
                                         "template": {"metadata": {"labels": {"tau.azure.com/job": name}}, "spec": pod_spec}}}
        if kind == "RayJob":
            head_resources = {"cpu": "8", "memory": "32Gi"}
            head_containers: list[dict[str, Any]] = [{"name": "ray-head", "image": "rayproject/ray:2.41.0",
                                                      "resources": {"requests": head_resources, "limits": head_resources}}]
            if job.get("logOffload"):  # TauGrid's log-offload sidecar: the driver output outlives ray-head
                head_containers.append({"name": "ray-log-offload", "image": "ghcr.io/azure/tau-log-offload:0.1",
                                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}})
            head = {"containers": head_containers, "restartPolicy": "Never"}
            worker = copy.deepcopy(pod_spec)
            worker["containers"][0]["name"] = "ray-worker"
            return R.RAY_JOB.type, {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta,
                                    "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True, "suspend": True,
                                             "rayClusterSpec": {"headGroupSpec": {"template": {"spec": head}},
                                                                "workerGroupSpecs": [{"groupName": "gpu-workers",
                                                                                      "replicas": int(job.get("workers", 1)),
                                                                                      "template": {"spec": worker}}]}}}
        raise self._error(where, f"kind must be Job or RayJob, not {kind!r}")

    def _submit(self, manifest: tuple[ResourceType, dict[str, Any]]) -> None:
        rt, body = manifest
        store = self.world.store
        try:
            store.api_create(None, rt, body["metadata"]["namespace"], body, dry_run=False)
        except Exception as exc:  # a scenario typo must not stop the demo
            self.world.event(body, "Warning", "SubmitFailed", str(exc))

    def _timeline_action(self, entry: Mapping[str, Any], where: str) -> Callable[[], object]:
        world = self.world
        if "gpuFault" in entry:
            f = entry["gpuFault"]
            return lambda: world.gpu_fault(f["node"], f.get("verdict", "unhealthy"), f.get("code", "Xid79"),
                                           f.get("message", "GPU has fallen off the bus (Xid 79)"), int(f.get("gpu", 0)),
                                           bool(f.get("killPods", True)))
        if "gpuRecover" in entry:
            return lambda: world.gpu_recover(entry["gpuRecover"]["node"])
        if "multikueueDisconnect" in entry:
            d = entry["multikueueDisconnect"]
            return lambda: world.set_multikueue_cluster_active(d["cluster"], False, d.get("message", ""))
        if "multikueueReconnect" in entry:
            return lambda: world.set_multikueue_cluster_active(entry["multikueueReconnect"]["cluster"], True)
        if "apiOutage" in entry:
            outage = entry["apiOutage"] or {}
            return lambda: world.api_outage(outage.get("message", "dial tcp 127.0.0.1:6443: connect: connection refused"),
                                            bool(outage.get("stale", False)))
        if "apiRestore" in entry:
            return world.api_restore
        if "preempt" in entry:
            p = entry["preempt"]

            def preempt() -> None:
                # The scheduler preempts (or the Eviction API evicts) every running pod of the job.
                for pod in list(world.store.items(R.POD.type, p["namespace"])):
                    if (pod["metadata"].get("labels") or {}).get("job-name") == p["job"] \
                            and (pod.get("status") or {}).get("phase") == "Running":
                        world.disrupt_pod(p["namespace"], pod["metadata"]["name"], p.get("reason", "PreemptionByScheduler"))
            return preempt
        if "cordon" in entry:
            return lambda: world.store.update(R.NODE.type, entry["cordon"]["node"], None,
                                              lambda o: o.setdefault("spec", {}).__setitem__("unschedulable", True))
        raise self._error(where, "unknown timeline action; use gpuFault, gpuRecover, preempt, multikueueDisconnect, multikueueReconnect, apiOutage, apiRestore or cordon")

    def _log_action(self, entry: Mapping[str, Any]) -> Callable[[], None]:
        world = self.world

        def write() -> None:
            for pod in world.store.items(R.POD.type, entry.get("namespace")):
                if (pod["metadata"].get("labels") or {}).get("job-name") == entry.get("job"):
                    container = (pod["spec"].get("containers") or [{}])[0].get("name", "")
                    world.write_log(pod["metadata"]["namespace"], pod["metadata"]["name"], container, entry.get("text", ""),
                                    newline=bool(entry.get("newline", True)))
        return write
