"""Whether a server's Kubernetes and Kueue are a cell of the tested version matrix, and how Kueue's
release is told: its Workload CRD's ``app.kubernetes.io/version`` label, else the shape of its API.

The oracle for the shape rules is the version timeline of ../shared/reference/kueue.md (A1.0),
copied below as data, not tau-tui's code."""

from __future__ import annotations

import json

import pytest

from tau_tui.cli import main
from tau_tui.core.cluster.tested_cells import (
    TESTED_CELLS,
    KueueApiShape,
    Verdict,
    judge_cell,
    kueue_release,
    release_minor,
)
from tau_tui.core.operations.found_versions import read_found_versions
from tests.app.test_found_versions import CRDS, real_backend
from tests.cluster.test_kueue_api_support import api_group
from tests.cluster.test_namespace_scope import kubeconfig_with
from tests.stub_servers import answering_server, api_status

# Each release's Workload API: served, storage, and the versions marked deprecated, as the Workload
# CRD at the release's latest tag has them (config/components/crd/bases; kueue.md A1.0 for served and
# storage; the deprecated mark was read from the tags: v0.15.8, v0.16.0 and later carry it).
TIMELINE = {
    "v0.14": ({"v1beta1"}, {"v1beta1"}, set()),
    "v0.15": ({"v1beta1", "v1beta2"}, {"v1beta1"}, {"v1beta1"}),
    "v0.16": ({"v1beta1", "v1beta2"}, {"v1beta2"}, {"v1beta1"}),
    "v0.17": ({"v1beta1", "v1beta2"}, {"v1beta2"}, {"v1beta1"}),
    "v0.18": ({"v1beta1", "v1beta2"}, {"v1beta2"}, {"v1beta1"}),
    "v0.19": ({"v1beta1", "v1beta2"}, {"v1beta2"}, {"v1beta1"}),
}
# What the shape alone can say of each release (v0.16 to v0.19 have one shape).
TOLD_BY_SHAPE = {"v0.14": "v0.14 or older", "v0.15": "v0.15", "v0.16": "v0.16 or newer", "v0.17": "v0.16 or newer",
                 "v0.18": "v0.16 or newer", "v0.19": "v0.16 or newer"}


def shape_of(release: str) -> KueueApiShape:
    served, storage, deprecated = TIMELINE[release]
    return KueueApiShape(frozenset(served), frozenset(storage), frozenset(deprecated))


def minor(text: str) -> tuple[int, int]:
    found = release_minor(text)
    assert found is not None
    return found


@pytest.mark.parametrize("release", sorted(TIMELINE))
def test_the_crd_shape_tells_each_release_as_the_reference_does(release):
    told = kueue_release(None, shape_of(release))
    assert told is not None
    assert (told.text, told.how) == (TOLD_BY_SHAPE[release], "by its API")
    assert told.could_be(minor(release))
    # every release of another shape is ruled out
    for other in TIMELINE:
        if TIMELINE[other] != TIMELINE[release]:
            assert not told.could_be(minor(other)), other


def test_discovery_alone_says_served_versions_only():
    both = kueue_release(None, KueueApiShape(frozenset({"v1beta1", "v1beta2"})))
    assert both is not None and str(both) == "v0.15 or newer (by its API)"
    assert all(both.could_be(minor(r)) for r in ("v0.15", "v0.16", "v0.17", "v0.19"))
    old = kueue_release(None, KueueApiShape(frozenset({"v1beta1"})))
    assert old is not None and str(old) == "v0.14 or older (by its API)"
    # v0.19 still serves v1beta1: a Kueue serving v1beta2 alone is newer than every release in the reference
    new = kueue_release(None, KueueApiShape(frozenset({"v1beta2"})))
    assert new is not None and str(new) == "v0.20 or newer (by its API)"
    assert not any(new.could_be(minor(r)) for r in TIMELINE)
    assert kueue_release(None, None) is None
    assert kueue_release(None, KueueApiShape(frozenset())) is None


def test_the_label_wins_over_the_shape_and_a_label_that_is_no_version_falls_back():
    label = kueue_release("v0.16.2", shape_of("v0.17"))
    assert label is not None and str(label) == "v0.16.2 (CRD label)"
    assert label.could_be((0, 16)) and not label.could_be((0, 17))
    fallback = kueue_release("main", shape_of("v0.17"))
    assert fallback is not None and str(fallback) == "v0.16 or newer (by its API)"


