"""The versions line the ``?`` help shows, read once per backend and context in a worker thread,
so the dialog opens with it (no request, no redraw when it lands)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from tau_tui.app_components.shell import run_in_thread

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell
    from tau_tui.core.cluster.interfaces import ClusterBackend


class FoundVersionsCache:
    def __init__(self, app: AppShell) -> None:
        self.app = app
        #: (backend, context) the line was read for, and the line.
        self._read_for: tuple[object, str | None] | None = None
        self._line = ""

    def read(self, backend: ClusterBackend) -> None:
        """Read the versions of ``backend``'s server in a worker (its answer is kept for the help)."""
        run_in_thread(self.app, partial(self._read, backend), group="found-versions", exclusive=True)

    def _read(self, backend: ClusterBackend) -> None:
        """Worker thread."""
        from tau_tui.core.operations.found_versions import found_versions_line

        context = backend.current_context
        line = found_versions_line(backend)
        self.app.call_from_thread(self._keep, backend, context, line)

    def _keep(self, backend: ClusterBackend, context: str | None, line: str) -> None:
        self._read_for = (backend, context)
        self._line = line

    def line_for(self, backend: ClusterBackend | None) -> str | None:
        """The line read for ``backend`` as it is now (its context), or None: not read (yet)."""
        if backend is None or self._read_for != (backend, backend.current_context):
            return None
        return self._line
