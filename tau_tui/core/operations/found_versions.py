"""The versions the app found: its own, the Kubernetes server's, the Kueue API and RayJob CRD versions
(what ``:version`` and the ``?`` help say).  Read with network I/O: call it from a worker thread.
What cannot be read is "unknown", never a guess."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.kueue_api_support import ApiGroupVersions, discovery_get, read_group_versions
from tau_tui.core.cluster.names import KUEUE_GROUP, KUEUE_VERSION, RAY_GROUP, RAY_VERSION
from tau_tui.core.operations.multikueue_steps.access import CRD

UNKNOWN = "unknown"
NOT_INSTALLED = "not installed"
KUEUE_WORKLOAD_CRD = f"workloads.{KUEUE_GROUP}"
RAY_JOB_CRD = f"rayjobs.{RAY_GROUP}"


@dataclass(frozen=True, slots=True)
class FoundVersions:
    tau_tui: str
    kubernetes: str
    kueue_api: str
    ray_job: str

    def lines(self) -> list[str]:
        return [f"tau-tui {self.tau_tui}", f"Kubernetes {self.kubernetes}",
                f"Kueue API {KUEUE_GROUP}: {self.kueue_api}", f"KubeRay RayJob {RAY_GROUP}: {self.ray_job}"]

    def line(self) -> str:
        return " · ".join(self.lines())


def tau_tui_version() -> str:
    try:
        return importlib.metadata.version("tau-tui")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN


def _kubernetes_version(backend: Any) -> str:
    try:
        body = backend._server_version()
    except Exception:  # noqa: BLE001  (refused, unreachable, not reported: unknown, never a crash)
        return UNKNOWN
    version = body.get("gitVersion") if isinstance(body, dict) else None
    return str(version) if version else UNKNOWN


def _crd_versions(backend: Any, name: str) -> tuple[list[str], list[str]] | None:
    """(served, storage) of a CRD; None when it cannot be read (not installed, forbidden, no such API)."""
    try:
        crd = backend._api_get(CRD, name, None)
    except Exception:  # noqa: BLE001  (forbidden, absent, unreachable: discovery answers instead)
        return None
    versions = [v for v in (crd.get("spec") or {}).get("versions") or () if isinstance(v, dict)]
    return ([str(v.get("name")) for v in versions if v.get("served")],
            [str(v.get("name")) for v in versions if v.get("storage")])


def _described(found: ApiGroupVersions, crd: tuple[list[str], list[str]] | None) -> str:
    if crd is not None:
        served, storage = crd
        return (", ".join(served) or "no version served") + (f" (storage {', '.join(storage)})" if storage else "")
    if found.installed is None:
        return UNKNOWN
    if not found.installed:
        return NOT_INSTALLED
    return ", ".join(found.served) or "no version served"


def _group(backend: Any, group: str, crd_name: str) -> str:
    crd = _crd_versions(backend, crd_name)
    get = discovery_get(backend)
    if get is None:
        return _described(ApiGroupVersions(installed=None), crd)
    try:
        found = read_group_versions(get, group)
    except Exception:  # noqa: BLE001
        found = ApiGroupVersions(installed=None)
    return _described(found, crd)


def _simulated(backend: Any) -> bool:
    from tau_tui.core.sim.backend import SimulatedBackend
    from tau_tui.core.sim.process_backend import ProcessSimulatedBackend

    return isinstance(backend, (SimulatedBackend, ProcessSimulatedBackend))


def read_found_versions(backend: Any | None) -> FoundVersions:
    """What ``backend``'s server reports (None: no cluster yet).  Network I/O: a worker thread only."""
    if backend is None:
        return FoundVersions(tau_tui_version(), UNKNOWN, UNKNOWN, UNKNOWN)
    kubernetes = _kubernetes_version(backend)
    if _simulated(backend):  # the simulated cluster speaks the versions the client does
        return FoundVersions(tau_tui_version(), f"{kubernetes} (simulated)", f"{KUEUE_VERSION} (simulated)",
                             f"{RAY_VERSION} (simulated)")
    return FoundVersions(tau_tui_version(), kubernetes, _group(backend, KUEUE_GROUP, KUEUE_WORKLOAD_CRD),
                         _group(backend, RAY_GROUP, RAY_JOB_CRD))


def found_versions_line(backend: Any | None) -> str:
    """:func:`read_found_versions` on one line (the ``?`` help).  Network I/O: a worker thread only."""
    return read_found_versions(backend).line()


__all__ = ["FoundVersions", "found_versions_line", "read_found_versions", "tau_tui_version"]