def test_a_tested_cell():
    judged = judge_cell("v1.35.4", kueue_release("v0.17.0", None), cells=[("1.35", "v0.17")])
    assert judged.verdict is Verdict.TESTED
    # a distribution's suffix does not hide the minor
    assert judge_cell("v1.35.2+k3s1", kueue_release("v0.17.1", None), cells=[("1.35", "v0.17")]).verdict is Verdict.TESTED


def test_a_cell_outside_the_table_names_what_was_found_and_the_table():
    judged = judge_cell("v1.32.1", kueue_release("v0.17.0", None), cells=[("1.35", "v0.17"), ("1.32", "v0.16")])
    assert judged.verdict is Verdict.OUTSIDE
    assert judged.reason == ("Kubernetes v1.32.1 with Kueue v0.17.0 (CRD label) is outside the tested version matrix: "
                             "see docs/compatibility.md")


def test_a_release_told_as_a_range_is_outside_only_when_no_tested_cell_could_match():
    newer = kueue_release(None, shape_of("v0.17"))
    cells = [("1.35", "v0.17"), ("1.34", "v0.15")]
    could = judge_cell("v1.35.4", newer, cells=cells)
    assert could.verdict is Verdict.UNKNOWN and "could be a tested cell" in could.reason
    assert judge_cell("v1.34.1", newer, cells=cells).verdict is Verdict.OUTSIDE  # 1.34 was tested with v0.15 only
    assert judge_cell("v1.33.0", newer, cells=cells).verdict is Verdict.OUTSIDE


def test_what_cannot_be_read_is_not_judged():
    release = kueue_release("v0.17.0", None)
    for kubernetes in (None, "unknown", "v0.0.0-master+$Format:%H$"):
        assert judge_cell(kubernetes, release, cells=[("1.35", "v0.17")]).verdict is Verdict.UNKNOWN
    assert judge_cell("v1.20.0", None, cells=[("1.35", "v0.17")]).verdict is Verdict.UNKNOWN


def test_the_tested_cells_are_kubernetes_and_kueue_minors():
    assert TESTED_CELLS
    for kubernetes, kueue in TESTED_CELLS:
        assert release_minor(kubernetes) is not None and kubernetes == "{}.{}".format(*minor(kubernetes))
        assert kueue == "v{}.{}".format(*minor(kueue))


# -- read from a server ------------------------------------------------------------


def labelled(crd: dict, release: str | None) -> dict:
    if release:
        crd.setdefault("metadata", {})["labels"] = {"app.kubernetes.io/version": release}
    return crd


def workload_crd(release: str, label: str | None) -> dict:
    served, storage, deprecated = TIMELINE[release]
    return labelled({"kind": "CustomResourceDefinition", "spec": {"versions": [
        {"name": v, "served": v in served, "storage": v in storage, **({"deprecated": True} if v in deprecated else {})}
        for v in ("v1beta1", "v1beta2")]}}, label)


FORBIDDEN = (403, json.loads(api_status(403, "Forbidden", "forbidden")))


@pytest.mark.parametrize(("routes", "kueue"), [
    ({f"{CRDS}/workloads.kueue.x-k8s.io": (200, workload_crd("v0.17", "v0.17.0"))}, "Kueue v0.17.0 (CRD label)"),
    ({f"{CRDS}/workloads.kueue.x-k8s.io": (200, workload_crd("v0.17", None))}, "Kueue v0.16 or newer (by its API)"),
    ({f"{CRDS}/workloads.kueue.x-k8s.io": (200, workload_crd("v0.15", None))}, "Kueue v0.15 (by its API)"),
    ({f"{CRDS}/workloads.kueue.x-k8s.io": FORBIDDEN, "/apis/kueue.x-k8s.io": (200, api_group("v1beta2", "v1beta1"))},
     "Kueue v0.15 or newer (by its API)"),
    ({f"{CRDS}/workloads.kueue.x-k8s.io": FORBIDDEN, "/apis/kueue.x-k8s.io": FORBIDDEN}, "Kueue unknown"),
    ({f"{CRDS}/workloads.kueue.x-k8s.io": FORBIDDEN}, "Kueue not installed"),  # discovery: 404
], ids=["label", "crd-shape", "crd-shape-v0.15", "discovery", "unreadable", "not-installed"])
def test_the_found_versions_say_kueues_release_from_the_label_else_the_api(tmp_path, monkeypatch, routes, kueue):
    server, backend = real_backend(tmp_path, monkeypatch, {"/version": (200, {"gitVersion": "v1.35.4"}), **routes})
    try:
        found = read_found_versions(backend)
    finally:
        server.shutdown()
    assert found.lines()[2] == kueue
    assert kueue in found.line()


