"""Setup, the seed's five steps (000_362d573c40e0bbf8 "Platform-owner
configuration"; taugrid.md §9.2):

1. a least-privilege worker kubeconfig Secret, protected from tenants;
2. explicit MultiKueueCluster and MultiKueueConfig objects;
3. a dedicated AdmissionCheck (controllerName exactly kueue.x-k8s.io/multikueue),
   Active=True with at least one Active worker;
4. a dedicated, non-global queue and multiKueue profile (never the default queue),
   published with no applicable tenant: limited to a reserved team select()
   matches to no caller, its LocalQueues held (stopPolicy Hold);
5. the dependency matrix on every worker; only when it verifies are tenants
   authorised (the plan's namespaces, teams and lanes), proven by select().

A setup that stops before step 5 verifies leaves no tenant able to select the
profile (seed: "Verify workload dependencies on every eligible worker before
authorizing tenants").

Rollback (re-enable after a drain) is this flow again: the engine resumes
from the first step that no longer verifies.
"""

from __future__ import annotations

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
)
from tau_tui.core.operations.multikueue_steps.credential_ledger import (
    FINGERPRINT_ANNOTATION,
    ledger_change,
    read_ledger,
    where,
)
from tau_tui.core.operations.multikueue_steps.credentials import CredentialError, credential_from_secret
from tau_tui.core.operations.multikueue_steps.engine import Change, Check, Flow, Refused, Step, StepContext
from tau_tui.core.operations.multikueue_steps.setup_queue import MANAGED_BY, MANAGED_LABEL, MatrixStep, QueueStep
from tau_tui.core.operations.multikueue_steps.worker_access import review_worker_access

R = ResourceKind
WORKER_LABEL = "tau.azure.com/multikueue-worker"
SA_PREFIX = "system:serviceaccount:"


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
        "and SelfSubjectRulesReview there). It is stored as a Secret with key 'kubeconfig' in Kueue's namespace, "
        "and the manager notes its SHA-256 fingerprint on TauCluster/cluster (the ledger revocation proofs bind to); "
        "verification asks the manager (SubjectAccessReview) that no tenant identity can read it. "
        "The credential is never shown: previews and records carry its fingerprint only.")

    def refusal(self, ctx: StepContext) -> str | None:
        if ctx.manager.get(R.TAU_CLUSTER.type, "cluster") is None:
            return ("TauCluster/cluster not found: TauGrid is not installed or not configured on the manager (the manager "
                    f"notes the fingerprints of the credentials it stores there, {where()})")
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
                                 "annotations": {FINGERPRINT_ANNOTATION: cred.fingerprint}},
                    "type": "Opaque", "data": {"kubeconfig": cred.secret_data()}}
            out.append(Change("create", SECRET, wp.secret_name, ctx.plan.kueue_namespace, body, redact=("data.kubeconfig",)))
        # The manager notes which credential it stores (revocation proofs bind to it): a fingerprint, never the credential.
        out.append(ledger_change(ctx, {wp.name: {"stored": ctx.credential(wp.name).fingerprint} for wp in ctx.plan.workers}))
        return out

    def verify(self, ctx: StepContext) -> Check:
        evidence, problems = [], []
        ns = ctx.plan.kueue_namespace
        ledger = read_ledger(ctx.manager.get(R.TAU_CLUSTER.type, "cluster"))
        for wp in ctx.plan.workers:
            stored = credential_from_secret(wp.name, ctx.manager.get(SECRET, wp.secret_name, ns))
            if stored is None:
                problems.append(f"Secret {ns}/{wp.secret_name} with key kubeconfig does not exist")
                continue
            evidence.append(f"Secret {ns}/{wp.secret_name} holds credential {stored.fingerprint} for {stored.server}")
            noted = ledger.get(wp.name, {}).get("stored")
            if noted != stored.fingerprint:
                problems.append(f"the manager notes {noted or 'no credential'} for {wp.name} ({where()}), not the stored "
                                f"{stored.fingerprint}: apply this step to note it (revocation proofs bind to it)")
            else:
                evidence.append(f"{where()}: {wp.name} stores {noted}")
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
        "(clusterSource.kubeConfig, locationType Secret), and one MultiKueueConfig listing exactly these workers. "
        "Verification reads the config back: a cluster in it that the plan does not list is refused, by name (Kueue "
        "would dispatch to it, and no later step could check or revoke it).")

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
            clusters = [str(c) for c in (config.get("spec") or {}).get("clusters") or []]
            evidence.append(f"MultiKueueConfig {ctx.plan.config} lists {', '.join(clusters)}")
            # Every cluster the live config names is eligible (Kueue dispatches to it): one the plan does not
            # list is a worker no step could check, read or revoke.
            outside = [c for c in clusters if ctx.plan.worker(c) is None]
            if outside:
                raise Refused(f"MultiKueueConfig {ctx.plan.config} lists {', '.join(outside)}, which the plan does not "
                              "list: Kueue dispatches to every cluster of the config, and tau-tui could neither check "
                              "nor revoke one the plan does not name; remove it from the config, or add it to the "
                              "plan's workers (with its credential and adminContext)")
            missing = [w.name for w in ctx.plan.workers if w.name not in clusters]
            if missing:
                problems.append(f"MultiKueueConfig {ctx.plan.config} does not list {', '.join(missing)}")
            else:
                evidence.append(f"the config's clusters are exactly the plan's workers: {', '.join(sorted(clusters))}")
        return check_from(problems, evidence)


