"""The versions line the ``?`` help shows, read once per backend and context in a worker thread,
so the dialog opens with it (no request, no redraw when it lands); and, once per app session, a
warning when the server's Kubernetes and Kueue are outside the tested version matrix."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from tau_tui.app_components.shell import run_in_thread

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell
    from tau_tui.core.cluster.interfaces import ClusterBackend

#: Seconds the matrix warning stays: read once, nothing to act on at once.
MATRIX_WARNING_TIMEOUT_S = 15.0


class FoundVersionsCache:
    def __init__(self, app: AppShell) -> None:
        self.app = app
        #: (backend, context) the line was read for, and the line.
        self._read_for: tuple[object, str | None] | None = None
        self._line = ""
        #: The outside-the-matrix warnings given (at most one a session; tests read it).
        self.warned: list[str] = []

    def read(self, backend: ClusterBackend) -> None:
        """Read the versions of ``backend``'s server in a worker (its answer is kept for the help)."""
        run_in_thread(self.app, partial(self._read, backend), group="found-versions", exclusive=True)

    def _read(self, backend: ClusterBackend) -> None:
        """Worker thread."""
        from tau_tui.core.operations.found_versions import read_found_versions

        context = backend.current_context
        found = read_found_versions(backend)
        self.app.call_from_thread(self._keep, backend, context, found.line(), found.outside_tested_matrix)

    def _keep(self, backend: ClusterBackend, context: str | None, line: str, warning: str | None) -> None:
        self._read_for = (backend, context)
        self._line = line
        if warning is not None and not self.warned:
            self.warned.append(warning)
            self.app.notify(warning, title="versions", severity="warning", timeout=MATRIX_WARNING_TIMEOUT_S,
                            markup=False)

    def line_for(self, backend: ClusterBackend | None) -> str | None:
        """The line read for ``backend`` as it is now (its context), or None: not read (yet)."""
        if backend is None or self._read_for != (backend, backend.current_context):
            return None
        return self._line
