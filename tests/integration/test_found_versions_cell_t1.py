"""On the version-matrix cell the harness runs (the default cell, or the one TAU_HARNESS_CELL names for
scripts/matrix.sh), the versions tau-tui finds are the ones that cell installed: the kube-apiserver's
release, and the Kueue API versions served and stored as that Kueue release ships them.

The oracle for Kueue is the version timeline of ../shared/reference/kueue.md (A1.0), not tau-tui's
code: v0.15 serves v1beta1 and v1beta2 and stores v1beta1; v0.16 and later store v1beta2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kubernetes import client as k8s

from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.found_versions import read_found_versions
from tests.harness.binaries import locate

pytestmark = [pytest.mark.harness, pytest.mark.t1]

# Kueue minor -> (served, storage) of its Workload CRD, from the reference timeline.
KUEUE_WORKLOAD_VERSIONS = {
    "v0.15": (["v1beta1", "v1beta2"], "v1beta1"),
    "v0.16": (["v1beta1", "v1beta2"], "v1beta2"),
    "v0.17": (["v1beta1", "v1beta2"], "v1beta2"),
    "v0.18": (["v1beta1", "v1beta2"], "v1beta2"),
    "v0.19": (["v1beta1", "v1beta2"], "v1beta2"),
}


def kueue_minor(release: str) -> str:
    return ".".join(release.split(".")[:2])


def test_the_found_kubernetes_version_is_the_cells_apiserver(t1):
    cell = locate().versions
    backend = KubernetesBackend(t1.kubeconfig, namespace="default", kinds=[])
    try:
        found = read_found_versions(backend)
    finally:
        backend.close()
    assert found.kubernetes == cell["K8S_VERSION"]
    # The kube-apiserver binary the plane runs reports the same (what was built is what runs).
    reported = k8s.VersionApi(t1.api_client()).get_code().git_version
    assert reported == cell["K8S_VERSION"]


def test_the_found_kueue_api_is_the_cells_release(t1):
    cell = locate().versions
    served, storage = KUEUE_WORKLOAD_VERSIONS[kueue_minor(cell["KUEUE_VERSION"])]
    backend = KubernetesBackend(t1.kubeconfig, namespace="default", kinds=[])
    try:
        found = read_found_versions(backend)
    finally:
        backend.close()
    assert found.kueue_api.startswith(", ".join(served)), found.kueue_api
    assert f"storage {storage}" in found.kueue_api, found.kueue_api
    crd = k8s.ApiextensionsV1Api(t1.api_client()).read_custom_resource_definition("workloads.kueue.x-k8s.io")
    assert crd.metadata.labels.get("app.kubernetes.io/version") == cell["KUEUE_VERSION"]
    assert found.kueue == f"{cell['KUEUE_VERSION']} (CRD label)"


def test_the_app_judges_the_cell_as_the_table_records_it(t1):
    """A cell recorded as passed in docs/compatibility.md is one the app does not warn about; a cell
    not (yet) recorded is one it warns about."""
    from tau_tui.core.cluster.tested_cells import TESTED_CELLS, Verdict

    cell = locate().versions
    k8s_minor = ".".join(cell["K8S_VERSION"].lstrip("v").split(".")[:2])
    recorded = (k8s_minor, kueue_minor(cell["KUEUE_VERSION"])) in TESTED_CELLS
    backend = KubernetesBackend(t1.kubeconfig, namespace="default", kinds=[])
    try:
        found = read_found_versions(backend)
    finally:
        backend.close()
    assert found.cell.verdict is (Verdict.TESTED if recorded else Verdict.OUTSIDE), found.cell.reason
    assert (found.outside_tested_matrix is None) == recorded


def test_the_cli_reads_the_cells_kueue_without_refusing(t1, tmp_path):
    """The start-up Kueue API check passes on every cell of the matrix (v0.15 and later serve v1beta2)."""
    env = {"KUBECONFIG": t1.kubeconfig, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "tau_tui", "runs", "-n", "default"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "v1beta1 only" not in done.stderr
