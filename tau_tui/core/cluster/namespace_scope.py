"""Which namespace a session reads when none is named, kubectl's and k9s's rule, for the app and
every headless command alike: ``-n NS`` if given; else every namespace when ``-A`` was asked for;
else the kubeconfig context's namespace (the in-cluster ServiceAccount's namespace counts as one);
else every namespace for a list, and ``default`` for one named object."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.runconfig.workspace import SYSTEM_NAMESPACE

if TYPE_CHECKING:  # the kubernetes client loads only where a kubeconfig is read
    from tau_tui.core.cluster.kubeconfig import KubeconfigSource

#: The namespace of one named object when neither ``-n`` nor the context names one (kubectl's).
DEFAULT_NAMESPACE = "default"


def list_scope(explicit: str | None, context_namespace: str | None, all_namespaces: bool = False) -> str | None:
    """The namespace lists start scoped to; None: every namespace."""
    if explicit:
        return explicit
    if all_namespaces:
        return None
    return context_namespace or None


def object_namespace(explicit: str | None, context_namespace: str | None) -> str:
    """The namespace one named object (a run to show or cancel) is looked for in."""
    return explicit or context_namespace or DEFAULT_NAMESPACE


def context_namespace(source: KubeconfigSource, context: str | None) -> str | None:
    """The namespace ``context`` (None: the current one) sets, or None."""
    return source.namespace_of(context or source.current_context())


def watch_namespace(kind: ResourceKind, namespace: str | None) -> str | None:
    """Where the cache lists and watches ``kind`` when the session reads ``namespace`` (None: every one).
    TauWorkspaces live in the system namespace, whichever namespace the session reads (taugrid.md §4.2)."""
    if not kind.type.namespaced:
        return None
    if kind is ResourceKind.TAU_WORKSPACE and namespace is not None:
        return SYSTEM_NAMESPACE
    return namespace
