"""Said once per cluster and context: lists across every namespace are forbidden, how to choose a
namespace (``-n NS`` or ``:ns NS``), and which ones the person can read when that is known.  Every
pane's empty state names the fix too (``core/cluster/namespace_access.py``); this notice adds the
namespaces, found in a worker (a SelfSubjectAccessReview each)."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from tau_tui.app_components.shell import run_in_thread
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.namespace_access import all_namespaces_forbidden, forbidden_list_message
from tau_tui.core.cluster.namespace_advice import NAMESPACES_WAIT_S, advise_scope

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell
    from tau_tui.core.cluster.interfaces import ClusterBackend

#: Seconds the notice stays: it is the one thing to read before anything works.
NOTICE_TIMEOUT_S = 30.0


class ScopeNotice:
    """:meth:`check` on each tick (a few cached view states); the notice at most once per backend and context."""

    def __init__(self, app: AppShell) -> None:
        self.app = app
        self._said: set[tuple[int, str | None]] = set()
        #: When each backend and context was first seen refused (monotonic seconds).
        self._seen: dict[tuple[int, str | None], float] = {}
        #: The notices given, in order (tests count them).
        self.given: list[str] = []

    def check(self, backend: ClusterBackend) -> None:
        key = (id(backend), backend.current_context)
        if key in self._said:
            return
        kind = all_namespaces_forbidden(backend)
        if kind is None:
            return
        # The namespace list comes after the queues' lists: wait for it on the ticks, not in a thread.
        first_seen = self._seen.setdefault(key, time.monotonic())
        if backend.view_state(ResourceKind.NAMESPACE).status is ViewStatus.SYNCING \
                and time.monotonic() - first_seen < NAMESPACES_WAIT_S:
            return
        self._said.add(key)
        run_in_thread(self.app, partial(self._advise, backend, kind), group="scope-notice", exclusive=False)

    def _advise(self, backend: ClusterBackend, kind: ResourceKind) -> None:
        if isinstance(backend, BaseBackend):
            text = advise_scope(backend, kind, wait_s=0).text
        else:
            text = forbidden_list_message(kind.type.qualified, None, True)
        self.app.call_from_thread(self._say, text)

    def _say(self, text: str) -> None:
        self.given.append(text)
        self.app.notify(text, title="namespace", severity="warning", timeout=NOTICE_TIMEOUT_S, markup=False)
