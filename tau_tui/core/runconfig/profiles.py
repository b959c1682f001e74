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

from tau_tui.core.apifields import Condition, parse_conditions
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError, shown
from tau_tui.core.runconfig.yamlsource import KeyPath, format_path, load_mapping_file

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
#: Teams tau-tui's MultiKueue steps publish a profile to when it must reach no tenant: setup step 4
#: (before the dependency matrix verifies) and a drain's step 1. A team is a word a tenant writes
#: (policy.team, --team, $TAU_TEAM), so these names match no caller, whoever claims them.
NOT_YET_AUTHORIZED_TEAM = "tau-multikueue-not-yet-authorized"
DRAINED_TEAM = "tau-multikueue-drained"
RESERVED_TEAMS = (DRAINED_TEAM, NOT_YET_AUTHORIZED_TEAM)
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


INT32_MAX = 2147483647
_STRING_LIST = ("list", str)
# The shape of one profile as served (taugrid.md §3.3): field → type, with the entries of lists and
# mappings. Unknown fields are allowed (a newer controller may add some); a known field of the wrong
# type would crash or mislead the client, so it closes the gate.
PROFILE_SHAPE: dict[str, Any] = {
    "name": str,
    "description": str,
    "applicability": {"teams": _STRING_LIST, "lanes": _STRING_LIST, "namespaces": _STRING_LIST},
    "gpusPerWorker": (int, 0),
    "workerCount": (int, 1),
    "mode": str,
    "placement": str,
    "defaultLocalQueue": str,
    "executionTarget": str,
    "priorities": {"workloadPriorityClassName": str, "podPriorityClassName": str},
    "disableDefaultPriorities": bool,
    "localQueues": ("list", {"namespace": str, "name": str, "clusterQueue": str}),
    "clusterQueues": _STRING_LIST,
    "resourceFlavors": _STRING_LIST,
    "topologies": _STRING_LIST,
    "workloadPriorityClasses": _STRING_LIST,
    "podPriorityClasses": _STRING_LIST,
    "conditions": ("list", {"type": str, "status": str, "reason": str, "message": str, "lastTransitionTime": str, "observedGeneration": (int, 0)}),
}
_WORDS = {str: "a string", bool: "true or false", dict: "a mapping", list: "a list"}


def shape_problems(value: Any, shape: Any, path: KeyPath) -> list[tuple[KeyPath, str]]:
    """Where `value` does not have `shape` (see PROFILE_SHAPE): (key path, what is wrong). None is "absent"."""
    if value is None:
        return []
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [(path, f"must be a mapping (got {shown(value)})")]
        out: list[tuple[KeyPath, str]] = []
        for key, inner in shape.items():
            out += shape_problems(value.get(key), inner, path + (key,))
        return out
    if isinstance(shape, tuple) and shape[0] == "list":
        if not isinstance(value, list):
            return [(path, f"must be a list (got {shown(value)})")]
        out = []
        for index, item in enumerate(value):
            out += shape_problems(item, shape[1], path + (index,)) if item is not None else [(path + (index,), "must not be empty")]
        return out
    if isinstance(shape, tuple):  # (int, minimum)
        if not isinstance(value, int) or isinstance(value, bool):
            return [(path, f"must be a whole number (got {shown(value)})")]
        if not shape[1] <= value <= INT32_MAX:
            return [(path, f"must be between {shape[1]} and {INT32_MAX} (got {shown(value)})")]
        return []
    if not isinstance(value, shape):
        return [(path, f"must be {_WORDS[shape]} (got {shown(value)})")]
    return []


