"""Without -n, the app and the headless commands start in the kubeconfig context's namespace (as
kubectl and k9s do); a list across every namespace that is forbidden says how to choose one."""

from __future__ import annotations

import json
import threading

import pytest
import yaml

from tau_tui.cli import main
from tau_tui.startup.backends import connect_kubeconfig_backend
from tests.stub_servers import answering_server, api_status


def kubeconfig_with(tmp_path, server: str, namespace: str | None) -> str:
    context = {"cluster": "test", "user": "test"}
    if namespace:
        context["namespace"] = namespace
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": server}}],
        "users": [{"name": "test", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "test", "context": context}],
    }))
    return str(path)


class Recorder:
    """A stub API server that answers every list empty (or 403 across every namespace) and keeps the paths."""

    def __init__(self, all_namespaces_forbidden: bool = False) -> None:
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self.forbidden = all_namespaces_forbidden
        self.server = answering_server(self.answer)

    def answer(self, path: str):
        with self.lock:
            self.paths.append(path)
        if self.forbidden and "/namespaces/" not in path and path.rsplit("/", 1)[-1] in ("jobs", "rayjobs", "workloads", "pods"):
            plural = path.rsplit("/", 1)[-1]
            return 403, "application/json", api_status(403, "Forbidden", f'{plural} is forbidden: User "u" cannot list '
                                                                        f'resource "{plural}" at the cluster scope')
        return 200, "application/json", json.dumps({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                                    "items": []})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()


@pytest.mark.parametrize(("explicit", "context", "everything", "lists", "one"), [
    ("team-b", "team-a", False, "team-b", "team-b"),  # -n wins
    (None, "team-a", False, "team-a", "team-a"),      # the context's namespace
    (None, "team-a", True, None, "team-a"),           # -A: every namespace for lists
    (None, None, False, None, "default"),             # no namespace anywhere: every one; one object in default
])
def test_the_namespace_rule(explicit, context, everything, lists, one):
    from tau_tui.core.cluster.namespace_scope import list_scope, object_namespace

    assert list_scope(explicit, context, everything) == lists
    assert object_namespace(explicit, context) == one


def test_the_app_starts_in_the_context_namespace_else_every_namespace(tmp_path, monkeypatch):
    server = Recorder()
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path / "scoped", server.url, "team-a"))
    try:
        for everything, expected in ((False, "team-a"), (True, None)):  # -A: every namespace anyway
            backend = connect_kubeconfig_backend(None, None, all_namespaces=everything)
            try:
                assert backend.namespace == expected
            finally:
                backend.close()
        monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path / "plain", server.url, None))
        backend = connect_kubeconfig_backend(None, None)
        try:
            assert backend.namespace is None  # the context names none: every namespace, as before
        finally:
            backend.close()
    finally:
        server.close()


def test_runs_lists_the_context_namespace_without_n(tmp_path, monkeypatch, capsys):
    server = Recorder()
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, "team-a"))
    try:
        assert main(["runs", "-o", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["namespace"] == "team-a"
        assert "/apis/batch/v1/namespaces/team-a/jobs" in server.paths
        assert "/apis/batch/v1/jobs" not in server.paths
        server.paths.clear()
        assert main(["runs", "-A", "-o", "json"]) == 0
        capsys.readouterr()
        assert "/apis/batch/v1/jobs" in server.paths
    finally:
        server.close()


def test_runs_forbidden_across_every_namespace_names_the_fix(tmp_path, monkeypatch, capsys):
    server = Recorder(all_namespaces_forbidden=True)
    monkeypatch.setenv("KUBECONFIG", kubeconfig_with(tmp_path, server.url, None))
    try:
        assert main(["runs"]) == 1
        err = capsys.readouterr().err
        assert "no access: list jobs.batch (all namespaces)" in err, err
        assert "-n NS" in err and ":ns NS" in err
        assert "cluster-scoped" not in err and "Traceback" not in err
    finally:
        server.close()
