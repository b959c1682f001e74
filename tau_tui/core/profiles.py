"""Workload profiles from `TauCluster/cluster` status, behind the fail-closed gate (taugrid.md §3).

Clients read only `status.workloadProfiles`. A profile is usable only when all five gate checks
of §3.4 hold; `explain` says for every profile why it is or is not selectable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cluster.api import Condition
from .cluster.views import parse_conditions
from .diagnostics import Diagnostic, DiagnosticError
from .yamlsource import load_mapping_file

GROUP = "tau.azure.com"
VERSION = "v1alpha1"
TAUCLUSTER_PLURAL = "clusters"
TAUCLUSTER_NAME = "cluster"
SNAPSHOT_KIND = "TauWorkloadProfileSnapshot"
SET_CONDITION = "WorkloadProfilesReady"
MULTIKUEUE_READY = "MultiKueueReady"
MULTIKUEUE_TARGET = "multiKueue"
DEFAULT_QUEUE = "jobqueue"
SUB_CONDITIONS = (
    "LocalQueuesResolved",
    "ClusterQueuesReady",
    "ExecutionReady",
    "ResourceFlavorsReady",
    "TopologiesReady",
    "PriorityClassesReady",
)
# Declared text fields that are free-form and therefore not normalised before hashing.
UNNORMALISED_FIELDS = {"description", "message", "reason"}


def normalise(value: str) -> str:
    """taugrid.md §3.2: lower-case, with '_' and spaces turned into '-'."""
    return value.strip().lower().replace("_", "-").replace(" ", "-")


def _normalised_tree(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _normalised_tree(v, k) for k, v in value.items() if k != "conditions"}
    if isinstance(value, list):
        items = [_normalised_tree(v, key) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, str) and key not in UNNORMALISED_FIELDS:
        return normalise(value)
    return value


def compute_profile_set_hash(profiles: list[dict[str, Any]]) -> str:
    """SHA-256 over the sorted, normalised profiles (intent plus resolved identities), conditions excluded."""
    entries = sorted((_normalised_tree(p) for p in profiles), key=lambda p: str(p.get("name", "")))
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class LocalQueueRef:
    namespace: str
    name: str
    cluster_queue: str


@dataclass
class Profile:
    """One entry of `status.workloadProfiles.profiles[]`."""

    name: str
    raw: dict[str, Any]
    description: str = ""
    teams: tuple[str, ...] = ()
    lanes: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    gpus_per_worker: int = 0
    worker_count: int = 1
    mode: str = "fixed"
    placement: str = "unconstrained"
    default_local_queue: str = ""
    execution_target: str = "singleCluster"
    workload_priority_class: str | None = None
    pod_priority_class: str | None = None
    disable_default_priorities: bool = False
    local_queues: tuple[LocalQueueRef, ...] = ()
    cluster_queues: tuple[str, ...] = ()
    resource_flavors: tuple[str, ...] = ()
    topologies: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        applicability = data.get("applicability") or {}
        priorities = data.get("priorities") or {}
        return cls(
            name=str(data.get("name", "")),
            raw=data,
            description=str(data.get("description", "")),
            teams=tuple(normalise(t) for t in applicability.get("teams") or ()),
            lanes=tuple(normalise(t) for t in applicability.get("lanes") or ()),
            namespaces=tuple(applicability.get("namespaces") or ()),
            gpus_per_worker=int(data.get("gpusPerWorker", 0)),
            worker_count=int(data.get("workerCount", 1)),
            mode=str(data.get("mode", "fixed")),
            placement=str(data.get("placement", "unconstrained")),
            default_local_queue=str(data.get("defaultLocalQueue", "")),
            execution_target=str(data.get("executionTarget", "singleCluster")),
            workload_priority_class=priorities.get("workloadPriorityClassName"),
            pod_priority_class=priorities.get("podPriorityClassName"),
            disable_default_priorities=bool(data.get("disableDefaultPriorities", False)),
            local_queues=tuple(
                LocalQueueRef(str(q.get("namespace", "")), str(q.get("name", "")), str(q.get("clusterQueue", "")))
                for q in data.get("localQueues") or ()
            ),
            cluster_queues=tuple(data.get("clusterQueues") or ()),
            resource_flavors=tuple(data.get("resourceFlavors") or ()),
            topologies=tuple(data.get("topologies") or ()),
            conditions=parse_conditions(data.get("conditions")),
        )

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def local_queue_for(self, namespace: str) -> LocalQueueRef | None:
        """§3.5: the resolved LocalQueue in the caller's namespace replaces defaultLocalQueue."""
        return next((q for q in self.local_queues if q.namespace == namespace), None)


