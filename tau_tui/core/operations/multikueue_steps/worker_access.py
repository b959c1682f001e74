"""The verbs Kueue's MultiKueue controller needs on a worker (kueue.md A4.4),
and the review of a worker credential against them: missing verbs, verbs
beyond them, and a cluster-wide write binding. Any of the three refuses the
credential (seed: "Grant worker credentials only the verbs and namespaces
Kueue needs")."""

from __future__ import annotations

from dataclasses import dataclass, field

from tau_tui.core.operations.multikueue_steps.access import BackendAccess, Permission

# As Kueue's create-multikueue-kubeconfig.sh grants them (kueue.md A4.4).
WRITE = ("create", "delete", "get", "list", "watch")
READ = ("get", "list", "watch")
#: (group, resource, subresource, verbs) in each namespace that runs dispatched workloads.
NAMESPACED_NEEDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("batch", "jobs", "", WRITE),
    ("batch", "jobs", "status", ("get",)),
    ("", "pods", "", READ),
    ("kueue.x-k8s.io", "workloads", "", WRITE),
    ("kueue.x-k8s.io", "workloads", "status", ("get", "patch", "update")),
    ("ray.io", "rayjobs", "", WRITE),
    ("ray.io", "rayjobs", "status", ("get",)),
    ("ray.io", "rayclusters", "", READ),
)
#: Kueue's remote client watches Workloads in every namespace of the worker.
CLUSTER_NEEDS = (Permission("list", "kueue.x-k8s.io", "workloads"), Permission("watch", "kueue.x-k8s.io", "workloads"))
#: Resources a worker credential may hold (Kueue's integrations), with their status.
ALLOWED_RESOURCES = frozenset({
    "jobs", "jobs/status", "pods", "pods/status", "workloads", "workloads/status", "rayjobs", "rayjobs/status",
    "rayclusters", "rayclusters/status", "jobsets", "jobsets/status", "mpijobs", "mpijobs/status",
    "pytorchjobs", "pytorchjobs/status", "tfjobs", "tfjobs/status", "paddlejobs", "paddlejobs/status",
    "xgboostjobs", "xgboostjobs/status", "appwrappers", "appwrappers/status",
})
ALLOWED_VERBS = frozenset((*WRITE, "update", "patch"))
#: Every authenticated user may ask these; they are not the credential's privileges.
REVIEW_GROUPS = frozenset({"authorization.k8s.io", "authentication.k8s.io"})
#: A namespace no dispatched workload runs in: write access there means a cluster-wide write binding,
#: which reaches every namespace of the worker, not only the tenants' ones.
PROBE_NAMESPACE = "kube-system"


def needed_permissions(namespaces: list[str]) -> list[Permission]:
    out = list(CLUSTER_NEEDS)
    for ns in namespaces:
        for group, resource, sub, verbs in NAMESPACED_NEEDS:
            out += [Permission(verb, group, resource, ns, sub) for verb in verbs]
    return out


def high_risk_permissions(namespaces: list[str]) -> list[Permission]:
    """Rights a leaked worker credential must never carry, asked one by one (SelfSubjectAccessReview), since
    a rules review shows only the namespaces it is asked about."""
    out = [Permission("list", "", "secrets"), Permission("get", "", "secrets", PROBE_NAMESPACE),
           Permission("impersonate", "", "users"), Permission("bind", "rbac.authorization.k8s.io", "clusterroles"),
           Permission("escalate", "rbac.authorization.k8s.io", "clusterroles"), Permission("update", "", "nodes")]
    return out + [Permission("create", "", "pods", ns, "exec") for ns in namespaces]


@dataclass
class AccessReport:
    identity: str
    missing: list[str] = field(default_factory=list)
    excess: list[str] = field(default_factory=list)
    cluster_wide: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def acceptable(self) -> bool:
        return not self.missing and not self.excess and not self.cluster_wide

    def summary(self) -> str:
        """Why the credential is not acceptable, in one line."""
        parts = []
        if self.missing:
            parts.append(f"{len(self.missing)} verbs Kueue needs are missing ({self.missing[0]}"
                         + (", ..." if len(self.missing) > 1 else "") + ")")
        if self.excess:
            parts.append("more than Kueue needs: " + "; ".join(self.excess))
        if self.cluster_wide:
            parts.append("cluster-wide write binding: " + "; ".join(self.cluster_wide))
        return "; ".join(parts) or "least-privilege"

    def evidence(self) -> list[str]:
        lines = [f"identity on the worker (SelfSubjectReview): {self.identity}",
                 f"{self.checked} SelfSubjectAccessReviews for the verbs Kueue needs: "
                 + ("all allowed" if not self.missing else f"{len(self.missing)} denied")]
        lines += [f"  ✗ missing: {m}" for m in self.missing]
        lines += [f"  ✗ more than Kueue needs (SelfSubjectRulesReview): {e}" for e in self.excess]
        lines += [f"  ✗ cluster-wide write binding: {c}" for c in self.cluster_wide]
        return lines


def review_worker_access(access: BackendAccess, namespaces: list[str]) -> AccessReport:
    report = AccessReport(access.whoami())
    for permission in needed_permissions(namespaces):
        report.checked += 1
        if not access.can(permission):
            report.missing.append(str(permission))
    seen: set[str] = set()
    for ns in namespaces:
        rules, complete = access.rules(ns)
        if not complete:
            # Rights the review could not list may be anything: least privilege is unproven, not proven.
            report.excess.append(f"SelfSubjectRulesReview in {ns} is incomplete (an authorizer that cannot list "
                                 "its rules, such as a webhook): least privilege cannot be proven")
        for rule in rules:
            groups = set(rule.get("apiGroups") or ())
            if groups and groups <= REVIEW_GROUPS:
                continue
            resources = set(rule.get("resources") or ())
            verbs = set(rule.get("verbs") or ())
            extra_resources = sorted(r for r in resources if r == "*" or r not in ALLOWED_RESOURCES)
            extra_verbs = sorted(v for v in verbs if v == "*" or v not in ALLOWED_VERBS)
            if extra_resources or extra_verbs:
                text = (f"verbs {', '.join(sorted(verbs))} on {', '.join(sorted(resources))}"
                        f" ({', '.join(sorted(groups)) or 'core'})")
                if text not in seen:
                    seen.add(text)
                    report.excess.append(text)
    for probe in high_risk_permissions(namespaces):
        if access.can(probe):
            report.excess.append(f"can {probe}: a right Kueue never needs")
    if PROBE_NAMESPACE not in namespaces:
        for group, resource in (("batch", "jobs"), ("kueue.x-k8s.io", "workloads")):
            probe = Permission("create", group, resource, PROBE_NAMESPACE)
            if access.can(probe):
                report.cluster_wide.append(f"can {probe}, where no dispatched workload runs: its writes are bound "
                                           "cluster-wide; bind them per tenant namespace with RoleBindings")
    return report
