"""The versions the app found (``:version`` and the ``?`` help), and the refusal screen for a Kueue
without v1beta2: read in worker threads, "unknown" where a server does not say."""

from __future__ import annotations

import json

from textual.widgets import Static

from tau_tui.app import TauApp
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.found_versions import UNKNOWN, read_found_versions, tau_tui_version
from tau_tui.screens.no_cluster import NoClusterScreen
from tau_tui.settings.settings_file import AppSettings, LoadedSettings
from tau_tui.widgets.help_dialog import HelpDialog
from tests.app.helpers import async_test, demo_app, demo_backend, record_notifications, settle, wait_until
from tests.cluster.test_kueue_api_support import REFUSAL, KueueServer, api_group
from tests.cluster.test_namespace_scope import kubeconfig_with
from tests.stub_servers import answering_server, api_status

SIMULATED = ["tau-tui 0.1.0", "Kubernetes v1.35.4 (simulated)", f"Kueue {UNKNOWN}",
             "Kueue API kueue.x-k8s.io: v1beta2 (simulated)", "KubeRay RayJob ray.io: v1 (simulated)"]


def test_the_simulated_cluster_reports_what_it_simulates():
    _, backend = demo_backend()
    assert tau_tui_version() == "0.1.0"
    assert read_found_versions(backend).lines() == SIMULATED


def test_no_cluster_is_unknown():
    assert read_found_versions(None).lines()[1:] == [f"Kubernetes {UNKNOWN}", f"Kueue {UNKNOWN}",
                                                     f"Kueue API kueue.x-k8s.io: {UNKNOWN}",
                                                     f"KubeRay RayJob ray.io: {UNKNOWN}"]


def crd(*versions: tuple[str, bool, bool]) -> dict:
    return {"kind": "CustomResourceDefinition",
            "spec": {"versions": [{"name": n, "served": s, "storage": st} for n, s, st in versions]}}


def serve(routes: dict):
    def answer(path: str):
        if path in routes:
            code, body = routes[path]
            return code, "application/json", json.dumps(body)
        return 404, "application/json", api_status(404, "NotFound", "the server could not find the requested resource")
    return answering_server(answer)


def real_backend(tmp_path, monkeypatch, routes: dict):
    from tau_tui.core.cluster.real import KubernetesBackend

    server = serve(routes)
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, f"http://127.0.0.1:{server.server_port}", None))
    return server, KubernetesBackend(namespace="default")


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_a_real_server_reports_served_and_storage_versions(tmp_path, monkeypatch):
    server, backend = real_backend(tmp_path, monkeypatch, {
        "/version": (200, {"major": "1", "minor": "34", "gitVersion": "v1.34.2"}),
        f"{CRDS}/workloads.kueue.x-k8s.io": (200, crd(("v1beta1", True, False), ("v1beta2", True, True))),
        f"{CRDS}/rayjobs.ray.io": (200, crd(("v1", True, True))),
    })
    try:
        assert read_found_versions(backend).lines()[1:] == [
            "Kubernetes v1.34.2", "Kueue v0.16 or newer (by its API)", "Kueue API kueue.x-k8s.io: v1beta1, v1beta2 (storage v1beta2)",
            "KubeRay RayJob ray.io: v1 (storage v1)"]
    finally:
        server.shutdown()


def test_without_crd_rights_discovery_answers_and_a_missing_group_is_not_installed(tmp_path, monkeypatch):
    forbidden = (403, json.loads(api_status(403, "Forbidden", "forbidden")))
    server, backend = real_backend(tmp_path, monkeypatch, {
        "/version": (200, {"gitVersion": "v1.35.4"}),
        f"{CRDS}/workloads.kueue.x-k8s.io": forbidden, f"{CRDS}/rayjobs.ray.io": forbidden,
        "/apis/kueue.x-k8s.io": (200, api_group("v1beta2", "v1beta1")),
    })
    try:
        assert read_found_versions(backend).lines()[1:] == [
            "Kubernetes v1.35.4", "Kueue v0.15 or newer (by its API)", "Kueue API kueue.x-k8s.io: v1beta2, v1beta1",
            "KubeRay RayJob ray.io: not installed"]
    finally:
        server.shutdown()


def test_a_server_that_answers_nothing_readable_is_unknown(tmp_path, monkeypatch):
    broken = (500, json.loads(api_status(500, "InternalError", "boom")))
    server, backend = real_backend(tmp_path, monkeypatch, {
        p: broken for p in ("/version", f"{CRDS}/workloads.kueue.x-k8s.io", f"{CRDS}/rayjobs.ray.io",
                            "/apis/kueue.x-k8s.io", "/apis/ray.io")})
    try:
        assert read_found_versions(backend).lines()[1:] == [
            f"Kubernetes {UNKNOWN}", f"Kueue {UNKNOWN}", f"Kueue API kueue.x-k8s.io: {UNKNOWN}",
            f"KubeRay RayJob ray.io: {UNKNOWN}"]
    finally:
        server.shutdown()


@async_test
async def test_version_command_and_help_say_the_versions(tmp_path):
    async with demo_app(tmp_path) as demo:
        app, pilot = demo.app, demo.pilot
        said = record_notifications(app)
        await app.command_mode.run_command_text("version")
        await settle(pilot)
        assert said == ["\n".join(SIMULATED)]
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpDialog)
        shown = str(app.screen.query_one("#help-versions", Static).render())
        assert shown == "versions (:version): " + " · ".join(SIMULATED)


@async_test
async def test_the_app_refuses_a_kueue_without_v1beta2_with_a_clear_screen(tmp_path, monkeypatch):
    server = KueueServer("v1beta1")
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
    app = TauApp(None, namespace="default", settings=LoadedSettings(AppSettings(refresh_tick=0.5), tmp_path / "config.yaml"),
                 audit=AuditLog(tmp_path / "audit.jsonl"))
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, NoClusterScreen), what="the refusal screen")
            screen = app.screen
            assert str(screen.query_one("#no-cluster-title", Static).render()) == "✗ Unsupported Kueue version"
            assert str(screen.query_one("#no-cluster-message", Static).render()).startswith(REFUSAL)
            assert app.connection_label == "unsupported Kueue"
            assert app.backend is None
            assert server.lists() == []  # no pane was fed: nothing was listed
    finally:
        server.close()
