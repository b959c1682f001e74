"""Setup, the seed's five steps (000_362d573c40e0bbf8 "Platform-owner
configuration"; taugrid.md §9.2):

1. a least-privilege worker kubeconfig Secret, protected from tenants;
2. explicit MultiKueueCluster and MultiKueueConfig objects;
3. a dedicated AdmissionCheck (controllerName exactly kueue.x-k8s.io/multikueue),
   Active=True with at least one Active worker;
4. a dedicated, non-global queue and multiKueue profile (never the default queue),
   published with no applicable tenant: limited to a team no tenant is in;
5. the dependency matrix on every worker; only when it verifies are tenants
   authorised (the plan's namespaces, teams and lanes), proven by select().

A setup that stops before step 5 verifies leaves no tenant able to select the
profile (seed: "Verify workload dependencies on every eligible worker before
authorizing tenants").

Rollback (re-enable after a drain) is this flow again: the engine resumes
from the first step that no longer verifies.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.cluster.worker_kubeconfig import insecure_reasons
from tau_tui.core.operations.multikueue_steps.access import SECRET, Permission
from tau_tui.core.operations.multikueue_steps.checks import (
    check_from,
    condition,
    describe_condition,
    refuted,
    verified,
)
from tau_tui.core.operations.multikueue_steps.credentials import CredentialError, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Flow, Refused, Step, StepContext
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access
from tau_tui.core.runconfig.profiles import Caller, SelectionError, profile_set_from_taucluster, select

R = ResourceKind
WORKER_LABEL = "tau.azure.com/multikueue-worker"
MANAGED_LABEL = "tau.azure.com/managed-by"
MANAGED_BY = "tau-tui-multikueue"
#: A drain restricts the profile to this team, which no tenant belongs to: tenant authorization removed.
DRAINED_TEAM = "tau-multikueue-drained"
#: Setup step 4 publishes the profile limited to this team, which no tenant belongs to; step 5 authorises
#: tenants only once the dependency matrix verifies.
NOT_YET_AUTHORIZED_TEAM = "tau-multikueue-not-yet-authorized"
SA_PREFIX = "system:serviceaccount:"


def tau_cluster(ctx: StepContext) -> dict[str, Any] | None:
    return ctx.manager.get(R.TAU_CLUSTER.type, "cluster")


def default_queues(ctx: StepContext, tc: dict[str, Any] | None) -> set[str]:
    """The single-cluster default queue: ``jobqueue`` and whatever TauCluster names."""
    named = (((tc or {}).get("spec") or {}).get("workspaceDefaults") or {}).get("defaultQueue")
    return {ctx.default_queue} | ({named} if named else set())


def tenant_subjects(plan: Any) -> list[tuple[str, tuple[str, ...]]]:
    """Each tenant identity with the groups the API server gives it: the plan's ``tenants`` and every
    tenant namespace's default ServiceAccount (its pods run as it). A ServiceAccount is also in
    ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``, and everyone authenticated in
    ``system:authenticated``: a grant to one of these groups reaches the tenant too."""
    users = dict.fromkeys([*plan.tenant_identities(), *(f"{SA_PREFIX}{ns}:default" for ns in plan.namespaces)])
    out = []
    for user in users:
        if user.startswith(SA_PREFIX):
            namespace = user.removeprefix(SA_PREFIX).partition(":")[0]
            groups: tuple[str, ...] = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
        else:
            groups = ("system:authenticated",)
        out.append((user, groups))
    return out


class CredentialStep(Step):
    key = "credential"
    kind = "credential"
    title = "1. Worker credentials: least-privilege kubeconfig Secrets"
    explanation = (
        "Each worker's kubeconfig (from the file or kubeconfig context in the plan) is checked the way Kueue "
        "checks it (no insecure-skip-tls-verify, https only, embedded CA, no token files, exec plugins or basic "
        "auth); its identity must hold the verbs Kueue needs on the worker and no more (SelfSubjectAccessReview "
        "and SelfSubjectRulesReview there). It is stored as a Secret with key 'kubeconfig' in Kueue's namespace; "
        "verification asks the manager (SubjectAccessReview) that no tenant identity can read it. "
        "The credential is never shown: previews and records carry its fingerprint only.")

    def refusal(self, ctx: StepContext) -> str | None:
        problems = []
        for wp in ctx.plan.workers:
            try:
                cred = ctx.credential(wp.name)
            except CredentialError as exc:
                problems.append(exc.message)
                continue
            stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ctx.plan.kueue_namespace))
            if stored is not None and stored.kubeconfig != cred.kubeconfig:
                problems.append(f"Secret {ctx.plan.kueue_namespace}/{wp.secret_name} holds another credential "
                                f"({stored.fingerprint}); replace it with `tau-tui multikueue rotate`, not setup")
                continue
            report = review_worker_access(ctx.connector.connect(cred), list(ctx.plan.namespaces))
            if report.missing:
                problems.append(f"worker {wp.name}: {report.identity} lacks verbs Kueue needs: " + "; ".join(report.missing[:6])
                                + (f" (+{len(report.missing) - 6} more)" if len(report.missing) > 6 else ""))
            if report.excess:
                problems.append(f"worker {wp.name}: {report.identity} holds more than Kueue needs: " + "; ".join(report.excess))
            if report.cluster_wide:
                problems.append(f"worker {wp.name}: {report.identity} has a cluster-wide write binding: " + "; ".join(report.cluster_wide))
        return "; ".join(problems) or None

    def changes(self, ctx: StepContext) -> list[Change]:
        out = []
        for wp in ctx.plan.workers:
            cred = ctx.credential(wp.name)
            body = {"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": wp.secret_name, "namespace": ctx.plan.kueue_namespace,
                                 "labels": {WORKER_LABEL: wp.name, MANAGED_LABEL: MANAGED_BY},
                                 "annotations": {"tau.azure.com/credential-fingerprint": cred.fingerprint}},
                    "type": "Opaque", "data": {"kubeconfig": cred.secret_data()}}
            out.append(Change("create", SECRET, wp.secret_name, ctx.plan.kueue_namespace, body, redact=("data.kubeconfig",)))
        return out

    def verify(self, ctx: StepContext) -> Check:
        evidence, problems = [], []
        ns = ctx.plan.kueue_namespace
        for wp in ctx.plan.workers:
            stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ns))
            if stored is None:
                problems.append(f"Secret {ns}/{wp.secret_name} with key kubeconfig does not exist")
                continue
            evidence.append(f"Secret {ns}/{wp.secret_name} holds credential {stored.fingerprint} for {stored.server}")
            # A Secret written by hand is held to the same rules as one this step wrote (Kueue would refuse it).
            insecure = insecure_reasons(stored.document())
            if insecure:
                problems.append(f"Secret {ns}/{wp.secret_name}: the stored kubeconfig would be refused: " + "; ".join(insecure))
                continue
            report = review_worker_access(ctx.connector.connect(stored), list(ctx.plan.namespaces))
            evidence += [f"{wp.name}: {line}" for line in report.evidence()]
            if not report.acceptable:
                problems.append(f"worker {wp.name}: the stored credential is not least-privilege: {report.summary()}")
        subjects = tenant_subjects(ctx.plan)
        for tenant, groups in subjects:
            for verb in ("get", "list", "watch"):
                if ctx.manager.user_can(tenant, Permission(verb, "", "secrets", ns), groups):
                    problems.append(f"tenant {tenant} can {verb} secrets in {ns}: remove that binding "
                                    f"(to it or to one of its groups {', '.join(groups)})")
        if not problems:
            evidence.append("SubjectAccessReview: no tenant of " + "; ".join(f"{t} (groups {', '.join(g)})" for t, g in subjects)
                            + f" can get, list or watch secrets in {ns}")
        return check_from(problems, evidence)


class WiringStep(Step):
    key = "wiring"
    kind = "wiring"
    title = "2. MultiKueueCluster and MultiKueueConfig, explicit"
    explanation = (
        "One MultiKueueCluster per worker, reading its kubeconfig from the Secret of step 1 "
        "(clusterSource.kubeConfig, locationType Secret), and one MultiKueueConfig listing exactly these workers.")

    def changes(self, ctx: StepContext) -> list[Change]:
        out = []
        for wp in ctx.plan.workers:
            out.append(Change("create", R.MULTIKUEUE_CLUSTER.type, wp.name, None, {
                "apiVersion": R.MULTIKUEUE_CLUSTER.type.api_version, "kind": "MultiKueueCluster",
                "metadata": {"name": wp.name, "labels": {MANAGED_LABEL: MANAGED_BY}},
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": wp.secret_name}}}}))
        out.append(Change("create", R.MULTIKUEUE_CONFIG.type, ctx.plan.config, None, {
            "apiVersion": R.MULTIKUEUE_CONFIG.type.api_version, "kind": "MultiKueueConfig",
            "metadata": {"name": ctx.plan.config, "labels": {MANAGED_LABEL: MANAGED_BY}},
            "spec": {"clusters": [w.name for w in ctx.plan.workers]}}))
        return out

    def refusal(self, ctx: StepContext) -> str | None:
        config = ctx.manager.get(R.MULTIKUEUE_CONFIG.type, ctx.plan.config)
        wanted = sorted(w.name for w in ctx.plan.workers)
        if config is not None and sorted((config.get("spec") or {}).get("clusters") or ()) != wanted:
            return (f"MultiKueueConfig {ctx.plan.config} exists with clusters "
                    f"{(config.get('spec') or {}).get('clusters')}, not {wanted}; pick another name or fix the plan")
        return None

    def verify(self, ctx: StepContext) -> Check:
        problems, evidence = [], []
        for wp in ctx.plan.workers:
            mkc = ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name)
            if mkc is None:
                problems.append(f"MultiKueueCluster {wp.name} does not exist")
                continue
            source = ((mkc.get("spec") or {}).get("clusterSource") or {}).get("kubeConfig") or {}
            if source.get("location") != wp.secret_name:
                problems.append(f"MultiKueueCluster {wp.name} reads {source.get('location')}, not {wp.secret_name}")
            else:
                evidence.append(f"MultiKueueCluster {wp.name} reads Secret {wp.secret_name}")
        config = ctx.manager.get(R.MULTIKUEUE_CONFIG.type, ctx.plan.config)
        if config is None:
            problems.append(f"MultiKueueConfig {ctx.plan.config} does not exist")
        else:
            clusters = (config.get("spec") or {}).get("clusters") or []
            evidence.append(f"MultiKueueConfig {ctx.plan.config} lists {', '.join(clusters)}")
            missing = [w.name for w in ctx.plan.workers if w.name not in clusters]
            if missing:
                problems.append(f"MultiKueueConfig {ctx.plan.config} does not list {', '.join(missing)}")
        return check_from(problems, evidence)


class AdmissionCheckStep(Step):
    key = "admission-check"
    kind = "admission-check"
    title = "3. Dedicated AdmissionCheck, Active with an Active worker"
    explanation = (
        f"An AdmissionCheck whose spec.controllerName is exactly {MULTIKUEUE_CONTROLLER_NAME}, with parameters "
        "naming the MultiKueueConfig. Verification waits until it reports Active=True and at least one referenced "
        "MultiKueueCluster reports Active=True, or shows Kueue's reason (a bad or insecure kubeconfig, a connection "
        "failure, a forbidden watch).")

    def refusal(self, ctx: StepContext) -> str | None:
        ac = ctx.manager.get(R.ADMISSION_CHECK.type, ctx.plan.admission_check)
        if ac is not None and (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE_CONTROLLER_NAME:
            return (f"AdmissionCheck {ctx.plan.admission_check} exists with controllerName "
                    f"{(ac.get('spec') or {}).get('controllerName')!r}; it is not a MultiKueue check. Pick another name")
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        return [Change("create", R.ADMISSION_CHECK.type, ctx.plan.admission_check, None, {
            "apiVersion": R.ADMISSION_CHECK.type.api_version, "kind": "AdmissionCheck",
            "metadata": {"name": ctx.plan.admission_check, "labels": {MANAGED_LABEL: MANAGED_BY}},
            "spec": {"controllerName": MULTIKUEUE_CONTROLLER_NAME,
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ctx.plan.config}}})]

    def verify(self, ctx: StepContext) -> Check:
        ac = ctx.manager.get(R.ADMISSION_CHECK.type, ctx.plan.admission_check)
        if ac is None:
            return refuted(f"AdmissionCheck {ctx.plan.admission_check} does not exist")
        evidence = [f"AdmissionCheck {ctx.plan.admission_check}: controllerName {(ac.get('spec') or {}).get('controllerName')}, "
                    + describe_condition(condition(ac, "Active"))]
        active = []
        for wp in ctx.plan.workers:
            c = condition(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, wp.name), "Active")
            evidence.append(f"MultiKueueCluster {wp.name}: {describe_condition(c)}")
            if c is not None and c.get("status") == "True":
                active.append(wp.name)
        ac_ok = (condition(ac, "Active") or {}).get("status") == "True"
        problems = []
        if not ac_ok:
            problems.append(f"AdmissionCheck {ctx.plan.admission_check} is not Active: {describe_condition(condition(ac, 'Active'))}")
        if not active:
            problems.append("no MultiKueueCluster is Active: " + "; ".join(evidence[1:]))
        return check_from(problems, evidence)


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
    a team no tenant is in, so no tenant can select the profile before the matrix verifies."""
    return {"namespaces": list(plan.namespaces), "teams": [NOT_YET_AUTHORIZED_TEAM]}


