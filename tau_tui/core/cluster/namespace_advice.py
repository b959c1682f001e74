"""Which namespaces someone whose list across every namespace was refused can read: the namespaces
the backend lists (when that is allowed) and a ServiceAccount's own, each asked with a
SelfSubjectAccessReview.  What to say is :attr:`ScopeAdvice.text`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.namespace_access import NAMESPACE_FIX

#: Namespaces asked about one by one (a SelfSubjectAccessReview each) at most.
MOST_CHECKED = 20
#: How long the advice waits for the namespace list (its informer starts after the queues').
NAMESPACES_WAIT_S = 10.0
_SSAR = ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False)
_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class ScopeAdvice:
    """What to tell someone whose list across every namespace was refused."""

    resource: str
    #: Namespaces where that list is allowed (checked), in name order.
    readable: tuple[str, ...]
    #: Why no namespace could be suggested ("" when some could be).
    unknown_because: str = ""

    @property
    def text(self) -> str:
        head = f"Listing {self.resource} in all namespaces is forbidden: {NAMESPACE_FIX}."
        if self.readable:
            return f"{head} Namespaces you can read: {', '.join(self.readable)}."
        return f"{head} {self.unknown_because}"


def advise_scope(backend: BaseBackend, kind: ResourceKind, wait_s: float = NAMESPACES_WAIT_S) -> ScopeAdvice:
    """Which namespaces ``kind`` can be listed in: those of the namespace list (cached by the
    backend) and the ServiceAccount's own, each asked with a SelfSubjectAccessReview.  Network I/O:
    call it from a worker."""
    deadline = time.monotonic() + wait_s
    while backend.view_state(ResourceKind.NAMESPACE).status is ViewStatus.SYNCING and time.monotonic() < deadline:
        time.sleep(0.1)
    listing = backend.view_state(ResourceKind.NAMESPACE)
    candidates: list[str] = []
    if listing.status is ViewStatus.READY:
        candidates = sorted(v.name for v in backend.list(ResourceKind.NAMESPACE))
    own = _service_account_namespace(backend)
    if own and own not in candidates:
        candidates.insert(0, own)
    readable = []
    for namespace in candidates[:MOST_CHECKED]:
        allowed = _may_list(backend, kind, namespace)
        if allowed is None:  # the review itself failed: say nothing we did not check
            break
        if allowed:
            readable.append(namespace)
    if readable:
        return ScopeAdvice(kind.type.qualified, tuple(sorted(readable)))
    if listing.status is ViewStatus.READY:
        why = f"None of the first {min(len(candidates), MOST_CHECKED)} namespaces allows it; ask a cluster admin which to use."
    else:
        why = "Listing namespaces is not allowed either, so none can be suggested; ask a cluster admin which to use."
    return ScopeAdvice(kind.type.qualified, (), why)


def _service_account_namespace(backend: BaseBackend) -> str | None:
    """A ServiceAccount's namespace, from its user name ``system:serviceaccount:NS:NAME``."""
    try:
        identity = backend.who_am_i() or {}
    except Exception:  # unknown identity: no suggestion from it
        return None
    name = str(identity.get("username") or "")
    if name.startswith(_SERVICE_ACCOUNT_PREFIX):
        return name[len(_SERVICE_ACCOUNT_PREFIX):].split(":", 1)[0] or None
    return None


def _may_list(backend: BaseBackend, kind: ResourceKind, namespace: str) -> bool | None:
    rt = kind.type
    body = {"apiVersion": _SSAR.api_version, "kind": _SSAR.kind, "metadata": {},
            "spec": {"resourceAttributes": {"verb": "list", "group": rt.group, "resource": rt.plural,
                                            "namespace": namespace}}}
    try:
        answer = backend._api_create(_SSAR, None, body, False)
    except ApiFailure:
        return None
    return bool((answer.get("status") or {}).get("allowed"))
