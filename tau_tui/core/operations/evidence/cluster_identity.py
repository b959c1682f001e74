"""Which cluster a record is evidence of: the API server's URL and the ``kube-system`` Namespace's
UID (made when the cluster was, never reused by another one), and whether the cluster is the
simulated one of ``--demo``.

A record keeps its cluster's identity, its bundle's signed manifest carries it, an export after
the cluster went out of reach exports only a record of the same cluster, and ``evidence verify``
names it.  Demo records live in a store of their own, signed by the demo's own key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind

KUBE_SYSTEM = "kube-system"
DEMO_SERVER_PREFIX = "demo:"


def is_simulated(backend: Any) -> bool:
    """Whether ``backend`` is the embedded simulated cluster (in this process or in its own)."""
    from tau_tui.core.sim.backend import SimulatedBackend
    from tau_tui.core.sim.process_backend import ProcessSimulatedBackend

    return isinstance(backend, (SimulatedBackend, ProcessSimulatedBackend))


@dataclass(frozen=True)
class ClusterIdentity:
    server: str | None
    kube_system_uid: str | None
    simulated: bool = False
    #: Why a part is unknown ("" when both are known).
    problem: str = ""
    #: The API server did not answer (its kube-system UID could not be asked).
    unreachable: bool = False

    def conflicts(self, server: str | None, uid: str | None, simulated: bool) -> str:
        """Why a record of (``server``, ``uid``, ``simulated``) is not of this cluster, or ""."""
        if simulated != self.simulated:
            return ("it is a record of the simulated (demo) cluster" if simulated
                    else "it is a record of a real cluster, not the simulated one")
        if server is None:
            return "it was captured before records named their cluster, so nothing says which cluster it is of"
        if server != self.server:
            return f"it is of the cluster at {server}, not {self.server}"
        if uid and self.kube_system_uid and uid != self.kube_system_uid:
            return (f"it is of another cluster at the same address ({KUBE_SYSTEM} uid {uid}, "
                    f"not {self.kube_system_uid})")
        return ""

    def describe(self) -> str:
        uid = self.kube_system_uid or f"unknown: {self.problem}"
        kind = "the simulated (demo) cluster " if self.simulated else ""
        return f"{kind}{self.server or 'unknown server'} ({KUBE_SYSTEM} uid {uid})"


def cluster_identity(backend: Any) -> ClusterIdentity:
    """The backend's cluster: its server URL (from the kubeconfig; the demo's context for the
    simulator) and, read live, the ``kube-system`` UID (unknown, with the reason, when it cannot be
    read).  Network I/O: a worker or core thread only."""
    simulated = is_simulated(backend)
    http = getattr(backend, "http", None)  # the real backend's connection: its server from the kubeconfig
    server = f"{DEMO_SERVER_PREFIX}{backend.current_context or 'demo'}" if simulated else getattr(http, "server", None)
    try:
        namespace = backend._api_get(ResourceKind.NAMESPACE.type, KUBE_SYSTEM, None)
    except ApiFailure as err:
        reason = "no access" if err.code == 403 else (err.message or "no answer") if err.code == 0 else f"HTTP {err.code}"
        return ClusterIdentity(server, None, simulated, f"the {KUBE_SYSTEM} namespace could not be read ({reason})",
                               unreachable=err.code == 0)
    except ClusterError as err:
        return ClusterIdentity(server, None, simulated, f"the {KUBE_SYSTEM} namespace could not be read ({err})")
    uid = (namespace.get("metadata") or {}).get("uid") if isinstance(namespace, dict) else None
    return ClusterIdentity(server, str(uid) if uid else None, simulated,
                           "" if uid else f"the {KUBE_SYSTEM} namespace has no uid")
