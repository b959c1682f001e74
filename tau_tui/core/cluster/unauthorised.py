"""What an informer does when the server refuses its credential even after a refresh
(:mod:`tau_tui.core.cluster.credential_refresh`): the connection reads "unauthorised: re-login"
(not "stale": the server answers, it refuses us), the data already read stays on screen, and the
informer asks again every :data:`UNAUTHORISED_RETRY_S` from the resourceVersion it had, so it
recovers by itself once the credential is valid again (a new login, a rotated token file). The
pods behind the Nodes pane's GPU allocation are the exception: their allocation is dropped as
unknown, so that informer lists again in full."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.errors import not_authenticated_message
from tau_tui.core.cluster.kinds import ResourceKind

if TYPE_CHECKING:
    from tau_tui.core.cluster.cache import ObjectCache

#: Seconds between tries of a refused informer: each try is one request and at most one credential
#: load (which the refresher bounds per client), so a dozen informers never hammer the server.
UNAUTHORISED_RETRY_S = 10.0


class _Backend(Protocol):
    cache: ObjectCache

    def _update_connection(self, message: str = "") -> None: ...


class RefusedInformer(Protocol):
    @property
    def backend(self) -> _Backend: ...

    kind: ResourceKind
    namespace: str | None
    node_pods: bool
    synced: threading.Event
    unauthorised: str | None
    resource_version: str | None


def mark_unauthorised(informer: RefusedInformer, exec_failure: str | None = None) -> float:
    """Record the refusal on ``informer``'s view and the connection; the seconds to wait before the next try."""
    rt = informer.kind.type
    text = not_authenticated_message("list", rt.qualified, informer.namespace, exec_failure)
    informer.unauthorised = text
    cache = informer.backend.cache
    if informer.node_pods:
        cache.set_node_pods_unknown()
        informer.resource_version = None  # only a full list makes allocations known again: relist, not resume
    elif cache.view_state(informer.kind).status in (ViewStatus.READY, ViewStatus.ERROR):
        cache.set_state(informer.kind, ViewStatus.ERROR, text)  # keep what was read; it is only stale
    else:
        cache.clear(informer.kind, ViewStatus.FORBIDDEN, text)  # nothing read yet: say why the table is empty
    informer.synced.set()
    informer.backend._update_connection(text)
    return UNAUTHORISED_RETRY_S


__all__ = ["UNAUTHORISED_RETRY_S", "RefusedInformer", "mark_unauthorised"]
