"""Resolve where and how a validated config runs: namespace, profile, queue, priorities, cardinality.

Applies the profile-driven conflict rules of taugrid.md §1.3: once a profile is selected it is
authoritative, and an explicit config value that disagrees is an error, never silently overridden.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from tau_tui.core.runconfig.config import LoadedConfig
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError
from tau_tui.core.runconfig.profiles import Caller, Profile, ProfileSet, SelectionError, normalise, select
from tau_tui.core.runconfig.schema import LEGACY_PLACEMENTS
from tau_tui.core.runconfig.workspace import WorkspaceDefaults

PRIORITY_TIERS = {"default": "taugrid-default", "priority": "taugrid-priority"}
SHAPE = re.compile(r"^(?P<count>[0-9]+)x(?P<gpu_class>[a-z0-9-]+)$")
MULTIKUEUE = "multiKueue"
#: `run.ttl_seconds_after_finished`'s default (taugrid.md §1.2).
DEFAULT_JOB_TTL = 28800
METRICS_OFFLOAD_IMAGE_ENV = "TAU_METRICS_OFFLOAD_IMAGE"


def _offload_image_from_environment() -> str | None:
    return os.environ.get(METRICS_OFFLOAD_IMAGE_ENV, "").strip() or None


@dataclass(frozen=True)
class RenderOptions:
    namespace: str | None = None
    team: str | None = None
    lane: str | None = None
    submission_id: str | None = None
    #: The TauWorkspace whose defaults apply (never for a client dry-run: taugrid.md §2.3).
    workspace: WorkspaceDefaults | None = None
    #: The taugrid-portal image the metrics-offload sidecar runs (`TAU_METRICS_OFFLOAD_IMAGE`).
    metrics_offload_image: str | None = field(default_factory=_offload_image_from_environment)


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
    #: The TauWorkspace the run belongs to (policy.workspace, or the one whose defaults applied).
    workspace: str | None = None
    #: `storage.output`, or the workspace's output root plus the run name.
    output: str | None = None
    ttl_seconds_after_finished: int = DEFAULT_JOB_TTL
    metrics_offload_image: str | None = None
    #: Where a resolved value came from when not from the file: key path -> "profile NAME", "workspace NAME", "-n".
    provenance: dict[str, str] = field(default_factory=dict)
    #: Things that render but that the user should know (a MultiKueue run with a PVC).
    warnings: tuple[Diagnostic, ...] = ()


def placement_of(topology: str | None) -> str | None:
    if topology is None:
        return None
    return LEGACY_PLACEMENTS.get(topology, topology)


def resolve(loaded: LoadedConfig, profile_set: ProfileSet, options: RenderOptions) -> Resolution:
    c = loaded.config
    problems: list[Diagnostic] = []
    ws = options.workspace

    def err(path: tuple[Any, ...], message: str, hint: str) -> None:
        problems.append(loaded.diagnostic(path, message, hint))

    provenance: dict[str, str] = {}
    namespace = c.policy.namespace
    if options.namespace and namespace and options.namespace != namespace:
        err(("policy", "namespace"), f"is {namespace!r} but -n asks for {options.namespace!r}", "drop -n or change policy.namespace")
    if ws is not None and c.policy.workspace and c.policy.workspace != ws.name:
        err(("policy", "workspace"), f"is {c.policy.workspace!r} but the workspace applied is {ws.name!r}",
            "drop --workspace or change policy.workspace")
    if not namespace and options.namespace:
        namespace, provenance["policy.namespace"] = options.namespace, "-n"
    if not namespace and ws is not None:
        namespace, provenance["policy.namespace"] = ws.namespace, f"workspace {ws.name}"
    if not namespace:
        err(("policy", "namespace"), "is not set and no -n was given", "set policy.namespace or pass -n NAMESPACE")
    team = c.policy.team or options.team or os.environ.get("TAU_TEAM") or None
    lane = c.policy.lane or options.lane
    if c.policy.mode == "elastic" and not c.policy.profile and not profile_set.profiles:
        err(("policy", "mode"), "elastic scaling cannot be honoured without a workload profile: tau-tui renders "
            "fixed-size Jobs and RayJobs", "remove policy.mode, or pick a profile with mode: elastic")
    if problems:
        raise DiagnosticError(problems)
    assert namespace is not None
    context = _Context(loaded, options, namespace, provenance)

    if profile_set.gate_open and not profile_set.profiles and not c.policy.profile:
        return _resolve_without_profile(context, profile_set, team, lane)

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
    for key in ("policy.queue", "policy.mode", "policy.topology", "policy.workload_priority_class", "policy.pod_priority_class"):
        context.provenance.setdefault(key, f"profile {profile.name}")
    warnings = []
    if multikueue and c.storage.data_pvc:
        warnings.append(loaded.diagnostic(
            ("storage", "data_pvc"), f"profile {profile.name!r} dispatches through MultiKueue (Alpha): the run lands on a "
            f"worker cluster, but PVC {c.storage.data_pvc!r} and its data stay on one cluster",
            "make sure every worker has this PVC with the same data, or pick a singleCluster profile", severity="warning"))
    return context.resolution(
        team, lane, queue, cluster_queue, wpc, ppc, profile.placement, gpus, nodes, workers, gpus_per_worker, multikueue,
        profile, profile_set, tuple(warnings))


@dataclass
class _Context:
    """What every resolution path shares: the config, the options, the namespace, where values came from."""

    loaded: LoadedConfig
    options: RenderOptions
    namespace: str
    provenance: dict[str, str]

    def resolution(self, team: str | None, lane: str | None, queue: str, cluster_queue: str | None, wpc: str | None,
                   ppc: str | None, placement: str | None, gpus: int, nodes: int, workers: int, gpus_per_worker: int,
                   multikueue: bool, profile: Profile | None, profile_set: ProfileSet,
                   warnings: tuple[Diagnostic, ...] = ()) -> Resolution:
        c = self.loaded.config
        ws = self.options.workspace
        output = c.storage.output
        if output is None and ws is not None and (output := ws.output_for(str(c.run.name))) is not None:
            self.provenance["storage.output"] = f"workspace {ws.name}"
        ttl = c.run.ttl_seconds_after_finished
        if "ttl_seconds_after_finished" not in c.run.model_fields_set and ws is not None and ws.ttl_seconds_after_finished:
            if self.loaded.engine == "job":  # the workspace's TTL is read for Jobs only (§4.2)
                ttl = ws.ttl_seconds_after_finished
                self.provenance["run.ttl_seconds_after_finished"] = f"workspace {ws.name}"
        return Resolution(
            self.namespace, team, lane, queue, cluster_queue, wpc, ppc, placement, gpus, nodes, workers, gpus_per_worker,
            multikueue, profile, profile_set, workspace=c.policy.workspace or (ws.name if ws else None), output=output,
            ttl_seconds_after_finished=ttl, metrics_offload_image=self.options.metrics_offload_image,
            provenance=self.provenance, warnings=warnings,
        )


def _resolve_without_profile(context: _Context, profile_set: ProfileSet, team: str | None, lane: str | None) -> Resolution:
    """The cluster declares no workload profiles (WorkloadProfilesReady reason NoWorkloadProfiles)."""
    loaded, namespace, ws = context.loaded, context.namespace, context.options.workspace
    c = loaded.config
    problems: list[Diagnostic] = []
    queue = c.policy.queue if c.policy.queue != "auto" else None
    if not queue and ws is not None and ws.queue:
        queue, context.provenance["policy.queue"] = ws.queue, f"workspace {ws.name}"
    if not queue:
        problems.append(loaded.diagnostic(("policy", "queue"), "the cluster declares no workload profiles, so the LocalQueue must be named", "set policy.queue to a LocalQueue in " + namespace))
    gpus = c.compute.gpus
    shape = SHAPE.match(c.policy.shape) if c.policy.shape else None
    if c.policy.shape and not shape:
        problems.append(loaded.diagnostic(("policy", "shape"), f"must look like 8xa100-80gb (got {c.policy.shape!r})", "COUNTxGPU-CLASS"))
    if shape and gpus is not None and loaded.engine == "job" and int(shape["count"]) != gpus:
        problems.append(loaded.diagnostic(("policy", "shape"), f"asks for {shape['count']} GPUs but compute.gpus is {gpus}",
                                          "make them agree, or drop one of them"))
    if shape and c.policy.gpu_class and c.policy.gpu_class != shape["gpu_class"]:
        problems.append(loaded.diagnostic(("policy", "shape"), f"names GPU class {shape['gpu_class']!r} but policy.gpu_class is {c.policy.gpu_class!r}",
                                          "make them agree, or drop one of them"))
    if loaded.engine == "job" and gpus is None:
        if shape:
            gpus = int(shape["count"])
            context.provenance["compute.gpus"] = "policy.shape"
        else:
            problems.append(loaded.diagnostic(("compute", "gpus"), "the GPU count is not set and no profile or policy.shape provides it", "set compute.gpus (0 for a CPU job)"))
    if problems:
        raise DiagnosticError(problems)
    disabled = bool(c.policy.disable_default_priorities)
    tier: str | None = c.policy.priority_tier
    if tier is None and ws is not None and ws.priority_tier and not c.policy.workload_priority_class and not disabled:
        tier, context.provenance["policy.priority_tier"] = ws.priority_tier, f"workspace {ws.name}"
    wpc = c.policy.workload_priority_class or (None if disabled else PRIORITY_TIERS[tier or "default"])
    nodes = c.execution.nodes if loaded.engine == "job" else 1
    assert queue is not None
    return context.resolution(
        team, normalise(lane) if lane else None, str(queue), None, wpc, c.policy.pod_priority_class,
        placement_of(c.policy.topology), gpus or 0, nodes, c.compute.workers, c.compute.gpus_per_worker,
        False, None, profile_set,
    )