@dataclass
class ProfileSet:
    """The profiles as read from one source, plus the set-level gate result."""

    source: str
    generation: int | None
    profile_set_hash: str
    profiles: list[Profile]
    gate_problems: list[str] = field(default_factory=list)
    #: TauCluster ``MultiKueueReady`` (None: absent, or an offline snapshot that cannot carry it).
    multikueue_ready: Condition | None = None
    #: ``spec.features.multiKueue`` (None: not set, the standard installation's controller support).
    multikueue_feature: str | None = None
    #: ``spec.workspaceDefaults.defaultQueue`` (the single-cluster default queue).
    default_queue: str = DEFAULT_QUEUE
    offline: bool = False

    @property
    def gate_open(self) -> bool:
        return not self.gate_problems

    def get(self, name: str) -> Profile | None:
        return next((p for p in self.profiles if p.name == name), None)


@dataclass(frozen=True)
class Caller:
    namespace: str | None
    team: str | None
    lane: str | None


@dataclass(frozen=True)
class ProfileExplanation:
    name: str
    selectable: bool
    reasons: tuple[str, ...]
    profile: Profile


def _set_gate(generation: int | None, workload_profiles: dict[str, Any], conditions: list[Condition]) -> list[str]:
    problems: list[str] = []
    observed = workload_profiles.get("observedGeneration")
    if generation is None:
        problems.append("metadata.generation is missing")
    elif observed != generation:
        problems.append(f"status.workloadProfiles.observedGeneration is {observed}, not the current generation {generation}: the controller has not caught up")
    set_condition = next((c for c in conditions if c.type == SET_CONDITION), None)
    if set_condition is None:
        problems.append(f"condition {SET_CONDITION} is missing")
    elif set_condition.observed_generation != generation:
        problems.append(f"condition {SET_CONDITION} is stale (observedGeneration {set_condition.observed_generation}, generation {generation})")
    declared = workload_profiles.get("profileSetHash") or ""
    profiles = workload_profiles.get("profiles") or []
    if not declared:
        problems.append("status.workloadProfiles.profileSetHash is empty")
    elif declared != compute_profile_set_hash(profiles):
        problems.append("status.workloadProfiles.profileSetHash does not match the profiles: the status is inconsistent")
    return problems


def profile_set_from_taucluster(obj: dict[str, Any]) -> ProfileSet:
    """Decode TauCluster/cluster and run the set-level gate checks (§3.4 items 1–3)."""
    generation = (obj.get("metadata") or {}).get("generation")
    status = obj.get("status") or {}
    workload_profiles = status.get("workloadProfiles") or {}
    conditions = list(parse_conditions(status.get("conditions")))
    profiles = [Profile.from_dict(p) for p in workload_profiles.get("profiles") or ()]
    spec = obj.get("spec") or {}
    return ProfileSet(
        source=f"TauCluster/{TAUCLUSTER_NAME} generation {generation}",
        generation=generation,
        profile_set_hash=str(workload_profiles.get("profileSetHash") or ""),
        profiles=profiles,
        gate_problems=_set_gate(generation, workload_profiles, conditions),
        multikueue_ready=next((c for c in conditions if c.type == MULTIKUEUE_READY), None),
        multikueue_feature=(spec.get("features") or {}).get("multiKueue"),
        default_queue=str((spec.get("workspaceDefaults") or {}).get("defaultQueue") or DEFAULT_QUEUE),
    )


def load_snapshot(path: Path | str) -> ProfileSet:
    """Decode an offline TauWorkloadProfileSnapshot file; revalidates the hash (§3.6)."""
    path = Path(path)
    data, smap = load_mapping_file(path)
    problems: list[Diagnostic] = []
    if data.get("apiVersion") != f"{GROUP}/{VERSION}" or data.get("kind") != SNAPSHOT_KIND:
        problems.append(Diagnostic(str(path), f"expected apiVersion {GROUP}/{VERSION} kind {SNAPSHOT_KIND}", position=smap.position_of(("kind",)), hint="export one from a cluster with `tau cluster profiles export`"))
    generation = data.get("tauClusterGeneration")
    if not isinstance(generation, int):
        problems.append(Diagnostic(str(path), "tauClusterGeneration must be an integer", path="tauClusterGeneration", position=smap.position_of(("tauClusterGeneration",)), hint="re-export the snapshot"))
    profiles_raw = data.get("profiles")
    if not isinstance(profiles_raw, list):
        problems.append(Diagnostic(str(path), "profiles must be a list", path="profiles", position=smap.position_of(("profiles",)), hint="re-export the snapshot"))
    if problems:
        raise DiagnosticError(problems)
    declared = str(data.get("profileSetHash") or "")
    gate: list[str] = []
    if not declared:
        gate.append("profileSetHash is empty")
    elif declared != compute_profile_set_hash(profiles_raw):
        gate.append("profileSetHash does not match the profiles: the snapshot was edited or is corrupt")
    return ProfileSet(
        source=f"snapshot {path}",
        generation=generation,
        profile_set_hash=declared,
        profiles=[Profile.from_dict(p) for p in profiles_raw if isinstance(p, dict)],
        gate_problems=gate,
        offline=True,
    )


