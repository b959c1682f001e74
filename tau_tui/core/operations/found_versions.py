"""The versions the app found: its own, the Kubernetes server's, Kueue's release, the Kueue API and
RayJob CRD versions (what ``:version`` and the ``?`` help say), and whether Kubernetes and Kueue are
a cell of the tested version matrix.  Read with network I/O: call it from a worker thread.
What cannot be read is "unknown", never a guess."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

from tau_tui.core.cluster.kueue_api_support import ApiGroupVersions, discovery_get, read_group_versions
from tau_tui.core.cluster.names import KUEUE_GROUP, KUEUE_VERSION, RAY_GROUP, RAY_VERSION
from tau_tui.core.cluster.tested_cells import (
    CellJudgement,
    KueueApiShape,
    KueueRelease,
    Verdict,
    judge_cell,
    kueue_release,
)
from tau_tui.core.operations.multikueue_steps.access import CRD
from tau_tui.core.operations.multikueue_steps.matrix import release_label

UNKNOWN = "unknown"
NOT_INSTALLED = "not installed"
KUEUE_WORKLOAD_CRD = f"workloads.{KUEUE_GROUP}"
RAY_JOB_CRD = f"rayjobs.{RAY_GROUP}"
UNJUDGED = CellJudgement(Verdict.UNKNOWN, "the Kubernetes version is unknown")


@dataclass(frozen=True, slots=True)
class FoundVersions:
    tau_tui: str
    kubernetes: str
    kueue_api: str
    ray_job: str
    #: Kueue's release as far as it can be told: "v0.17.0 (CRD label)", "v0.16 or newer (by its API)".
    kueue: str = UNKNOWN
    cell: CellJudgement = UNJUDGED

    def lines(self) -> list[str]:
        return [f"tau-tui {self.tau_tui}", f"Kubernetes {self.kubernetes}", f"Kueue {self.kueue}",
                f"Kueue API {KUEUE_GROUP}: {self.kueue_api}", f"KubeRay RayJob {RAY_GROUP}: {self.ray_job}"]

    def line(self) -> str:
        return " · ".join(self.lines())

    @property
    def outside_tested_matrix(self) -> str | None:
        """The warning for a Kubernetes and Kueue outside the tested matrix; None otherwise."""
        return self.cell.reason if self.cell.verdict is Verdict.OUTSIDE else None


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


def _crd(backend: Any, name: str) -> dict[str, Any] | None:
    """A CRD; None when it cannot be read (not installed, forbidden, no such API)."""
    try:
        crd = backend._api_get(CRD, name, None)
    except Exception:  # noqa: BLE001  (forbidden, absent, unreachable: discovery answers instead)
        return None
    return crd if isinstance(crd, dict) else None


def _version_names(crd: dict[str, Any], flag: str) -> list[str]:
    """The names of a CRD's versions marked ``flag`` (served, storage, deprecated)."""
    return [str(v.get("name")) for v in (crd.get("spec") or {}).get("versions") or ()
            if isinstance(v, dict) and v.get(flag)]


def _crd_versions(crd: dict[str, Any] | None) -> tuple[list[str], list[str]] | None:
    """(served, storage) of a CRD; None without one."""
    return None if crd is None else (_version_names(crd, "served"), _version_names(crd, "storage"))


def _kueue_shape(crd: dict[str, Any] | None, found: ApiGroupVersions) -> KueueApiShape | None:
    """The Workload API's shape from its CRD (served, storage, deprecated), else from discovery (served only)."""
    if crd is not None:
        return KueueApiShape(*(frozenset(_version_names(crd, flag)) for flag in ("served", "storage", "deprecated")))
    return KueueApiShape(frozenset(found.served)) if found.installed else None


def _described(found: ApiGroupVersions, crd: tuple[list[str], list[str]] | None) -> str:
    if crd is not None:
        served, storage = crd
        return (", ".join(served) or "no version served") + (f" (storage {', '.join(storage)})" if storage else "")
    if found.installed is None:
        return UNKNOWN
    if not found.installed:
        return NOT_INSTALLED
    return ", ".join(found.served) or "no version served"


def _discovered(backend: Any, group: str) -> ApiGroupVersions:
    get = discovery_get(backend)
    if get is None:
        return ApiGroupVersions(installed=None)
    try:
        return read_group_versions(get, group)
    except Exception:  # noqa: BLE001
        return ApiGroupVersions(installed=None)


def _group(backend: Any, group: str, crd_name: str) -> str:
    crd = _crd(backend, crd_name)
    return _described(_discovered(backend, group), _crd_versions(crd))


def _kueue(backend: Any, discovered: ApiGroupVersions | None = None) -> tuple[str, str, KueueRelease | None]:
    """Kueue's API versions and its release, shown and as known (``discovered``: discovery already read)."""
    crd = _crd(backend, KUEUE_WORKLOAD_CRD)
    found = discovered if discovered is not None else _discovered(backend, KUEUE_GROUP)
    release = kueue_release(release_label(crd) if crd is not None else None, _kueue_shape(crd, found))
    if release is not None:
        shown = str(release)
    else:
        shown = NOT_INSTALLED if crd is None and found.installed is False else UNKNOWN
    return _described(found, _crd_versions(crd)), shown, release


def _judged(kubernetes: str, release: KueueRelease | None) -> CellJudgement:
    return judge_cell(None if kubernetes == UNKNOWN else kubernetes, release)


def _simulated(backend: Any) -> bool:
    from tau_tui.core.sim.backend import SimulatedBackend
    from tau_tui.core.sim.process_backend import ProcessSimulatedBackend

    return isinstance(backend, (SimulatedBackend, ProcessSimulatedBackend))


def read_found_versions(backend: Any | None) -> FoundVersions:
    """What ``backend``'s server reports (None: no cluster yet).  Network I/O: a worker thread only."""
    if backend is None:
        return FoundVersions(tau_tui_version(), UNKNOWN, UNKNOWN, UNKNOWN)
    kubernetes = _kubernetes_version(backend)
    kueue_api, kueue, release = _kueue(backend)
    if _simulated(backend):  # the simulated cluster speaks the API versions the client does
        return FoundVersions(tau_tui_version(), f"{kubernetes} (simulated)", f"{KUEUE_VERSION} (simulated)",
                             f"{RAY_VERSION} (simulated)", kueue, _judged(kubernetes, release))
    return FoundVersions(tau_tui_version(), kubernetes, kueue_api, _group(backend, RAY_GROUP, RAY_JOB_CRD), kueue,
                         _judged(kubernetes, release))


def outside_tested_matrix_warning(backend: Any, discovered: ApiGroupVersions | None) -> str | None:
    """The warning for a server whose Kubernetes and Kueue are outside the tested matrix; None otherwise,
    reading nothing unless discovery found Kueue installed (``discovered``).  Network I/O."""
    if discovered is None or discovered.installed is not True:
        return None
    kubernetes = _kubernetes_version(backend)
    if kubernetes == UNKNOWN:
        return None
    cell = _judged(kubernetes, _kueue(backend, discovered)[2])
    return cell.reason if cell.verdict is Verdict.OUTSIDE else None


def found_versions_line(backend: Any | None) -> str:
    """:func:`read_found_versions` on one line (the ``?`` help).  Network I/O: a worker thread only."""
    return read_found_versions(backend).line()


__all__ = ["FoundVersions", "found_versions_line", "outside_tested_matrix_warning", "read_found_versions",
           "tau_tui_version"]
