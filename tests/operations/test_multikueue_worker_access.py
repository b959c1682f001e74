"""The worker credential's review fails closed: a rules review the worker's authorizer cannot
complete (a webhook, as with AKS and Azure RBAC) proves nothing, and rights Kueue never needs are
asked one by one wherever they are bound (a RoleBinding to read Secrets in kube-system passed before)."""

from __future__ import annotations

from tau_tui.core.operations.multikueue_steps.access import Permission
from tau_tui.core.operations.multikueue_steps.worker_access import needed_permissions, review_worker_access

NAMESPACES = ["team-nlp"]


class WorkerAuthorizer:
    """A worker's answers to the reviews: every verb Kueue needs, plus ``extra``; rules as given."""

    def __init__(self, extra: tuple[Permission, ...] = (), incomplete: bool = False):
        self.allowed = {str(p) for p in needed_permissions(NAMESPACES)} | {str(p) for p in extra}
        self.incomplete = incomplete

    def whoami(self) -> str:
        return "system:serviceaccount:kueue-system:multikueue-sa"

    def can(self, permission: Permission) -> bool:
        return str(permission) in self.allowed

    def rules(self, namespace: str) -> tuple[list[dict], bool]:
        return [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch"]}], \
            not self.incomplete


def test_the_least_privilege_identity_is_acceptable():
    report = review_worker_access(WorkerAuthorizer(), NAMESPACES)  # type: ignore[arg-type]
    assert report.acceptable, report.summary()


def test_an_incomplete_rules_review_is_not_least_privilege():
    report = review_worker_access(WorkerAuthorizer(incomplete=True), NAMESPACES)  # type: ignore[arg-type]
    assert not report.acceptable
    assert "incomplete" in report.summary() and "least privilege cannot be proven" in report.summary()


def test_reading_secrets_in_kube_system_is_refused_though_no_tenant_rules_review_shows_it():
    report = review_worker_access(WorkerAuthorizer(extra=(Permission("get", "", "secrets", "kube-system"),)), NAMESPACES)  # type: ignore[arg-type]
    assert not report.acceptable
    assert "can get secrets in kube-system: a right Kueue never needs" in report.summary()


def test_exec_into_tenant_pods_is_refused():
    report = review_worker_access(WorkerAuthorizer(extra=(Permission("create", "", "pods", "team-nlp", "exec"),)), NAMESPACES)  # type: ignore[arg-type]
    assert not report.acceptable and "pods/exec in team-nlp" in report.summary()
