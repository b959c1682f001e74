"""TauWorkspaces on a cluster (taugrid.md §4.2): listed in the system namespace, the primary one
discovered by its `tau.azure.com/v0-primary-workspace` annotation when none is named.

One list request per namespace through :meth:`BaseBackend.fetch` (no watch): `tau-tui submit`,
`tau-tui workspace ...` and `--workspace` on the run commands read them this way.  The legacy system
namespace (`tau-platform`, taugrid.md §0 drift 4) is read only when the current one holds none.
"""

from __future__ import annotations

from dataclasses import dataclass

from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.runconfig.workspace import LEGACY_SYSTEM_NAMESPACE, SYSTEM_NAMESPACE, WorkspaceDefaults


@dataclass(frozen=True)
class WorkspaceRead:
    """The workspaces found, and where they were looked for."""

    workspaces: tuple[WorkspaceDefaults, ...]
    searched: tuple[str, ...]

    @property
    def where(self) -> str:
        return " and ".join(self.searched)


def read_workspaces(backend: BaseBackend, system_namespace: str | None = None) -> WorkspaceRead:
    """Every TauWorkspace of the system namespace (``system_namespace`` if given, else tau-system and,
    when that holds none, tau-platform).  A read refused or failed raises :class:`ClusterError`."""
    spaces = (system_namespace,) if system_namespace else (SYSTEM_NAMESPACE, LEGACY_SYSTEM_NAMESPACE)
    searched: list[str] = []
    for namespace in spaces:
        searched.append(namespace)
        found = [WorkspaceDefaults.from_object(view.raw) for view in backend.fetch(ResourceKind.TAU_WORKSPACE, namespace)]
        if found:
            return WorkspaceRead(tuple(sorted(found, key=lambda w: w.name)), tuple(searched))
    return WorkspaceRead((), tuple(searched))


def find_workspace(backend: BaseBackend, name: str | None, system_namespace: str | None = None) -> WorkspaceDefaults | None:
    """The named workspace, or with no name the primary one (None when the cluster marks none).
    A named workspace that is not there, or two primaries, is a :class:`ClusterError` saying so."""
    read = read_workspaces(backend, system_namespace)
    if name:
        match = next((w for w in read.workspaces if w.name == name), None)
        if match is None:
            known = ", ".join(w.name for w in read.workspaces) or "none"
            raise ClusterError(f"TauWorkspace {name} not found in {read.where} (workspaces there: {known}); "
                               "`tau-tui workspace list` shows them")
        return match
    primaries = [w for w in read.workspaces if w.primary]
    if len(primaries) > 1:
        raise ClusterError(f"{len(primaries)} TauWorkspaces in {read.where} are marked primary "
                           f"({', '.join(w.name for w in primaries)}); v0 allows one: name one with --workspace")
    return primaries[0] if primaries else None
