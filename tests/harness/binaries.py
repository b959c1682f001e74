"""Where harness/build.sh put the control plane binaries and which module dirs hold the CRDs.

Paths are derived from harness/versions.env exactly as build.sh derives them; a missing
binary is an error that names the build command, never a skip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = REPO_ROOT / "harness" / "versions.env"
MATRIX_FILE = REPO_ROOT / "harness" / "matrix.tsv"
# scripts/matrix.sh names the version-matrix cell the harness runs; unset: the default cell.
CELL_ENV = "TAU_HARNESS_CELL"


class HarnessBuildMissing(RuntimeError):
    """A binary or module directory that harness/build.sh should have produced is absent."""


def _read_env_file(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    return values


def matrix_cells() -> dict[str, dict[str, str]]:
    """The rows of harness/matrix.tsv by cell name, read as harness/build.sh reads them."""
    cells: dict[str, dict[str, str]] = {}
    for line in MATRIX_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cell, k8s, kueue, kueue_source, kuberay = line.split()[:5]
        cells[cell] = {"K8S_VERSION": k8s, "KUEUE_VERSION": kueue, "KUEUE_SOURCE": kueue_source,
                       "KUBERAY_VERSION": kuberay}
    return cells


def harness_versions() -> dict[str, str]:
    """versions.env, with the cell's versions over it when TAU_HARNESS_CELL names one."""
    versions = _read_env_file(VERSIONS_FILE)
    versions["DEFAULT_K8S_VERSION"] = versions["K8S_VERSION"]
    versions["KUEUE_SOURCE"] = "module"
    cell = os.environ.get(CELL_ENV)
    if cell:
        cells = matrix_cells()
        if cell not in cells:
            raise HarnessBuildMissing(f"{CELL_ENV}={cell} names no cell of {MATRIX_FILE} ({', '.join(cells)})")
        versions.update(cells[cell])
        versions["CELL"] = cell
    return versions


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tau-tui" / "harness"


@dataclass(frozen=True)
class Binaries:
    versions: dict[str, str]
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kueue: Path
    kwok: Path
    # The KubeRay operator Kueue's go.mod requires (`bash harness/build.sh kuberay`), run by tier 2.
    ray_operator: Path
    kueue_module_dir: Path
    kuberay_module_dir: Path
    kwok_module_dir: Path
    kubectl: Path
    # Another release's kube-apiserver, for the upgrade test (`bash harness/build.sh k8s-upgrade`).
    upgrade_kube_apiserver: Path
    # Benchmark peers, built only by `bash harness/build.sh k9s kueuectl`.
    k9s: Path
    kueuectl: Path
    # The delaying TCP proxy of benchmarks/remote_link.py (`bash harness/build.sh toxiproxy`).
    toxiproxy: Path
    # Prometheus' rule and config checker, for tests/monitoring (`bash harness/build.sh promtool` unpacks
    # Debian's prometheus package).
    promtool: Path

    @property
    def k8s_version(self) -> str:
        return self.versions["K8S_VERSION"]

    def require(self, *names: str) -> None:
        """Raise HarnessBuildMissing unless every named binary exists and is executable."""
        missing = [
            f"{name} ({getattr(self, name)})"
            for name in names
            if not os.access(getattr(self, name), os.X_OK)
        ]
        if missing:
            raise HarnessBuildMissing(
                "harness binaries missing: " + ", ".join(missing)
                + ". Run `bash harness/build.sh` (see docs/testing.md)."
            )


def locate() -> Binaries:
    versions = harness_versions()
    root = cache_root()
    k8s = versions["K8S_VERSION"]
    # A release built from its git tag has cache names of its own (harness/build.sh KUEUE_BUILD).
    kueue_build = ("git-" if versions["KUEUE_SOURCE"] == "git" else "") + versions["KUEUE_VERSION"]
    modules_file = root / f"modules-{kueue_build}-{versions['KUBERAY_VERSION']}-{versions['KWOK_VERSION']}.env"
    if not modules_file.is_file():
        raise HarnessBuildMissing(
            f"{modules_file} is missing: run `bash harness/build.sh` to fetch the Kueue, KubeRay and KWOK modules"
            + (f" (with {CELL_ENV}={versions['CELL']})." if "CELL" in versions else ".")
        )
    modules = _read_env_file(modules_file)
    return Binaries(
        versions=versions,
        etcd=root / f"etcd-{versions['ETCD_VERSION']}" / "etcd",
        kube_apiserver=root / f"kubernetes-{k8s}" / "kube-apiserver",
        kube_controller_manager=root / f"kubernetes-{k8s}" / "kube-controller-manager",
        kube_scheduler=root / f"kubernetes-{k8s}" / "kube-scheduler",
        kueue=root / f"kueue-{kueue_build}" / "kueue",
        kwok=root / f"kwok-{versions['KWOK_VERSION']}-k8s-{versions['DEFAULT_K8S_VERSION']}" / "kwok",
        ray_operator=root / f"kuberay-{versions['KUBERAY_VERSION']}-k8s-{versions['DEFAULT_K8S_VERSION']}" / "ray-operator",
        kueue_module_dir=Path(modules["KUEUE_MODULE_DIR"]),
        kuberay_module_dir=Path(modules["KUBERAY_MODULE_DIR"]),
        kwok_module_dir=Path(modules["KWOK_MODULE_DIR"]),
        kubectl=root / f"kubernetes-{k8s}" / "kubectl",
        upgrade_kube_apiserver=root / f"kubernetes-{versions['UPGRADE_K8S_VERSION']}" / "kube-apiserver",
        k9s=root / f"k9s-{versions['K9S_VERSION']}" / "k9s",
        kueuectl=root / f"kueuectl-{kueue_build}" / "kueuectl",
        toxiproxy=root / f"toxiproxy-{versions['TOXIPROXY_VERSION']}" / "toxiproxy",
        promtool=root / f"promtool-deb-{versions['PROMETHEUS_DEBIAN_VERSION']}" / "usr" / "bin" / "promtool",
    )