class AdmissionCheckStep(Step):
    key = "admission-check"
    kind = "admission-check"
    title = "3. Dedicated AdmissionCheck, Active with an Active worker"
    explanation = (
        f"An AdmissionCheck whose spec.controllerName is exactly {MULTIKUEUE_CONTROLLER_NAME}, with parameters "
        "naming the plan's MultiKueueConfig. Verification reads both back (another controller or config is refused), "
        "and waits until the check reports Active=True and at least one MultiKueueCluster the config lists reports "
        "Active=True, or shows Kueue's reason (a bad or insecure kubeconfig, a connection failure, a forbidden watch).")

    def refusal(self, ctx: StepContext) -> str | None:
        plan = ctx.plan
        ac = ctx.manager.get(R.ADMISSION_CHECK.type, plan.admission_check)
        if ac is None:
            return None
        if (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE_CONTROLLER_NAME:
            return (f"AdmissionCheck {plan.admission_check} exists with controllerName "
                    f"{(ac.get('spec') or {}).get('controllerName')!r}; it is not a MultiKueue check. Pick another name")
        params = (ac.get("spec") or {}).get("parameters") or {}
        if (params.get("apiGroup"), params.get("kind"), params.get("name")) != ("kueue.x-k8s.io", "MultiKueueConfig", plan.config):
            named = (f"MultiKueueConfig {params.get('name')}, not the plan's {plan.config}" if params.get("kind") == "MultiKueueConfig"
                     else f"{params.get('apiGroup') or '-'} {params.get('kind') or '-'} {params.get('name') or '-'}, "
                          f"not MultiKueueConfig {plan.config}")
            return (f"AdmissionCheck {plan.admission_check} names {named}: its workers are not the ones steps 2 and 5 "
                    "check; point its parameters at the plan's config, or name another check")
        return None

    def changes(self, ctx: StepContext) -> list[Change]:
        return [Change("create", R.ADMISSION_CHECK.type, ctx.plan.admission_check, None, {
            "apiVersion": R.ADMISSION_CHECK.type.api_version, "kind": "AdmissionCheck",
            "metadata": {"name": ctx.plan.admission_check, "labels": {MANAGED_LABEL: MANAGED_BY}},
            "spec": {"controllerName": MULTIKUEUE_CONTROLLER_NAME,
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ctx.plan.config}}})]

    def verify(self, ctx: StepContext) -> Check:
        plan = ctx.plan
        ac = ctx.manager.get(R.ADMISSION_CHECK.type, plan.admission_check)
        if ac is None:
            return refuted(f"AdmissionCheck {plan.admission_check} does not exist")
        why = self.refusal(ctx)
        if why:
            raise Refused(why)
        evidence = [f"AdmissionCheck {plan.admission_check}: controllerName {MULTIKUEUE_CONTROLLER_NAME}, parameters "
                    f"MultiKueueConfig {plan.config}, " + describe_condition(condition(ac, "Active"))]
        config = ctx.manager.get(R.MULTIKUEUE_CONFIG.type, plan.config)
        clusters = [str(c) for c in ((config or {}).get("spec") or {}).get("clusters") or ()]
        active = []
        for name in clusters:
            c = condition(ctx.manager.get(R.MULTIKUEUE_CLUSTER.type, name), "Active")
            evidence.append(f"MultiKueueCluster {name}: {describe_condition(c)}")
            if c is not None and c.get("status") == "True":
                active.append(name)
        problems = []
        if (condition(ac, "Active") or {}).get("status") != "True":
            problems.append(f"AdmissionCheck {plan.admission_check} is not Active: {describe_condition(condition(ac, 'Active'))}")
        if not active:
            problems.append(f"no MultiKueueCluster of MultiKueueConfig {plan.config} is Active: "
                            + ("; ".join(evidence[1:]) or "it lists none"))
        return check_from(problems, evidence)


def setup_flow() -> Flow:
    return Flow("setup", "MultiKueue setup wizard",
                [CredentialStep(), WiringStep(), AdmissionCheckStep(), QueueStep(), MatrixStep()])
