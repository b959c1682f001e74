"""Rights granted in one namespace only (a RoleBinding, the usual on a shared cluster): a list across
every namespace answers 403 while the same list in that namespace works.  Say so with the fix, and
name the namespaces the person can read when that can be found out."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.errors import no_access_message
from tau_tui.core.cluster.kinds import ResourceKind

#: What to do about it, in the words of the CLI flag and the app's command.
NAMESPACE_FIX = "choose a namespace: -n NS, or :ns NS in the app"


def forbidden_list_message(resource: str, namespace: str | None, namespaced: bool) -> str:
    """A view's "no access" line; across every namespace it names the fix."""
    text = no_access_message("list", resource, namespace if namespaced else None)
    if namespaced and not namespace:
        text += f" (all namespaces): {NAMESPACE_FIX}"
    return text


def all_namespaces_forbidden(backend: Any) -> ResourceKind | None:
    """The first namespaced kind a backend scoped to every namespace may not list, or None."""
    if backend.namespace is not None:
        return None
    for kind in ResourceKind:
        if kind.type.namespaced and backend.view_state(kind).status is ViewStatus.FORBIDDEN:
            return kind
    return None
