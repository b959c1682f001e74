"""What a drain finds on the manager, compared with the plan.

Discovery, not trust.  Every step first discovers the MultiKueue footprint
live on the manager (:func:`discover`): every profile of TauCluster/cluster
(spec and status) with executionTarget multiKueue or a dedicated queue, every
AdmissionCheck whose controllerName is kueue.x-k8s.io/multikueue, every
ClusterQueue whose checks (``admissionChecksStrategy`` or the older
``admissionChecks`` list) include one, their LocalQueues, the checks'
MultiKueueConfigs and the MultiKueueClusters they list.  It compares that
with the plan:

* what is found and the plan does not name is handled like the plan's own
  (de-authorised, held, drained, removed): the seed drains *every* dedicated
  profile/queue;
* the drain refuses, naming it, what it will not touch: the default queue
  (``jobqueue`` or ``workspaceDefaults.defaultQueue``) or its ClusterQueue when
  they route to MultiKueue, and a MultiKueueCluster the plan does not list (the
  drain could neither check that worker directly nor revoke its credential);
* an object the plan names that does not exist is not done: the step says
  "not found: the plan and the cluster disagree" naming it, and does not
  verify (⚠: waiting will not change it).  A plan-named object that exists but
  is not MultiKueue (a ClusterQueue without a MultiKueue check, a profile that
  does not target multiKueue) is a disagreement too, and is never touched.

When is an absent object legitimate?  Steps 1-3 remove nothing; only step 4
does, and before it deletes anything it writes what it removes onto
TauCluster/cluster (annotation :data:`REMOVED_ANNOTATION`).  A plan-named
object that is absent and on that list was removed by a drain; absent and
not on it, the plan and the cluster disagree (a typo, a hand deletion, or a
setup that never got that far).  Step 1 of the next drain, when it has
anything to de-authorise, clears the list.  Without TauCluster/cluster there
is no list, and absence is a disagreement (fail closed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.operations.multikueue_steps.checks import check_from, condition
from tau_tui.core.operations.multikueue_steps.engine import Check, StepContext
from tau_tui.core.operations.multikueue_steps.tenancy import (
    declared_profiles,
    default_queues,
    tau_cluster,
)

R = ResourceKind
#: Written by step 4 onto TauCluster/cluster before it deletes: the objects a drain removed (JSON list).
REMOVED_ANNOTATION = "tau.azure.com/multikueue-drain-removed"


def is_terminal(wl: dict[str, Any]) -> bool:
    return (condition(wl, "Finished") or {}).get("status") == "True"


def object_name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def spec_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return dict((obj or {}).get("spec") or {})


def check_names(cq: dict[str, Any]) -> list[str]:
    """The admission checks a ClusterQueue names: ``admissionChecksStrategy`` and the older ``admissionChecks``."""
    spec = spec_of(cq)
    names = [c.get("name") for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
             if isinstance(c, dict)]
    names += [c for c in spec.get("admissionChecks") or () if isinstance(c, str)]
    return [str(n) for n in names if n]


def teams_of(profile: dict[str, Any]) -> list[str]:
    return list((profile.get("applicability") or {}).get("teams") or ())


@dataclass
class Discovery:
    """The MultiKueue footprint found live on the manager, and how it compares with the plan."""

    tau_cluster: dict[str, Any] | None
    defaults: set[str]
    #: ClusterQueue -> the default LocalQueue ("ns/name") it backs.
    default_cqs: dict[str, str]
    #: multiKueue profiles declared in spec.workloadProfiles, and published in status, by name.
    profiles: dict[str, dict[str, Any]]
    published: dict[str, dict[str, Any]]
    #: status.workloadProfiles.observedGeneration is the current generation (else the client refuses every profile).
    status_current: bool
    checks: dict[str, dict[str, Any]]
    cluster_queues: dict[str, dict[str, Any]]
    local_queues: dict[tuple[str, str], dict[str, Any]]
    configs: dict[str, dict[str, Any]]
    clusters: dict[str, dict[str, Any]]
    #: What step 4 wrote it removed (REMOVED_ANNOTATION).
    removed: set[str]
    #: Plan-named objects that do not exist, as refs ("ClusterQueue x").
    gone: set[str] = field(default_factory=set)
    #: Plan-named objects absent and not removed by a drain ("not found"), and plan-named objects that
    #: exist but are not MultiKueue (never touched).
    missing: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    #: What the drain will not touch, with the reason: the drain refuses.
    untouchable: list[str] = field(default_factory=list)

    def present_refs(self) -> list[str]:
        """Every discovered object, in removal order (profiles first, MultiKueueClusters last)."""
        return ([f"profile {n}" for n in sorted(self.profiles)]
                + [f"LocalQueue {ns}/{n}" for ns, n in sorted(self.local_queues)]
                + [f"ClusterQueue {n}" for n in sorted(self.cluster_queues)]
                + [f"AdmissionCheck {n}" for n in sorted(self.checks)]
                + [f"MultiKueueConfig {n}" for n in sorted(self.configs)]
                + [f"MultiKueueCluster {n}" for n in sorted(self.clusters)])

    def summary(self, plan: Any) -> str:
        named = set(plan_refs(plan))
        found = self.present_refs()
        extra = [r for r in found if r not in named]
        text = "discovered on the manager: " + (", ".join(found) if found else "no MultiKueue profile, queue, check, config or cluster")
        return text + (f"; not named by the plan (handled too): {', '.join(extra)}" if extra else "")

    def problems(self) -> list[str]:
        """What keeps any drain step from verifying, whatever its own condition."""
        out = list(self.untouchable)
        if self.missing:
            out.append("not found: the plan and the cluster disagree: " + ", ".join(self.missing))
        out += [f"the plan and the cluster disagree: {m}; not touched" for m in self.mismatched]
        return out


def plan_refs(plan: Any) -> list[str]:
    return ([f"profile {plan.profile}"] + [f"LocalQueue {ns}/{plan.local_queue}" for ns in plan.namespaces]
            + [f"ClusterQueue {plan.cluster_queue}", f"AdmissionCheck {plan.admission_check}",
               f"MultiKueueConfig {plan.config}"] + [f"MultiKueueCluster {w.name}" for w in plan.workers])


def _removed_list(tc: dict[str, Any] | None) -> set[str]:
    raw = (((tc or {}).get("metadata") or {}).get("annotations") or {}).get(REMOVED_ANNOTATION)
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return set()
    return {str(v) for v in value} if isinstance(value, list) else set()


def discover(ctx: StepContext) -> Discovery:
    """The MultiKueue footprint on the manager, read live, compared with the plan."""
    plan, manager = ctx.plan, ctx.manager
    tc = tau_cluster(ctx)
    defaults = default_queues(ctx, tc)
    all_lqs = manager.list(R.LOCAL_QUEUE.type, None)
    default_cqs: dict[str, str] = {}
    for lq in all_lqs:
        backing = spec_of(lq).get("clusterQueue")
        if object_name(lq) in defaults and backing:
            default_cqs.setdefault(str(backing), f"{(lq.get('metadata') or {}).get('namespace')}/{object_name(lq)}")
    all_checks = {object_name(ac): ac for ac in manager.list(R.ADMISSION_CHECK.type)}
    checks = {n: ac for n, ac in all_checks.items() if spec_of(ac).get("controllerName") == MULTIKUEUE_CONTROLLER_NAME}
    # A ClusterQueue that still names the plan's check after the check was removed routes to MultiKueue too.
    routing = set(checks) | ({plan.admission_check} if plan.admission_check not in all_checks else set())
    all_cqs = {object_name(cq): cq for cq in manager.list(R.CLUSTER_QUEUE.type)}
    cqs = {n: cq for n, cq in all_cqs.items() if routing & set(check_names(cq))}
    lqs_by_key = {((lq.get("metadata") or {}).get("namespace") or "", object_name(lq)): lq for lq in all_lqs}
    dedicated_lqs = {k: lq for k, lq in lqs_by_key.items() if spec_of(lq).get("clusterQueue") in cqs}
    config_names = {str((spec_of(ac).get("parameters") or {}).get("name")) for ac in checks.values()
                    if (spec_of(ac).get("parameters") or {}).get("kind") == "MultiKueueConfig"} | {plan.config}
    configs = {object_name(c): c for c in manager.list(R.MULTIKUEUE_CONFIG.type) if object_name(c) in config_names}
    cluster_names = {str(n) for c in configs.values() for n in spec_of(c).get("clusters") or ()} | {w.name for w in plan.workers}
    clusters = {object_name(c): c for c in manager.list(R.MULTIKUEUE_CLUSTER.type) if object_name(c) in cluster_names}
    dedicated_names = {n for _, n in dedicated_lqs}
    spec_profiles = declared_profiles(tc)
    status_profiles = list((((tc or {}).get("status") or {}).get("workloadProfiles") or {}).get("profiles") or ())

    def routes_to_multikueue(p: dict[str, Any]) -> bool:
        return p.get("executionTarget") == "multiKueue" or p.get("defaultLocalQueue") in dedicated_names

    found = Discovery(
        tau_cluster=tc, defaults=defaults, default_cqs=default_cqs,
        profiles={str(p.get("name")): p for p in spec_profiles if routes_to_multikueue(p)},
        published={str(p.get("name")): p for p in status_profiles if routes_to_multikueue(p)},
        status_current=(((tc or {}).get("status") or {}).get("workloadProfiles") or {}).get("observedGeneration")
        == ((tc or {}).get("metadata") or {}).get("generation"),
        checks=checks, cluster_queues=cqs,
        local_queues={k: lq for k, lq in dedicated_lqs.items() if k[1] not in defaults},
        configs=configs, clusters=clusters, removed=_removed_list(tc))
    _compare(found, plan, spec_profiles, lqs_by_key, all_cqs, all_checks)
    return found


def _compare(found: Discovery, plan: Any, spec_profiles: list[dict[str, Any]],
             lqs: dict[tuple[str, str], dict[str, Any]], all_cqs: dict[str, dict[str, Any]],
             all_checks: dict[str, dict[str, Any]]) -> None:
    def absent(ref: str) -> None:
        found.gone.add(ref)
        if ref not in found.removed:
            found.missing.append(ref)

    mismatch = found.mismatched.append

    declared = next((p for p in spec_profiles if p.get("name") == plan.profile), None)
    if declared is None:
        absent(f"profile {plan.profile}")
    elif plan.profile not in found.profiles:
        mismatch(f"profile {plan.profile} does not target multiKueue (executionTarget "
                 f"{declared.get('executionTarget') or 'unset'}, queue {declared.get('defaultLocalQueue')})")
    if plan.local_queue in found.defaults:
        found.untouchable.append(f"{plan.local_queue} is the default queue; a drain never touches it")
    else:
        for ns in plan.namespaces:
            lq = lqs.get((ns, plan.local_queue))
            if lq is None:
                absent(f"LocalQueue {ns}/{plan.local_queue}")
            elif (ns, plan.local_queue) not in found.local_queues:
                mismatch(f"LocalQueue {ns}/{plan.local_queue} points at ClusterQueue {spec_of(lq).get('clusterQueue')}, "
                         "which does not route to MultiKueue")
    if plan.cluster_queue in found.default_cqs:
        found.untouchable.append(f"ClusterQueue {plan.cluster_queue} backs the default queue "
                                 f"{found.default_cqs[plan.cluster_queue]}; a drain never touches it")
    elif plan.cluster_queue not in all_cqs:
        absent(f"ClusterQueue {plan.cluster_queue}")
    elif plan.cluster_queue not in found.cluster_queues:
        mismatch(f"ClusterQueue {plan.cluster_queue} carries no MultiKueue admission check "
                 f"(checks: {', '.join(check_names(all_cqs[plan.cluster_queue])) or 'none'})")
    if plan.admission_check not in all_checks:
        absent(f"AdmissionCheck {plan.admission_check}")
    elif plan.admission_check not in found.checks:
        mismatch(f"AdmissionCheck {plan.admission_check} is not a MultiKueue check (controllerName "
                 f"{spec_of(all_checks[plan.admission_check]).get('controllerName')!r})")
    if plan.config not in found.configs:
        absent(f"MultiKueueConfig {plan.config}")
    for wp in plan.workers:
        if wp.name not in found.clusters:
            absent(f"MultiKueueCluster {wp.name}")
    for cq in sorted(set(found.cluster_queues) & set(found.default_cqs)):
        if cq != plan.cluster_queue:
            found.untouchable.append(
                f"ClusterQueue {cq} backs the default queue {found.default_cqs[cq]} and routes to MultiKueue "
                f"(checks {', '.join(check_names(found.cluster_queues[cq]))}); a drain never touches the default queue: "
                "remove the MultiKueue check from it by hand")
    outside = sorted(set(found.clusters) - {w.name for w in plan.workers})
    if outside:
        found.untouchable.append(_outside_workers(found, outside))


def _outside_workers(found: Discovery, outside: list[str]) -> str:
    """The refusal for MultiKueueClusters the plan does not list, naming what routes to them."""
    configs = sorted(n for n, c in found.configs.items() if set(spec_of(c).get("clusters") or ()) & set(outside))
    checks = sorted(n for n, ac in found.checks.items() if (spec_of(ac).get("parameters") or {}).get("name") in configs)
    cqs = sorted(n for n, cq in found.cluster_queues.items() if set(check_names(cq)) & set(checks))
    queues = {n for (_, n), lq in found.local_queues.items() if spec_of(lq).get("clusterQueue") in cqs}
    profiles = sorted(n for n, p in found.profiles.items() if p.get("defaultLocalQueue") in queues)
    what = ", ".join([*(f"profile {n}" for n in profiles), *(f"ClusterQueue {n}" for n in cqs),
                      *(f"AdmissionCheck {n}" for n in checks), *(f"MultiKueueConfig {n}" for n in configs)])
    many = len(outside) > 1
    return (f"the drain will not touch {what}: its MultiKueueCluster{'s' if many else ''} {', '.join(outside)} "
            f"{'are' if many else 'is'} not among the plan's workers, so the drain could neither check "
            f"{'them' if many else 'it'} directly nor revoke {'their credentials' if many else 'its credential'}; "
            f"add {'them' if many else 'it'} to the plan's workers (with adminContext)")


def discovery_refusal(found: Discovery) -> str | None:
    return ("refused: " + "; ".join(found.untouchable)) if found.untouchable else None


def discovery_check(found: Discovery, problems: list[str], evidence: list[str], plan: Any) -> Check:
    """The step's check with discovery's verdict first; a disagreement only the owner can fix is an action."""
    shared = found.problems()
    evidence = [found.summary(plan)] + [f"{r}: removed by a drain (step 4)" for r in sorted(found.gone & found.removed)] + evidence
    action = ("make the plan name what the cluster has (or restore the object), then run the drain again"
              if (found.missing or found.mismatched) and not found.untouchable else "")
    return check_from(shared + problems, evidence, action=action)
