"""The tenant boundary the MultiKueue steps publish and check on the manager: the profile's
applicability (authorised or "no tenant"), what the client's select() answers each caller, the
default-queue guard, and whether the dedicated LocalQueues are held.

"No tenant" is never a word a tenant can write: setup step 4 and a drain's step 1 limit the profile
to a reserved team (``profiles.RESERVED_TEAMS``, which select() matches to no caller, whoever claims
it) *and* hold the dedicated LocalQueues (``stopPolicy: Hold``: Kueue admits nothing through them),
until setup step 5 verifies the matrix and opens them."""

from __future__ import annotations

from itertools import product
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.engine import StepContext
from tau_tui.core.runconfig.profiles import (
    NOT_YET_AUTHORIZED_TEAM,
    RESERVED_TEAMS,
    Caller,
    SelectionError,
    profile_set_from_taucluster,
    select,
)

R = ResourceKind
#: A LocalQueue or ClusterQueue stopPolicy that admits nothing new.
HELD = ("Hold", "HoldAndDrain")


def tau_cluster(ctx: StepContext) -> dict[str, Any] | None:
    return ctx.manager.get(R.TAU_CLUSTER.type, "cluster")


def default_queues(ctx: StepContext, tc: dict[str, Any] | None) -> set[str]:
    """The single-cluster default queue: ``jobqueue`` and whatever TauCluster names."""
    named = (((tc or {}).get("spec") or {}).get("workspaceDefaults") or {}).get("defaultQueue")
    return {ctx.default_queue} | ({named} if named else set())


def authorized_applicability(plan: Any) -> dict[str, list[str]]:
    """The plan's applicability: what step 5 authorises once the matrix verifies."""
    applicability = {"namespaces": list(plan.namespaces)}
    if plan.teams:
        applicability["teams"] = list(plan.teams)
    if plan.lanes:
        applicability["lanes"] = list(plan.lanes)
    return applicability


def unauthorized_applicability(plan: Any) -> dict[str, list[str]]:
    """What step 4 publishes: non-global (the tenant namespaces, so the LocalQueues resolve), and limited to
    a reserved team select() matches to no caller, so no tenant can select the profile before the
    matrix verifies."""
    return {"namespaces": list(plan.namespaces), "teams": [NOT_YET_AUTHORIZED_TEAM]}


def same_applicability(found: dict[str, Any] | None, wanted: dict[str, list[str]]) -> bool:
    found = found or {}
    return all(sorted(found.get(key) or ()) == sorted(wanted.get(key) or ()) for key in ("namespaces", "teams", "lanes"))


def profile_entry(ctx: StepContext, applicability: dict[str, list[str]]) -> dict[str, Any]:
    plan = ctx.plan
    return {"name": plan.profile, "description": f"Dispatch to MultiKueue workers {', '.join(w.name for w in plan.workers)}",
            "applicability": applicability, "gpusPerWorker": plan.gpus_per_worker, "workerCount": plan.worker_count,
            "mode": "fixed", "placement": "unconstrained", "defaultLocalQueue": plan.local_queue,
            "executionTarget": "multiKueue",
            "priorities": {"workloadPriorityClassName": plan.priority_class, "podPriorityClassName": plan.priority_class}}