def same_applicability(found: dict[str, Any] | None, wanted: dict[str, list[str]]) -> bool:
    found = found or {}
    return all(sorted(found.get(key) or ()) == sorted(wanted.get(key) or ()) for key in ("namespaces", "teams", "lanes"))


def _profile_entry(ctx: StepContext, applicability: dict[str, list[str]]) -> dict[str, Any]:
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


def _status_profiles(tc: dict[str, Any] | None) -> list[dict[str, Any]]:
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
    for profile in declared_profiles(tc) + _status_profiles(tc):
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
    for profile in [p for p in declared_profiles(tc) + _status_profiles(tc) if p.get("name") == plan.profile]:
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


class QueueStep(Step):
    key = "queue"
    kind = "queue"
    title = "4. Dedicated non-global queue and multiKueue profile"
    explanation = (
        "A dedicated ClusterQueue whose only admission check is the MultiKueue one, a LocalQueue in each tenant "
        "namespace, and a workload profile with executionTarget multiKueue in TauCluster/cluster, published with no "
        f"applicable tenant (limited to team {NOT_YET_AUTHORIZED_TEAM}, which no tenant is in): step 5 authorises "
        "tenants only after the dependency matrix verifies. Refused for the default queue (jobqueue or "
        "workspaceDefaults.defaultQueue), the ClusterQueue behind it and any queue a global profile uses, also when "
        "the objects already exist. Verification waits for the profile's Ready=True and a current "
        "MultiKueueReady=True, and proves that select() refuses the profile to every tenant.")

    def refusal(self, ctx: StepContext) -> str | None:
        tc = tau_cluster(ctx)
        if tc is None:
            return "TauCluster/cluster not found: TauGrid is not installed or not configured on the manager"
        return queue_guard(ctx, tc)

    def changes(self, ctx: StepContext) -> list[Change]:
        plan = ctx.plan
        tc = tau_cluster(ctx)
        out = []
        if ctx.manager.get(R.RESOURCE_FLAVOR.type, plan.flavor) is None:
            out.append(Change("create", R.RESOURCE_FLAVOR.type, plan.flavor, None, {
                "apiVersion": R.RESOURCE_FLAVOR.type.api_version, "kind": "ResourceFlavor",
                "metadata": {"name": plan.flavor, "labels": {MANAGED_LABEL: MANAGED_BY}}, "spec": {}}))
        out.append(Change("create", R.CLUSTER_QUEUE.type, plan.cluster_queue, None, {
            "apiVersion": R.CLUSTER_QUEUE.type.api_version, "kind": "ClusterQueue",
            "metadata": {"name": plan.cluster_queue, "labels": {MANAGED_LABEL: MANAGED_BY}},
            "spec": {"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(plan.namespaces)}]},
                "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
                    {"name": plan.flavor, "resources": [{"name": "cpu", "nominalQuota": plan.cpu_quota},
                                                        {"name": "memory", "nominalQuota": plan.memory_quota},
                                                        {"name": "nvidia.com/gpu", "nominalQuota": plan.gpu_quota}]}]}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": plan.admission_check}]}}}))
        for ns in plan.namespaces:
            out.append(Change("create", R.LOCAL_QUEUE.type, plan.local_queue, ns, {
                "apiVersion": R.LOCAL_QUEUE.type.api_version, "kind": "LocalQueue",
                "metadata": {"name": plan.local_queue, "namespace": ns, "labels": {MANAGED_LABEL: MANAGED_BY}},
                "spec": {"clusterQueue": plan.cluster_queue}}))
        # After a drain, setup again resumes admission on the dedicated queues.
        cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
        if cq is not None and (cq.get("spec") or {}).get("stopPolicy") not in (None, "None"):
            out.append(Change("patch", R.CLUSTER_QUEUE.type, plan.cluster_queue, None, {"spec": {"stopPolicy": "None"}}))
        for ns in plan.namespaces:
            lq = ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns)
            if lq is not None and (lq.get("spec") or {}).get("stopPolicy") not in (None, "None"):
                out.append(Change("patch", R.LOCAL_QUEUE.type, plan.local_queue, ns, {"spec": {"stopPolicy": "None"}}))
        # Published, not authorised: whatever applied before (a drain's team, an earlier authorization) is
        # replaced until step 5's matrix verifies again.
        profiles = ([p for p in declared_profiles(tc) if p.get("name") != plan.profile]
                    + [_profile_entry(ctx, unauthorized_applicability(plan))])
        out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, {"spec": {"workloadProfiles": profiles}}))
        return out

    def verify(self, ctx: StepContext) -> Check:
        return profile_published(ctx)


