"""A server whose Kueue serves no kueue.x-k8s.io/v1beta2 (Kueue v0.14 or older) is refused at start,
by the app's backend start and by the commands that read Kueue, with one message naming what was
found and the minimum; Kueue not installed, or discovery unreadable, keeps today's behaviour."""

from __future__ import annotations

import json

import pytest

from tau_tui.cli import main
from tau_tui.commands.parser import EXIT_UNSUPPORTED_KUEUE
from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.kueue_api_support import (
    UnsupportedKueueApi,
    read_group_versions,
    refuse_unsupported_kueue,
    unsupported_message,
)
from tau_tui.startup.backends import (
    UNSUPPORTED_KUEUE_LABEL,
    UNSUPPORTED_KUEUE_TITLE,
    BackendUnavailable,
    connect_kubeconfig_backend,
)
from tests.cluster.test_namespace_scope import kubeconfig_with
from tests.stub_servers import answering_server, api_status

KUEUE_DISCOVERY = "/apis/kueue.x-k8s.io"
REFUSAL = ("Kueue API kueue.x-k8s.io serves v1beta1 only (Kueue v0.14 or older); "
           "tau-tui needs v1beta2 (Kueue ≥ v0.15)")


def api_group(*versions: str) -> dict:
    return {"kind": "APIGroup", "apiVersion": "v1", "name": "kueue.x-k8s.io",
            "versions": [{"groupVersion": f"kueue.x-k8s.io/{v}", "version": v} for v in versions],
            "preferredVersion": {"groupVersion": f"kueue.x-k8s.io/{versions[0]}", "version": versions[0]}}


def answering(body: dict | None = None, failure: ApiFailure | None = None):
    def get(path: str) -> dict:
        assert path == KUEUE_DISCOVERY
        if failure is not None:
            raise failure
        return body or {}
    return get


def test_v1beta2_served_is_supported():
    for versions in (("v1beta2", "v1beta1"), ("v1beta1", "v1beta2"), ("v1beta2",)):
        found = read_group_versions(answering(api_group(*versions)))
        assert found.installed is True and found.served == versions
        assert unsupported_message(found) is None


def test_v1beta1_only_is_refused_naming_what_was_found_and_the_minimum():
    found = read_group_versions(answering(api_group("v1beta1")))
    assert (found.installed, found.served, found.preferred) == (True, ("v1beta1",), "v1beta1")
    message = unsupported_message(found)
    assert message is not None and message.startswith(REFUSAL)


@pytest.mark.parametrize(("failure", "installed"), [
    (ApiFailure(404, "NotFound", "the server could not find the requested resource"), False),  # Kueue not installed
    (ApiFailure(403, "Forbidden", "forbidden"), None),
    (ApiFailure(0, "ConnectionRefusedError", "cannot connect to https://x"), None),
])
def test_not_installed_or_unreadable_is_not_refused(failure, installed):
    found = read_group_versions(answering(failure=failure))
    assert found.installed is installed
    assert unsupported_message(found) is None


def test_an_answer_that_is_no_api_group_is_unknown_not_refused():
    found = read_group_versions(answering({"kind": "List", "items": []}))
    assert found.installed is None and unsupported_message(found) is None


def test_a_backend_without_an_api_server_is_not_asked():
    from tests.app.helpers import demo_backend

    _, backend = demo_backend()
    assert refuse_unsupported_kueue(backend) is None


class KueueServer:
    """A stub API server: discovery of kueue.x-k8s.io as given (None: 404), every list empty."""

    def __init__(self, *versions: str) -> None:
        self.versions = versions
        self.paths: list[str] = []
        self.server = answering_server(self.answer)
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def answer(self, path: str):
        self.paths.append(path)
        if path == KUEUE_DISCOVERY:
            if not self.versions:
                return 404, "application/json", api_status(404, "NotFound", "the server could not find the requested resource")
            return 200, "application/json", json.dumps(api_group(*self.versions))
        return 200, "application/json", json.dumps({"kind": "List", "apiVersion": "v1",
                                                    "metadata": {"resourceVersion": "1"}, "items": []})

    def lists(self) -> list[str]:
        return [p for p in self.paths if p != KUEUE_DISCOVERY]

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def v1beta1_only(tmp_path, monkeypatch):
    server = KueueServer("v1beta1")
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
    yield server
    server.close()


@pytest.mark.parametrize("argv", [["runs", "-n", "default"], ["status", "train", "-n", "default"],
                                  ["cancel", "train", "-n", "default"]])
def test_commands_refuse_with_one_line_and_their_own_exit_code(v1beta1_only, capsys, argv):
    assert main(argv) == EXIT_UNSUPPORTED_KUEUE
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tau-tui: {REFUSAL}")
    assert "Traceback" not in err
    assert v1beta1_only.lists() == []  # refused before any read


def test_commands_without_kueue_installed_behave_as_before(tmp_path, monkeypatch, capsys):
    server = KueueServer()
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
    try:
        assert main(["runs", "-n", "default", "-o", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["namespace"] == "default"
    finally:
        server.close()


def test_commands_on_a_current_kueue_read_as_before(tmp_path, monkeypatch, capsys):
    server = KueueServer("v1beta2", "v1beta1")
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
    try:
        assert main(["runs", "-n", "default", "-o", "json"]) == 0
        assert "/apis/batch/v1/namespaces/default/jobs" in server.paths
    finally:
        server.close()


def test_the_app_backend_start_refuses_before_any_watch(v1beta1_only):
    with pytest.raises(BackendUnavailable) as raised:
        connect_kubeconfig_backend(None, "default")
    err = raised.value
    assert err.message.startswith(REFUSAL)
    assert (err.title, err.label, err.offer_demo) == (UNSUPPORTED_KUEUE_TITLE, UNSUPPORTED_KUEUE_LABEL, True)
    assert v1beta1_only.lists() == []  # no informer was started


def test_refuse_unsupported_kueue_raises_a_cluster_error(v1beta1_only):
    from tau_tui.core.cluster.errors import ClusterError
    from tau_tui.core.cluster.real import KubernetesBackend

    with pytest.raises(UnsupportedKueueApi) as raised:
        refuse_unsupported_kueue(KubernetesBackend(namespace="default"))
    assert isinstance(raised.value, ClusterError) and raised.value.message.startswith(REFUSAL)
