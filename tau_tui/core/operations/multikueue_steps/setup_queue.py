"""Setup steps 4 and 5 (the seed's "Platform-owner configuration" 4-5): the dedicated queue and the
multiKueue profile, published to no tenant (a reserved team select() matches to no caller, and the
dedicated LocalQueues held), then the dependency matrix on every eligible worker; only once it
verifies are the tenants authorised and their LocalQueues opened (``tenancy.py``)."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.multikueue_steps.checks import check_from, condition, describe_condition, refuted, verified
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Refused, Step, StepContext
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.tenancy import (
    HELD,
    authorized_applicability,
    declared_profile,
    declared_profiles,
    plan_local_queues,
    profile_entry,
    queue_guard,
    queue_policy,
    refused_to_every_tenant,
    same_applicability,
    selection_by,
    status_profiles,
    tau_cluster,
    tenant_callers,
    unauthorized_applicability,
)
from tau_tui.core.runconfig.profiles import DRAINED_TEAM, NOT_YET_AUTHORIZED_TEAM

R = ResourceKind
MANAGED_LABEL = "tau.azure.com/managed-by"
MANAGED_BY = "tau-tui-multikueue"


def queue_changes(ctx: StepContext, policy: str) -> list[Change]:
    """Hold (``Hold``) or open (``None``) the plan's existing LocalQueues that are not so already (a held
    one stays as it is when holding: HoldAndDrain admits nothing either)."""
    out = []
    for ns, lq in plan_local_queues(ctx).items():
        current = queue_policy(lq)
        if lq is not None and (current not in HELD if policy in HELD else current != policy):
            out.append(Change("patch", R.LOCAL_QUEUE.type, ctx.plan.local_queue, ns, {"spec": {"stopPolicy": policy}}))
    return out


class QueueStep(Step):
    key = "queue"
    kind = "queue"
    title = "4. Dedicated non-global queue and multiKueue profile"
    explanation = (
        "A dedicated ClusterQueue whose only admission check is the MultiKueue one, a LocalQueue in each tenant "
        "namespace, held (stopPolicy Hold: Kueue admits nothing through it), and a workload profile with "
        "executionTarget multiKueue in TauCluster/cluster, published with no applicable tenant (limited to team "
        f"{NOT_YET_AUTHORIZED_TEAM}, a reserved name select() matches to no caller, whoever claims it): step 5 "
        "authorises tenants and opens the LocalQueues only after the dependency matrix verifies. Refused for the "
        "default queue (jobqueue or workspaceDefaults.defaultQueue), the ClusterQueue behind it and any queue a global "
        "profile uses, also when the objects already exist. Verification waits for the profile's Ready=True and a "
        "current MultiKueueReady=True, and proves that select() refuses the profile to every tenant caller, those "
        "claiming a reserved team included.")

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
        # Held from birth: Kueue admits nothing through the dedicated queue until step 5 opens it.
        for ns, lq in plan_local_queues(ctx).items():
            if lq is None:
                out.append(Change("create", R.LOCAL_QUEUE.type, plan.local_queue, ns, {
                    "apiVersion": R.LOCAL_QUEUE.type.api_version, "kind": "LocalQueue",
                    "metadata": {"name": plan.local_queue, "namespace": ns, "labels": {MANAGED_LABEL: MANAGED_BY}},
                    "spec": {"clusterQueue": plan.cluster_queue, "stopPolicy": "Hold"}}))
        # After a drain, setup again resumes the dedicated ClusterQueue; its LocalQueues stay held until step 5.
        cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
        if cq is not None and queue_policy(cq) != "None":
            out.append(Change("patch", R.CLUSTER_QUEUE.type, plan.cluster_queue, None, {"spec": {"stopPolicy": "None"}}))
        out += queue_changes(ctx, "Hold")
        # Published, not authorised: whatever applied before (a drain's team, an earlier authorization) is
        # replaced until step 5's matrix verifies again.
        profiles = ([p for p in declared_profiles(tc) if p.get("name") != plan.profile]
                    + [profile_entry(ctx, unauthorized_applicability(plan))])
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
    resolved = next((p for p in status_profiles(tc) if p.get("name") == plan.profile), None)
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
    expected = profile_entry(ctx, applicability)
    differs = [f"{key} {declared.get(key)!r} (the plan's: {value!r})" for key, value in expected.items()
               if key != "description" and declared.get(key) != value]
    if differs:
        return refuted(f"profile {plan.profile} differs from the plan: " + ", ".join(differs))
    queues = plan_local_queues(ctx)
    missing = [ns for ns, lq in queues.items() if lq is None]
    if missing:
        return refuted(f"LocalQueue {plan.local_queue} missing in {', '.join(missing)}")
    cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
    if cq is None:
        return refuted(f"ClusterQueue {plan.cluster_queue} does not exist")
    if queue_policy(cq) != "None":
        return refuted(f"ClusterQueue {plan.cluster_queue} is held (stopPolicy {queue_policy(cq)}) by a drain; "
                       "setup resumes it")
    problems, evidence = _current_readiness(ctx, tc)
    if problems:
        return check_from(problems, evidence)
    if not pending:
        evidence.append(f"profile {plan.profile} applies to {applicability}: tenants were authorised by step 5")
        return verified(evidence)
    open_queues = [f"{ns}/{plan.local_queue}" for ns, lq in queues.items() if queue_policy(lq) not in HELD]
    if open_queues:
        return refuted(f"LocalQueue {', '.join(open_queues)} is open (stopPolicy None) before step 5 authorises "
                       "tenants: Kueue would admit a run submitted outside tau-tui; step 4 holds it", evidence)
    evidence += [f"LocalQueue {ns}/{plan.local_queue} stopPolicy {queue_policy(lq)}: Kueue admits nothing through it "
                 "until step 5" for ns, lq in queues.items()]
    accepted, line = refused_to_every_tenant(tc, plan, plan.profile)
    if accepted:
        return refuted(f"profile {plan.profile} is selectable before the matrix verifies, by "
                       + ", ".join(accepted), evidence)
    evidence.append(f"profile {plan.profile} published, limited to team {NOT_YET_AUTHORIZED_TEAM}: {line}")
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
    held = [f"{ns}/{plan.local_queue}" for ns, lq in plan_local_queues(ctx).items() if queue_policy(lq) != "None"]
    if held:
        return refuted(f"LocalQueue {', '.join(held)} is still held: Kueue would admit none of the tenants' runs", evidence)
    accepted, refused = selection_by(tc, plan.profile, tenant_callers(plan, unset_too=False))
    if refused:
        return refuted("select() still refuses the profile to " + "; ".join(refused), evidence)
    evidence.append(f"tenants authorised: profile {plan.profile} applies to {wanted}; select() gives it to "
                    + ", ".join(accepted) + f"; LocalQueue {plan.local_queue} open (stopPolicy None) in "
                    + ", ".join(plan.namespaces))
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
        "namespaces, teams and lanes and the LocalQueues are opened (stopPolicy None); verification proves that "
        "select() gives it to each of them.")

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
        # Tenants hold the profile, and the LocalQueues are open, only while every worker verifies: a matrix
        # that no longer does withdraws an authorisation given earlier (seed: verify before authorizing tenants).
        ok = self.matrix(ctx).ok
        wanted = authorized_applicability(plan) if ok else unauthorized_applicability(plan)
        out = []
        if not same_applicability(declared.get("applicability"), wanted):
            profiles = [dict(p, applicability=wanted) if p.get("name") == plan.profile else p for p in declared_profiles(tc)]
            out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, {"spec": {"workloadProfiles": profiles}}))
        # Authorised first, then opened; withdrawn, then held.
        return out + queue_changes(ctx, "None" if ok else "Hold")

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