def profiles_problems(profiles: Any, path: KeyPath) -> list[tuple[KeyPath, str]]:
    if not isinstance(profiles, list):
        return [(path, f"must be a list (got {shown(profiles)})")]
    out: list[tuple[KeyPath, str]] = []
    for index, profile in enumerate(profiles):
        if not isinstance(profile, dict):
            out.append((path + (index,), f"must be a mapping (got {shown(profile)})"))
            continue
        if not isinstance(profile.get("name"), str) or not profile.get("name"):
            out.append((path + (index, "name"), "is required and must be a string"))
        out += shape_problems(profile, PROFILE_SHAPE, path + (index,))
    return out


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
            name=str(data.get("name") or ""),
            raw=data,
            description=str(data.get("description") or ""),
            teams=tuple(normalise(t) for t in applicability.get("teams") or ()),
            lanes=tuple(normalise(t) for t in applicability.get("lanes") or ()),
            namespaces=tuple(applicability.get("namespaces") or ()),
            gpus_per_worker=int(data.get("gpusPerWorker") or 0),
            worker_count=int(data.get("workerCount") or 1),
            mode=str(data.get("mode") or "fixed"),
            placement=str(data.get("placement") or "unconstrained"),
            default_local_queue=str(data.get("defaultLocalQueue") or ""),
            execution_target=str(data.get("executionTarget") or "singleCluster"),
            workload_priority_class=priorities.get("workloadPriorityClassName"),
            pod_priority_class=priorities.get("podPriorityClassName"),
            disable_default_priorities=bool(data.get("disableDefaultPriorities", False)),
            local_queues=tuple(
                LocalQueueRef(str(q.get("namespace") or ""), str(q.get("name") or ""), str(q.get("clusterQueue") or ""))
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
    metadata: dict[str, Any] = raw if isinstance(raw := obj.get("metadata"), dict) else {}
    generation = metadata.get("generation")
    status: dict[str, Any] = raw if isinstance(raw := obj.get("status"), dict) else {}
    workload_profiles: dict[str, Any] = raw if isinstance(raw := status.get("workloadProfiles"), dict) else {}
    # A malformed status closes the gate with the reason; it never crashes the client.
    malformed = [f"{format_path(path)} {message}" for path, message in profiles_problems(workload_profiles.get("profiles") or [], ("status", "workloadProfiles", "profiles"))]
    if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
        malformed.append(f"metadata.generation must be a whole number (got {shown(generation)})")
        generation = None
    conditions = list(parse_conditions(status.get("conditions") if isinstance(status.get("conditions"), list) else None))
    profiles = [] if malformed else [Profile.from_dict(p) for p in workload_profiles.get("profiles") or ()]
    spec: dict[str, Any] = raw if isinstance(raw := obj.get("spec"), dict) else {}
    return ProfileSet(
        source=f"TauCluster/{TAUCLUSTER_NAME} generation {generation}",
        generation=generation,
        profile_set_hash=str(workload_profiles.get("profileSetHash") or ""),
        profiles=profiles,
        gate_problems=malformed[:20] + _set_gate(generation, workload_profiles if not malformed else {**workload_profiles, "profiles": []}, conditions),
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
    if not isinstance(generation, int) or isinstance(generation, bool) or not 0 <= generation <= 2**63 - 1:
        problems.append(Diagnostic(str(path), "tauClusterGeneration must be an integer", path="tauClusterGeneration", position=smap.position_of(("tauClusterGeneration",)), hint="re-export the snapshot"))
    profiles_raw = data.get("profiles")
    if not isinstance(profiles_raw, list):
        problems.append(Diagnostic(str(path), "profiles must be a list", path="profiles", position=smap.position_of(("profiles",)), hint="re-export the snapshot"))
        profiles_raw = []  # reported above: the raise below ends the load before this is read
    else:
        for key_path, message in profiles_problems(profiles_raw, ("profiles",)):
            problems.append(Diagnostic(str(path), message, path=format_path(key_path), position=smap.position_of(key_path), hint="re-export the snapshot; it was edited or is corrupt"))
    declared_raw = data.get("profileSetHash")
    if declared_raw is not None and not isinstance(declared_raw, str):
        problems.append(Diagnostic(str(path), f"must be a string (got {shown(declared_raw)})", path="profileSetHash", position=smap.position_of(("profileSetHash",)), hint="re-export the snapshot"))
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
        if what == "team":
            reserved = [t for t in allowed if t in RESERVED_TEAMS]
            if reserved and len(reserved) == len(allowed):
                reasons.append(f"published to no tenant: its team{'s' if len(reserved) > 1 else ''} "
                               f"{', '.join(reserved)} {'are' if len(reserved) > 1 else 'is a'} reserved "
                               f"name{'s' if len(reserved) > 1 else ''} no caller can claim")
                continue
            if value is not None and norm(value) in RESERVED_TEAMS:
                reasons.append(f"team {value} is reserved by tau-tui for 'no tenant' and no caller may claim it")
                continue
            allowed = tuple(t for t in allowed if t not in RESERVED_TEAMS)
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


class ProfileReadError(Exception):
    pass


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
