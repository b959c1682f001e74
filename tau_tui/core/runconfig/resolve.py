"""Resolve where and how a validated config runs: namespace, profile, queue, priorities, cardinality.

Applies the profile-driven conflict rules of taugrid.md §1.3: once a profile is selected it is
authoritative, and an explicit config value that disagrees is an error, never silently overridden.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError
from tau_tui.core.runconfig.profiles import Caller, Profile, ProfileSet, SelectionError, normalise, select
from tau_tui.core.runconfig.schema import LEGACY_PLACEMENTS

PRIORITY_TIERS = {"default": "taugrid-default", "priority": "taugrid-priority"}
SHAPE = re.compile(r"^(?P<count>[0-9]+)x(?P<gpu_class>[a-z0-9-]+)$")
MULTIKUEUE = "multiKueue"


@dataclass(frozen=True)
class RenderOptions:
    namespace: str | None = None
    team: str | None = None
    lane: str | None = None
    submission_id: str | None = None


@dataclass(frozen=True)
class Resolution:
    """Everything the renderer needs beyond the config itself."""

    namespace: str
    team: str | None
    lane: str | None
    queue: str
    cluster_queue: str | None
    workload_priority_class: str | None
    pod_priority_class: str | None
    placement: str | None
    gpus: int
    nodes: int
    workers: int
    gpus_per_worker: int
    multikueue: bool
    profile: Profile | None
    profile_set: ProfileSet


def placement_of(topology: str | None) -> str | None:
    if topology is None:
        return None
    return LEGACY_PLACEMENTS.get(topology, topology)


def resolve(loaded: LoadedConfig, profile_set: ProfileSet, options: RenderOptions) -> Resolution:
    c = loaded.config
    problems: list[Diagnostic] = []

    def err(path: tuple[Any, ...], message: str, hint: str) -> None:
        problems.append(loaded.diagnostic(path, message, hint))

    namespace = c.policy.namespace
    if options.namespace and namespace and options.namespace != namespace:
        err(("policy", "namespace"), f"is {namespace!r} but -n asks for {options.namespace!r}", "drop -n or change policy.namespace")
    namespace = namespace or options.namespace
    if not namespace:
        err(("policy", "namespace"), "is not set and no -n was given", "set policy.namespace or pass -n NAMESPACE")
    team = c.policy.team or options.team or os.environ.get("TAU_TEAM") or None
    lane = c.policy.lane or options.lane
    if problems:
        raise DiagnosticError(problems)
    assert namespace is not None

    if profile_set.gate_open and not profile_set.profiles and not c.policy.profile:
        return _resolve_without_profile(loaded, profile_set, namespace, team, lane)

    try:
        profile = select(profile_set, c.policy.profile, Caller(namespace, team, lane))
    except SelectionError as exc:
        path = ("policy", "profile") if c.policy.profile else ("policy",)
        raise DiagnosticError([loaded.diagnostic(path, str(exc), "see `tau-tui profiles` for every profile and why it is or is not selectable")]) from None

    conflict = f"conflicts with authoritative workload profile {profile.name!r}"
    local_queue = profile.local_queue_for(namespace)
    queue = local_queue.name if local_queue else profile.default_local_queue
    cluster_queue = local_queue.cluster_queue if local_queue else None
    if not queue:
        err(("policy", "profile"), f"profile {profile.name!r} resolves no LocalQueue in namespace {namespace}", "ask the platform owner to fix the profile's defaultLocalQueue")
    equal_checks = [
        (("policy", "queue"), c.policy.queue if c.policy.queue != "auto" else None, queue),
        (("policy", "mode"), c.policy.mode, profile.mode),
        (("policy", "topology"), placement_of(c.policy.topology), profile.placement),
        (("policy", "workload_priority_class"), c.policy.workload_priority_class, profile.workload_priority_class),
        (("policy", "pod_priority_class"), c.policy.pod_priority_class, profile.pod_priority_class),
        (("policy", "disable_default_priorities"), c.policy.disable_default_priorities, profile.disable_default_priorities),
    ]
    for path, given, wanted in equal_checks:
        if given is not None and given != wanted:
            err(path, f"{given!r} {conflict} (profile has {wanted!r})", f"remove {'.'.join(path)}; the profile decides it")
    forbidden = [
        (("policy", "priority_tier"), c.policy.priority_tier is not None),
        (("policy", "shape"), c.policy.shape is not None),
        (("policy", "gpu_class"), c.policy.gpu_class is not None),
        (("policy", "node_selector"), bool(c.policy.node_selector)),
        (("policy", "clear_node_selector"), "clear_node_selector" in c.policy.model_fields_set),
    ]
    for path, present in forbidden:
        if present:
            err(path, f"cannot be combined with a workload profile ({profile.name!r})", f"remove {'.'.join(path)}; the profile decides placement and priority")

    if loaded.engine == "job":
        gpus, nodes, workers, gpus_per_worker = profile.gpus_per_worker, profile.worker_count, 1, 0
        if c.compute.gpus is not None and c.compute.gpus != gpus:
            err(("compute", "gpus"), f"{c.compute.gpus} {conflict} (gpusPerWorker {gpus})", "remove compute.gpus or pick another profile")
        if "nodes" in c.execution.model_fields_set and c.execution.nodes != nodes:
            err(("execution", "nodes"), f"{c.execution.nodes} {conflict} (workerCount {nodes})", "remove execution.nodes or pick another profile")
        if nodes > 1 and c.execution.launcher != "torchrun":
            err(("execution", "launcher"), f"profile {profile.name!r} runs {nodes} nodes, which needs launcher: torchrun", "set execution.launcher: torchrun")
    else:
        gpus, nodes = 0, 1
        workers, gpus_per_worker = profile.worker_count, profile.gpus_per_worker
        if "workers" in c.compute.model_fields_set and c.compute.workers != workers:
            err(("compute", "workers"), f"{c.compute.workers} {conflict} (workerCount {workers})", "remove compute.workers or pick another profile")
        if "gpus_per_worker" in c.compute.model_fields_set and c.compute.gpus_per_worker != gpus_per_worker:
            err(("compute", "gpus_per_worker"), f"{c.compute.gpus_per_worker} {conflict} (gpusPerWorker {gpus_per_worker})", "remove compute.gpus_per_worker or pick another profile")
    multikueue = profile.execution_target == MULTIKUEUE
    if multikueue and nodes > 1:
        err(("execution", "nodes"), "a multi-node torchrun Job needs a headless Service, which MultiKueue does not mirror to workers", "pick a singleCluster profile for multi-node runs")
    if problems:
        raise DiagnosticError(problems)
    wpc = None if profile.disable_default_priorities else profile.workload_priority_class
    ppc = None if profile.disable_default_priorities else profile.pod_priority_class
    return Resolution(
        namespace, team, lane, queue, cluster_queue, wpc, ppc, profile.placement,
        gpus, nodes, workers, gpus_per_worker, multikueue, profile, profile_set,
    )


def _resolve_without_profile(loaded: LoadedConfig, profile_set: ProfileSet, namespace: str, team: str | None, lane: str | None) -> Resolution:
    """The cluster declares no workload profiles (WorkloadProfilesReady reason NoWorkloadProfiles)."""
    c = loaded.config
    problems: list[Diagnostic] = []
    if not c.policy.queue or c.policy.queue == "auto":
        problems.append(loaded.diagnostic(("policy", "queue"), "the cluster declares no workload profiles, so the LocalQueue must be named", "set policy.queue to a LocalQueue in " + namespace))
    gpus = c.compute.gpus
    shape = SHAPE.match(c.policy.shape) if c.policy.shape else None
    if c.policy.shape and not shape:
        problems.append(loaded.diagnostic(("policy", "shape"), f"must look like 8xa100-80gb (got {c.policy.shape!r})", "COUNTxGPU-CLASS"))
    if loaded.engine == "job" and gpus is None:
        if shape:
            gpus = int(shape["count"])
        else:
            problems.append(loaded.diagnostic(("compute", "gpus"), "the GPU count is not set and no profile or policy.shape provides it", "set compute.gpus (0 for a CPU job)"))
    if problems:
        raise DiagnosticError(problems)
    disabled = bool(c.policy.disable_default_priorities)
    wpc = c.policy.workload_priority_class or (None if disabled else PRIORITY_TIERS[c.policy.priority_tier or "default"])
    nodes = c.execution.nodes if loaded.engine == "job" else 1
    return Resolution(
        namespace, team, normalise(lane) if lane else None, str(c.policy.queue), None, wpc, c.policy.pod_priority_class,
        placement_of(c.policy.topology), gpus or 0, nodes, c.compute.workers, c.compute.gpus_per_worker,
        False, None, profile_set,
    )
