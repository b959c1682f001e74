"""Setup, the seed's five steps (000_362d573c40e0bbf8 "Platform-owner
configuration"; taugrid.md §9.2):

1. a least-privilege worker kubeconfig Secret, protected from tenants;
2. explicit MultiKueueCluster and MultiKueueConfig objects;
3. a dedicated AdmissionCheck (controllerName exactly kueue.x-k8s.io/multikueue),
   Active=True with at least one Active worker;
4. a dedicated, non-global queue and multiKueue profile (never the default queue);
5. the dependency matrix on every worker, before tenants are authorised.

Rollback (re-enable after a drain) is this flow again: the engine resumes
from the first step that no longer verifies.
"""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.operations.multikueue_steps.access import SECRET, Permission
from tau_tui.core.operations.multikueue_steps.credentials import CredentialError, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Flow, Step, StepContext
from tau_tui.core.operations.multikueue_steps.matrix import dependency_matrix
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access

R = ResourceKind
WORKER_LABEL = "tau.azure.com/multikueue-worker"
MANAGED_LABEL = "tau.azure.com/managed-by"
MANAGED_BY = "tau-tui-multikueue"
#: A drain restricts the profile to this team, which no tenant belongs to: tenant authorization removed.
DRAINED_TEAM = "tau-multikueue-drained"


def tau_cluster(ctx: StepContext) -> dict[str, Any] | None:
    return ctx.manager.get(R.TAU_CLUSTER.type, "cluster")


def default_queues(ctx: StepContext, tc: dict[str, Any] | None) -> set[str]:
    """The single-cluster default queue: ``jobqueue`` and whatever TauCluster names."""
    named = (((tc or {}).get("spec") or {}).get("workspaceDefaults") or {}).get("defaultQueue")
    return {ctx.default_queue} | ({named} if named else set())


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


def describe_condition(c: dict[str, Any] | None) -> str:
    if c is None:
        return "no condition yet"
    return f"{c.get('type')}={c.get('status')} ({c.get('reason') or '-'}: {c.get('message') or '-'})"


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
            report = review_worker_access(ctx.connector.connect(stored), list(ctx.plan.namespaces))
            evidence += [f"{wp.name}: {line}" for line in report.evidence()]
            if not report.acceptable:
                problems.append(f"worker {wp.name}: the stored credential is not least-privilege or lacks verbs")
        for tenant in ctx.plan.tenant_identities():
            for verb in ("get", "list", "watch"):
                if ctx.manager.user_can(tenant, Permission(verb, "", "secrets", ns)):
                    problems.append(f"tenant {tenant} can {verb} secrets in {ns}: remove that binding")
        if not problems:
            evidence.append(f"SubjectAccessReview: no tenant of {', '.join(ctx.plan.tenant_identities())} "
                            f"can get, list or watch secrets in {ns}")
        return Check(not problems, "; ".join(problems), tuple(evidence))


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
        return Check(not problems, "; ".join(problems), tuple(evidence))


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
            return Check(False, f"AdmissionCheck {ctx.plan.admission_check} does not exist")
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
        return Check(not problems, "; ".join(problems), tuple(evidence))


def _profile_entry(ctx: StepContext) -> dict[str, Any]:
    plan = ctx.plan
    applicability: dict[str, Any] = {"namespaces": list(plan.namespaces)}
    if plan.teams:
        applicability["teams"] = list(plan.teams)
    if plan.lanes:
        applicability["lanes"] = list(plan.lanes)
    return {"name": plan.profile, "description": f"Dispatch to MultiKueue workers {', '.join(w.name for w in plan.workers)}",
            "applicability": applicability, "gpusPerWorker": plan.gpus_per_worker, "workerCount": plan.worker_count,
            "mode": "fixed", "placement": "unconstrained", "defaultLocalQueue": plan.local_queue,
            "executionTarget": "multiKueue",
            "priorities": {"workloadPriorityClassName": plan.priority_class, "podPriorityClassName": plan.priority_class}}