def _applicability(profile: Profile, caller: Caller) -> list[str]:
    reasons: list[str] = []
    checks = (
        ("namespace", profile.namespaces, caller.namespace, lambda v: v),
        ("team", profile.teams, caller.team, normalise),
        ("lane", profile.lanes, caller.lane, normalise),
    )
    for what, allowed, value, norm in checks:
        if not allowed:
            continue
        if value is None:
            reasons.append(f"limited to {what}s {', '.join(allowed)} and the {what} is not set")
        elif norm(value) not in allowed:
            reasons.append(f"not applicable to {what} {value} (allowed: {', '.join(allowed)})")
    return reasons


def _readiness(profile: Profile, generation: int | None) -> list[str]:
    ready = profile.condition("Ready")
    if ready is None:
        return ["condition Ready is missing"]
    reasons: list[str] = []
    if ready.status != "True":
        explanation = ": ".join(part for part in (ready.reason, ready.message) if part)
        detail = f"Ready={ready.status}" + (f" ({explanation})" if explanation else "")
        failing = [c for c in (profile.condition(t) for t in SUB_CONDITIONS) if c is not None and c.status != "True"]
        if failing:
            detail += "; failing: " + ", ".join(f"{c.type}={c.status} {c.reason}".strip() for c in failing)
        reasons.append(detail)
    if ready.observed_generation is not None and generation is not None and ready.observed_generation != generation:
        reasons.append(f"Ready is stale (observedGeneration {ready.observed_generation}, generation {generation})")
    return reasons


def _multikueue_boundary(profile: Profile, profile_set: ProfileSet) -> list[str]:
    """The seed's tenant boundary for dispatch (000_362d573c40e0bbf8): controller
    support, a *current* MultiKueueReady=True, and a dedicated non-global queue.
    Selection (explicit or unique implicit) is :func:`select`'s part.  Client
    dry-run, server dry-run and submit all come through here."""
    if profile.execution_target != MULTIKUEUE_TARGET:
        return []
    reasons: list[str] = []
    if profile_set.multikueue_feature == "Disabled":
        reasons.append("MultiKueue controller support is disabled (TauCluster spec.features.multiKueue=Disabled)")
    ready = profile_set.multikueue_ready
    if profile_set.offline:
        reasons.append("an offline snapshot cannot prove a current MultiKueueReady=True; dispatch through a multiKueue "
                       "profile needs the live TauCluster")
    elif ready is None:
        reasons.append("TauCluster reports no MultiKueueReady condition: manager prerequisites are unproven")
    elif ready.status != "True":
        reasons.append(f"MultiKueueReady={ready.status}" + (f" ({ready.reason}: {ready.message})" if ready.reason or ready.message else "")
                       + ": the manager's MultiKueue prerequisites are not ready")
    elif ready.observed_generation != profile_set.generation:
        reasons.append(f"MultiKueueReady is not current (observedGeneration {ready.observed_generation}, "
                       f"generation {profile_set.generation})")
    defaults = {DEFAULT_QUEUE, profile_set.default_queue}
    if not profile.namespaces:
        reasons.append("a multiKueue profile must be non-global (applicability.namespaces is empty)")
    if profile.default_local_queue in defaults:
        reasons.append(f"a multiKueue profile must use a dedicated queue, not the default queue {profile.default_local_queue}")
    for other in profile_set.profiles:
        if other.name == profile.name or other.namespaces:
            continue
        shared = set(other.cluster_queues) & set(profile.cluster_queues)
        if other.default_local_queue == profile.default_local_queue or shared:
            reasons.append(f"its queue is shared with global profile {other.name}"
                           + (f" (ClusterQueue {', '.join(sorted(shared))})" if shared else ""))
    return reasons


def explain(profile_set: ProfileSet, caller: Caller) -> list[ProfileExplanation]:
    """For every profile: selectable or not, and why. The profile pane shows this."""
    out = []
    for profile in sorted(profile_set.profiles, key=lambda p: p.name):
        reasons = [f"profile set unusable: {p}" for p in profile_set.gate_problems]
        reasons += _readiness(profile, profile_set.generation)
        reasons += _multikueue_boundary(profile, profile_set)
        reasons += _applicability(profile, caller)
        out.append(ProfileExplanation(profile.name, not reasons, tuple(reasons), profile))
    return out