def declared_profiles(tc: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list(((tc or {}).get("spec") or {}).get("workloadProfiles") or ())


def declared_profile(tc: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    return next((p for p in declared_profiles(tc) if p.get("name") == name), None)


def status_profiles(tc: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((((tc or {}).get("status") or {}).get("workloadProfiles") or {}).get("profiles") or ())


def tenant_callers(plan: Any, *, unset_too: bool) -> list[Caller]:
    """Every tenant caller of the plan: each namespace × team × lane (``unset_too``: also a caller that sets
    no team or lane)."""
    teams: list[str | None] = [*plan.teams] + ([None] if unset_too or not plan.teams else [])
    lanes: list[str | None] = [*plan.lanes] + ([None] if unset_too or not plan.lanes else [])
    return [Caller(ns, team, lane) for ns, team, lane in product(plan.namespaces, teams, lanes)]


def _who(caller: Caller) -> str:
    return f"{caller.namespace}/{caller.team or '-'}/{caller.lane or '-'}"


def selection_by(tc: dict[str, Any], profile: str, callers: list[Caller]) -> tuple[list[str], list[str]]:
    """What the client's select() (render, server dry-run, submit) answers each caller for ``profile``:
    (callers it accepts, callers it refuses with the first reason)."""
    profile_set = profile_set_from_taucluster(tc)
    accepted, refused = [], []
    for caller in callers:
        try:
            select(profile_set, profile, caller)
        except SelectionError as exc:
            refused.append(f"{_who(caller)} ({str(exc).split('; ')[0]})")
        else:
            accepted.append(_who(caller))
    return accepted, refused


def default_cluster_queues(ctx: StepContext, defaults: set[str]) -> set[str]:
    """The ClusterQueues behind the default queue, in any namespace."""
    behind = ((lq.get("spec") or {}).get("clusterQueue") for lq in ctx.manager.list(R.LOCAL_QUEUE.type, None)
              if lq["metadata"]["name"] in defaults)
    return {str(cq) for cq in behind if cq}


def queue_guard(ctx: StepContext, tc: dict[str, Any] | None) -> str | None:
    """The default-queue guard: a MultiKueue AdmissionCheck never goes on the
    default queue, nor on any queue a global profile uses (taugrid.md §3.7).
    Checked before the objects exist and again, on what the cluster holds, once they do."""
    plan = ctx.plan
    defaults = default_queues(ctx, tc)
    if not plan.namespaces:
        return "a MultiKueue profile must be non-global: name its tenant namespaces"
    if plan.local_queue in defaults:
        return (f"refused: {plan.local_queue} is the default queue ({', '.join(sorted(defaults))}), which stays single-cluster "
                "and must never receive a MultiKueue AdmissionCheck; give the plan a dedicated localQueue")
    default_cqs = default_cluster_queues(ctx, defaults)
    if plan.cluster_queue in default_cqs:
        return (f"refused: ClusterQueue {plan.cluster_queue} backs the default queue; a MultiKueue AdmissionCheck there would "
                "send every default submission to workers. Give the plan a dedicated clusterQueue")
    for profile in declared_profiles(tc) + status_profiles(tc):
        if profile.get("name") == plan.profile:
            continue
        if (profile.get("applicability") or {}).get("namespaces"):
            continue
        if profile.get("defaultLocalQueue") == plan.local_queue or plan.cluster_queue in (profile.get("clusterQueues") or ()):
            return (f"refused: global profile {profile.get('name')} uses queue {plan.local_queue}/{plan.cluster_queue}; "
                    "a queue a global profile uses must not receive a MultiKueue AdmissionCheck")
    cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
    if cq is not None:
        checks = [c.get("name") for c in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or ()]
        if checks and checks != [plan.admission_check]:
            return (f"refused: ClusterQueue {plan.cluster_queue} exists with admission checks {checks}; a multiKueue profile "
                    "needs a queue that uses only the dedicated MultiKueue check")
    # What already exists under the plan's names must not lead to the default queue either.
    for profile in [p for p in declared_profiles(tc) + status_profiles(tc) if p.get("name") == plan.profile]:
        if profile.get("defaultLocalQueue") in defaults:
            return (f"refused: profile {plan.profile} exists with defaultLocalQueue {profile.get('defaultLocalQueue')}, the "
                    "default queue, which stays single-cluster; fix or remove that profile, or name another profile")
        shared = sorted(set(profile.get("clusterQueues") or ()) & default_cqs)
        if shared:
            return (f"refused: profile {plan.profile} resolves ClusterQueue {', '.join(shared)}, which backs the default "
                    "queue; fix or remove that profile, or name another profile")
    for ns in plan.namespaces:
        lq = ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns)
        behind = ((lq or {}).get("spec") or {}).get("clusterQueue")
        if lq is not None and behind != plan.cluster_queue:
            what = "which backs the default queue" if behind in default_cqs else f"not the plan's {plan.cluster_queue}"
            return (f"refused: LocalQueue {ns}/{plan.local_queue} exists and feeds ClusterQueue {behind}, {what}; "
                    "give the plan a dedicated localQueue")
    return None




def reserved_callers(plan: Any) -> list[Caller]:
    """Callers claiming each reserved team in every tenant namespace (with each lane, and none): select()
    must refuse every one of them."""
    lanes: list[str | None] = [*plan.lanes, None]
    return [Caller(ns, team, lane) for ns, team, lane in product(plan.namespaces, sorted(RESERVED_TEAMS), lanes)]


def refused_to_every_tenant(tc: dict[str, Any], plan: Any, profile: str) -> tuple[list[str], str]:
    """(callers select() accepts, the evidence line): every tenant caller of the plan (team and lane unset
    too) and every caller claiming a reserved team."""
    callers = tenant_callers(plan, unset_too=True) + reserved_callers(plan)
    accepted, _ = selection_by(tc, profile, callers)
    return accepted, (f"select() refuses it to every tenant ({len(callers)} namespace/team/lane callers, "
                      f"those claiming {', '.join(sorted(RESERVED_TEAMS))} included)")


def queue_policy(lq: dict[str, Any] | None) -> str:
    return str(((lq or {}).get("spec") or {}).get("stopPolicy") or "None")


def plan_local_queues(ctx: StepContext) -> dict[str, dict[str, Any] | None]:
    """The plan's dedicated LocalQueue in each tenant namespace (None: missing)."""
    return {ns: ctx.manager.get(R.LOCAL_QUEUE.type, ctx.plan.local_queue, ns) for ns in ctx.plan.namespaces}