def _current_readiness(ctx: StepContext, tc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(problems, evidence): a current MultiKueueReady=True and the profile's current Ready=True."""
    plan = ctx.plan
    generation = (tc.get("metadata") or {}).get("generation")
    mk = condition(tc, "MultiKueueReady")
    evidence = [f"TauCluster generation {generation}: {describe_condition(mk)}"
                + (f", observedGeneration {mk.get('observedGeneration')}" if mk else "")]
    resolved = next((p for p in _status_profiles(tc) if p.get("name") == plan.profile), None)
    ready = next((c for c in (resolved or {}).get("conditions") or () if c.get("type") == "Ready"), None)
    evidence.append(f"profile {plan.profile}: {describe_condition(ready)}")
    problems = []
    if mk is None or mk.get("status") != "True" or mk.get("observedGeneration") != generation:
        problems.append("MultiKueueReady is not a current True: " + describe_condition(mk))
    if ready is None or ready.get("status") != "True" or ready.get("observedGeneration") != generation:
        problems.append(f"profile {plan.profile} is not Ready at generation {generation}: {describe_condition(ready)}")
    return problems, evidence


def profile_published(ctx: StepContext) -> Check:
    """Step 4: the queue and the profile exist, are ready and current, and no tenant can select the
    profile yet (or step 5 already authorised the plan's tenants)."""
    plan = ctx.plan
    tc = tau_cluster(ctx)
    if tc is None:
        return refuted("TauCluster/cluster not found")
    why = queue_guard(ctx, tc)
    if why:
        raise Refused(why)
    declared = declared_profile(tc, plan.profile)
    if declared is None:
        return refuted(f"profile {plan.profile} is not declared in TauCluster/cluster")
    applicability = declared.get("applicability") or {}
    pending = same_applicability(applicability, unauthorized_applicability(plan))
    if not pending and not same_applicability(applicability, authorized_applicability(plan)):
        teams = list(applicability.get("teams") or ())
        return refuted(f"profile {plan.profile} applicability is {applicability or 'unset'}; setup publishes it "
                       f"limited to team {NOT_YET_AUTHORIZED_TEAM} until step 5 authorises tenants"
                       + (" (tenant authorization was removed by a drain)" if DRAINED_TEAM in teams else ""))
    # What step 5 authorises is what the matrix checked: the published profile must be the plan's.
    expected = _profile_entry(ctx, applicability)
    differs = [f"{key} {declared.get(key)!r} (the plan's: {value!r})" for key, value in expected.items()
               if key != "description" and declared.get(key) != value]
    if differs:
        return refuted(f"profile {plan.profile} differs from the plan: " + ", ".join(differs))
    missing = [ns for ns in plan.namespaces if ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns) is None]
    if missing:
        return refuted(f"LocalQueue {plan.local_queue} missing in {', '.join(missing)}")
    held = [ns for ns in plan.namespaces
            if ((ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns) or {}).get("spec") or {}).get("stopPolicy") not in (None, "None")]
    cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
    if cq is None:
        return refuted(f"ClusterQueue {plan.cluster_queue} does not exist")
    if held or ((cq.get("spec") or {}).get("stopPolicy") not in (None, "None")):
        return refuted(f"queue {plan.local_queue} is held (stopPolicy) by a drain; setup resumes admission")
    problems, evidence = _current_readiness(ctx, tc)
    if problems:
        return check_from(problems, evidence)
    if not pending:
        evidence.append(f"profile {plan.profile} applies to {applicability}: tenants were authorised by step 5")
        return verified(evidence)
    callers = tenant_callers(plan, unset_too=True)
    accepted, _ = selection_by(tc, plan.profile, callers)
    if accepted:
        return refuted(f"profile {plan.profile} is selectable before the matrix verifies, by "
                       + ", ".join(accepted), evidence)
    evidence.append(f"profile {plan.profile} published, limited to team {NOT_YET_AUTHORIZED_TEAM}: select() refuses it "
                    f"to every tenant ({len(callers)} namespace/team/lane callers)")
    return verified(evidence)