def declared_profiles(tc: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list(((tc or {}).get("spec") or {}).get("workloadProfiles") or ())


def queue_guard(ctx: StepContext, tc: dict[str, Any] | None) -> str | None:
    """The default-queue guard: a MultiKueue AdmissionCheck never goes on the
    default queue, nor on any queue a global profile uses (taugrid.md §3.7)."""
    plan = ctx.plan
    defaults = default_queues(ctx, tc)
    if not plan.namespaces:
        return "a MultiKueue profile must be non-global: name its tenant namespaces"
    if plan.local_queue in defaults:
        return (f"refused: {plan.local_queue} is the default queue ({', '.join(sorted(defaults))}), which stays single-cluster "
                "and must never receive a MultiKueue AdmissionCheck; give the plan a dedicated localQueue")
    default_cqs = set()
    for lq in ctx.manager.list(R.LOCAL_QUEUE.type, None):
        if lq["metadata"]["name"] in defaults:
            default_cqs.add((lq.get("spec") or {}).get("clusterQueue"))
    if plan.cluster_queue in default_cqs:
        return (f"refused: ClusterQueue {plan.cluster_queue} backs the default queue; a MultiKueue AdmissionCheck there would "
                "send every default submission to workers. Give the plan a dedicated clusterQueue")
    status_profiles = ((((tc or {}).get("status") or {}).get("workloadProfiles") or {}).get("profiles") or [])
    for profile in declared_profiles(tc) + status_profiles:
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
    return None


class QueueStep(Step):
    key = "queue"
    kind = "queue"
    title = "4. Dedicated non-global queue and multiKueue profile"
    explanation = (
        "A dedicated ClusterQueue whose only admission check is the MultiKueue one, a LocalQueue in each tenant "
        "namespace, and a workload profile with executionTarget multiKueue and namespace applicability in "
        "TauCluster/cluster. Refused for the default queue (jobqueue or workspaceDefaults.defaultQueue) and for "
        "any queue a global profile uses. Verification waits for the profile's Ready=True and a current "
        "MultiKueueReady=True.")

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
        # After a drain, setup again (rollback) resumes admission on the dedicated queues.
        cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
        if cq is not None and (cq.get("spec") or {}).get("stopPolicy") not in (None, "None"):
            out.append(Change("patch", R.CLUSTER_QUEUE.type, plan.cluster_queue, None, {"spec": {"stopPolicy": "None"}}))
        for ns in plan.namespaces:
            lq = ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns)
            if lq is not None and (lq.get("spec") or {}).get("stopPolicy") not in (None, "None"):
                out.append(Change("patch", R.LOCAL_QUEUE.type, plan.local_queue, ns, {"spec": {"stopPolicy": "None"}}))
        profiles = [p for p in declared_profiles(tc) if p.get("name") != plan.profile] + [_profile_entry(ctx)]
        out.append(Change("patch", R.TAU_CLUSTER.type, "cluster", None, {"spec": {"workloadProfiles": profiles}}))
        return out

    def verify(self, ctx: StepContext) -> Check:
        return profile_ready(ctx)


def profile_ready(ctx: StepContext) -> Check:
    plan = ctx.plan
    tc = tau_cluster(ctx)
    if tc is None:
        return Check(False, "TauCluster/cluster not found")
    generation = (tc.get("metadata") or {}).get("generation")
    declared = next((p for p in declared_profiles(tc) if p.get("name") == plan.profile), None)
    if declared is None:
        return Check(False, f"profile {plan.profile} is not declared in TauCluster/cluster")
    teams = list((declared.get("applicability") or {}).get("teams") or [])
    if teams != list(plan.teams):
        return Check(False, f"profile {plan.profile} applicability teams are {teams or 'unset'}, not {list(plan.teams) or 'unset'}"
                            + (" (tenant authorization was removed by a drain)" if DRAINED_TEAM in teams else ""))
    missing = [ns for ns in plan.namespaces if ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns) is None]
    if missing:
        return Check(False, f"LocalQueue {plan.local_queue} missing in {', '.join(missing)}")
    held = [ns for ns in plan.namespaces
            if ((ctx.manager.get(R.LOCAL_QUEUE.type, plan.local_queue, ns) or {}).get("spec") or {}).get("stopPolicy") not in (None, "None")]
    cq = ctx.manager.get(R.CLUSTER_QUEUE.type, plan.cluster_queue)
    if cq is None:
        return Check(False, f"ClusterQueue {plan.cluster_queue} does not exist")
    if held or ((cq.get("spec") or {}).get("stopPolicy") not in (None, "None")):
        return Check(False, f"queue {plan.local_queue} is held (stopPolicy) by a drain; setup resumes admission")
    status = tc.get("status") or {}
    mk = condition(tc, "MultiKueueReady")
    evidence = [f"TauCluster generation {generation}: {describe_condition(mk)}"
                + (f", observedGeneration {mk.get('observedGeneration')}" if mk else "")]
    resolved = next((p for p in (status.get("workloadProfiles") or {}).get("profiles") or () if p.get("name") == plan.profile), None)
    ready = next((c for c in (resolved or {}).get("conditions") or () if c.get("type") == "Ready"), None)
    evidence.append(f"profile {plan.profile}: {describe_condition(ready)}")
    problems = []
    if mk is None or mk.get("status") != "True" or mk.get("observedGeneration") != generation:
        problems.append("MultiKueueReady is not a current True: " + describe_condition(mk))
    if ready is None or ready.get("status") != "True" or ready.get("observedGeneration") != generation:
        problems.append(f"profile {plan.profile} is not Ready at generation {generation}: {describe_condition(ready)}")
    return Check(not problems, "; ".join(problems), tuple(evidence))


class MatrixStep(Step):
    key = "matrix"
    kind = "matrix"
    title = "5. Worker dependency matrix"
    explanation = (
        "Before tenants are authorised, every worker must match the manager's Kubernetes, Kueue, KubeRay and "
        "workload CRD minor versions (other combinations are outside the supported contract) and hold the queue, "
        "ServiceAccount, Secrets, StorageClass, PVCs, image pull secrets, GPU capacity and flavors the workloads "
        "need. A cell that cannot be read names the missing permission; set adminContext for the worker in the plan "
        "to read it with your own access.")

    def verify(self, ctx: StepContext) -> Check:
        rows = dependency_matrix(ctx)
        evidence = [f"{row.worker}: " + " | ".join(f"{col} {cell}" for col, cell in row.cells) for row in rows]
        problems = [p for row in rows for p in row.problems()]
        return Check(not problems, "; ".join(problems), tuple(evidence))


def setup_flow() -> Flow:
    return Flow("setup", "MultiKueue setup wizard",
                [CredentialStep(), WiringStep(), AdmissionCheckStep(), QueueStep(), MatrixStep()])