class SelectionError(Exception):
    """No profile can be used; the message names the candidates and what to do."""


def select(profile_set: ProfileSet, explicit: str | None, caller: Caller) -> Profile:
    """§3.5: the explicit profile if usable, else the unique ready and applicable one."""
    if profile_set.gate_problems:
        raise SelectionError(
            f"workload profiles from {profile_set.source} cannot be trusted: " + "; ".join(profile_set.gate_problems)
            + ". Wait for the tau-core controller to reconcile, or ask the platform owner to check TauCluster/cluster"
        )
    explanations = explain(profile_set, caller)
    usable = [e for e in explanations if e.selectable]
    where = f"namespace={caller.namespace or '-'}, team={caller.team or '-'}, lane={caller.lane or '-'}"
    if explicit:
        chosen = next((e for e in explanations if e.name == explicit), None)
        if chosen is None:
            names = ", ".join(e.name for e in usable) or "none"
            raise SelectionError(f"workload profile {explicit!r} is unavailable; available profiles: {names}")
        if not chosen.selectable:
            raise SelectionError(f"workload profile {explicit!r} cannot be used: " + "; ".join(chosen.reasons))
        return chosen.profile
    if not usable:
        raise SelectionError(f"no ready workload profile matches {where}; set policy.profile explicitly")
    if len(usable) > 1:
        names = ", ".join(e.name for e in usable)
        raise SelectionError(f"multiple ready workload profiles match {where} ({names}); set policy.profile explicitly")
    return usable[0].profile


def read_profile_set(api_client: Any) -> ProfileSet:
    """Read TauCluster/cluster with the kubernetes client. Raises ProfileReadError with advice."""
    from kubernetes.client import CustomObjectsApi
    from kubernetes.client.exceptions import ApiException

    try:
        obj = CustomObjectsApi(api_client).get_cluster_custom_object(GROUP, VERSION, TAUCLUSTER_PLURAL, TAUCLUSTER_NAME)
    except ApiException as err:
        raise ProfileReadError(_explain_read_error(err)) from None
    except Exception as err:  # connection refused, TLS, DNS: all mean "cannot read".
        raise ProfileReadError(f"cannot reach the cluster to read TauCluster/{TAUCLUSTER_NAME}: {err}; check the kubeconfig context, or use --profiles SNAPSHOT for an offline client dry-run") from None
    return profile_set_from_taucluster(obj)


class ProfileReadError(Exception):
    pass


def _explain_read_error(err: Any) -> str:
    if err.status == 403:
        return f"access forbidden reading TauCluster/{TAUCLUSTER_NAME}: ask for `get` on clusters.{GROUP}"
    if err.status == 404:
        try:
            details = json.loads(err.body or "{}").get("details") or {}
        except ValueError:
            details = {}
        if details.get("name") == TAUCLUSTER_NAME:
            return f"TauCluster/{TAUCLUSTER_NAME} not found: TauGrid is installed but not configured; ask the platform owner"
        return f"the TauCluster CRD (clusters.{GROUP}) is not installed in this cluster; use --profiles SNAPSHOT or a TauGrid cluster"
    return f"reading TauCluster/{TAUCLUSTER_NAME} failed: HTTP {err.status} {err.reason}"


def snapshot_document(generation: int, profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """A TauWorkloadProfileSnapshot for these resolved profiles, with its hash computed."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": SNAPSHOT_KIND,
        "tauClusterGeneration": generation,
        "profileSetHash": compute_profile_set_hash(profiles),
        "profiles": profiles,
    }


def taucluster_status(generation: int, profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """`status` of a TauCluster whose controller has caught up with these resolved profiles."""
    ready = all(
        any(c.get("type") == "Ready" and c.get("status") == "True" for c in p.get("conditions") or ())
        for p in profiles
    )
    if not profiles:
        condition = {"status": "True", "reason": "NoWorkloadProfiles", "message": "no workload profiles are declared"}
    elif ready:
        condition = {"status": "True", "reason": "WorkloadProfilesReady", "message": "all workload profiles are ready"}
    else:
        condition = {"status": "False", "reason": "WorkloadProfilesNotReady", "message": "some workload profiles are not ready"}
    return {
        "observedGeneration": generation,
        "workloadProfiles": {
            "observedGeneration": generation,
            "observed": True,
            "ready": bool(profiles) and ready,
            "drifted": False,
            "profileSetHash": compute_profile_set_hash(profiles),
            "profiles": profiles,
        },
        "conditions": [{"type": SET_CONDITION, "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z", **condition}],
    }