def test_the_found_versions_judge_the_cell(tmp_path, monkeypatch):
    server, backend = real_backend(tmp_path, monkeypatch, {
        "/version": (200, {"gitVersion": "v1.29.3"}),
        f"{CRDS}/workloads.kueue.x-k8s.io": (200, workload_crd("v0.17", "v0.17.0"))})
    try:
        found = read_found_versions(backend)
    finally:
        server.shutdown()
    assert found.cell.verdict is Verdict.OUTSIDE
    assert found.outside_tested_matrix == ("Kubernetes v1.29.3 with Kueue v0.17.0 (CRD label) is outside the tested "
                                           "version matrix: see docs/compatibility.md")


# -- the CLI's reading commands ------------------------------------------------------


class CellServer:
    """A stub API server of one cell: ``/version``, Kueue's discovery and Workload CRD, every list empty."""

    def __init__(self, kubernetes: str, crd: dict | None, discovery: tuple[str, ...] = ("v1beta2", "v1beta1")):
        self.answers = {"/version": (200, {"gitVersion": kubernetes}),
                        "/apis/kueue.x-k8s.io": (200, api_group(*discovery)) if discovery else None,
                        f"{CRDS}/workloads.kueue.x-k8s.io": (200, crd) if crd else None}
        self.paths: list[str] = []
        self.server = answering_server(self.answer)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def answer(self, path: str):
        self.paths.append(path)
        bare = path.split("?", 1)[0]
        if bare in self.answers:
            if self.answers[bare] is None:
                return 404, "application/json", api_status(404, "NotFound", "the server could not find the requested resource")
            code, body = self.answers[bare]
            return code, "application/json", json.dumps(body)
        return 200, "application/json", json.dumps({"kind": "List", "apiVersion": "v1",
                                                    "metadata": {"resourceVersion": "1"}, "items": []})


@pytest.fixture
def cell_server(tmp_path, monkeypatch):
    servers: list[CellServer] = []

    def start(kubernetes: str, crd: dict | None, discovery: tuple[str, ...] = ("v1beta2", "v1beta1")) -> CellServer:
        server = CellServer(kubernetes, crd, discovery)
        servers.append(server)
        monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
        return server

    yield start
    for server in servers:
        server.server.shutdown()


def test_a_reading_command_outside_the_table_warns_in_one_line_and_reads(cell_server, capsys):
    server = cell_server("v1.29.3", workload_crd("v0.17", "v0.17.0"))
    assert main(["runs", "-n", "default", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["namespace"] == "default"  # stdout stays the document
    assert err.splitlines() == ["tau-tui: warning: Kubernetes v1.29.3 with Kueue v0.17.0 (CRD label) is outside the "
                                "tested version matrix: see docs/compatibility.md"]
    assert "/apis/batch/v1/namespaces/default/jobs" in [p.split("?")[0] for p in server.paths]


def test_a_reading_command_on_a_tested_cell_says_nothing_extra(cell_server, capsys):
    kubernetes, kueue = TESTED_CELLS[0]
    cell_server(f"v{kubernetes}.2", workload_crd(kueue, f"{kueue}.0"))
    assert main(["runs", "-n", "default"]) == 0
    assert capsys.readouterr().err == ""


def test_a_reading_command_without_kueue_asks_no_versions(cell_server, capsys):
    server = cell_server("v1.29.3", None, discovery=())
    assert main(["runs", "-n", "default"]) == 0
    assert capsys.readouterr().err == ""
    assert "/version" not in server.paths  # Kueue not installed: nothing to judge, nothing more asked