def tenants_authorized(ctx: StepContext) -> Check:
    """Step 5's authorization: the plan's applicability is published, ready and current, and select()
    gives the profile to every tenant caller of the plan."""
    plan = ctx.plan
    tc = tau_cluster(ctx)
    declared = declared_profile(tc, plan.profile)
    if tc is None or declared is None:
        return refuted(f"profile {plan.profile} is not declared in TauCluster/cluster")
    wanted = authorized_applicability(plan)
    if not same_applicability(declared.get("applicability"), wanted):
        return refuted(f"tenants are not authorised: profile {plan.profile} applies to "
                       f"{declared.get('applicability') or 'all'}, not the plan's {wanted}")
    problems, evidence = _current_readiness(ctx, tc)
    if problems:
        return check_from(problems, evidence)
    accepted, refused = selection_by(tc, plan.profile, tenant_callers(plan, unset_too=False))
    if refused:
        return refuted("select() still refuses the profile to " + "; ".join(refused), evidence)
    evidence.append(f"tenants authorised: profile {plan.profile} applies to {wanted}; select() gives it to "
                    + ", ".join(accepted))
    return verified(evidence)


class MatrixStep(Step):
    key = "matrix"
    kind = "matrix"
    title = "5. Verify workload dependencies on every eligible worker before authorizing tenants"
    explanation = (
        "Every worker must match the manager's Kubernetes, Kueue, KubeRay and workload CRD minor versions (other "
        "combinations are outside the supported contract) and hold the queue, ServiceAccount, Secrets, StorageClass, "
        "PVCs, image pull secrets, GPU capacity, flavors, the images' pull secrets, the dataset and checkpoint claims, "
        "the topology and the NetworkPolicies the tenants' runs use. A cell the tool cannot establish is ? unknown, "
        "naming what it could not read, and blocks like a ✗; set adminContext for the worker in the plan to read it "
        "with your own access. Only when every cell is ✓ does this step authorise tenants: the profile gets the plan's "
        "namespaces, teams and "
        "lanes, and verification proves that select() gives it to each of them.")

    def matrix(self, ctx: StepContext) -> Check:
        rows = dependency_matrix(ctx)
        evidence = [f"{row.worker}: " + " | ".join(f"{col} {cell}" for col, cell in row.cells) for row in rows]
        problems = [p for row in rows for p in row.problems()]
        return check_from(problems, evidence)

    def changes(self, ctx: StepContext) -> list[Change]:
        plan = ctx.plan
        tc = tau_cluster(ctx)
        declared = declared_profile(tc, plan.profile)
        if declared is None:
            return []
        # Tenants hold the profile only while every worker verifies: a matrix that no longer does
        # withdraws an authorisation given earlier (seed: verify before authorizing tenants).
        wanted = authorized_applicability(plan) if self.matrix(ctx).ok else unauthorized_applicability(plan)
        if same_applicability(declared.get("applicability"), wanted):
            return []
        profiles = [dict(p, applicability=wanted) if p.get("name") == plan.profile else p for p in declared_profiles(tc)]
        return [Change("patch", R.TAU_CLUSTER.type, "cluster", None, {"spec": {"workloadProfiles": profiles}})]

    def verify(self, ctx: StepContext) -> Check:
        matrix = self.matrix(ctx)
        authorization = tenants_authorized(ctx)
        problems = [] if matrix.ok else [matrix.reason]
        if not matrix.ok and authorization.ok:
            problems.append("tenants are still authorised although the matrix does not verify; applying this step "
                            "withdraws their authorization until it does")
        elif not authorization.ok:
            problems.append(authorization.reason + ("" if matrix.ok else " (withheld until the matrix verifies)"))
        return check_from(problems, matrix.evidence + authorization.evidence)


def setup_flow() -> Flow:
    return Flow("setup", "MultiKueue setup wizard",
                [CredentialStep(), WiringStep(), AdmissionCheckStep(), QueueStep(), MatrixStep()])
