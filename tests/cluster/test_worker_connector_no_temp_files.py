"""A MultiKueue worker reached with its credential (KubeconfigConnector.connect) keeps the CA,
certificate and private key off disk and does not retry silently, as the main client does, even
when it is the first client of the process."""

from __future__ import annotations

import base64
import importlib.util
import tempfile
from typing import Any

import pytest
import yaml
from kubernetes.config import exec_provider as k8s_exec_provider
from kubernetes.config import kube_config as k8s_kube_config

from tau_tui.core.cluster import credentials as cluster_credentials
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.operations.multikueue_steps.credentials import KubeconfigConnector, WorkerCredential
from tests.builders import self_signed_key_and_cert


def _self_signed() -> tuple[bytes, bytes]:
    return self_signed_key_and_cert("lab-worker-1")


def _worker_credential() -> WorkerCredential:
    key_pem, cert_pem = _self_signed()
    b64 = lambda data: base64.b64encode(data).decode("ascii")  # noqa: E731
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "worker",
           "clusters": [{"name": "worker", "cluster": {"server": "https://127.0.0.1:1",
                                                       "certificate-authority-data": b64(cert_pem)}}],
           "users": [{"name": "worker", "user": {"client-certificate-data": b64(cert_pem),
                                                 "client-key-data": b64(key_pem)}}],
           "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": "worker"}}]}
    return WorkerCredential("lab-worker-1", yaml.safe_dump(doc).encode("utf-8"), "https://127.0.0.1:1", "test")


@pytest.fixture
def first_client_of_the_process(monkeypatch, tmp_path):
    """The kubernetes client as a process that made no client yet has it (its own temp-file
    factory, not yet hardened), with ``$TMPDIR`` an empty directory; that directory."""
    spec = importlib.util.find_spec(k8s_kube_config.__name__)
    assert spec is not None and spec.loader is not None
    pristine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pristine)
    monkeypatch.setattr(k8s_kube_config, "_create_temp_file_with_content", pristine._create_temp_file_with_content)
    monkeypatch.setattr(k8s_kube_config, "ExecProvider", k8s_exec_provider.ExecProvider)
    monkeypatch.setattr(cluster_credentials, "_installed", False)
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads $TMPDIR again
    return temp


def _connected_configuration() -> Any:
    """The client configuration of a worker connection made with a credential."""
    backend = KubeconfigConnector().connect(_worker_credential()).backend
    assert isinstance(backend, KubernetesBackend)
    return backend.http.api_client.configuration


def test_a_worker_connection_writes_no_key_certificate_or_ca_to_tmpdir(first_client_of_the_process):
    configuration = _connected_configuration()
    assert configuration.key_file and configuration.cert_file and configuration.ssl_ca_cert
    assert list(first_client_of_the_process.iterdir()) == []
    for path in (configuration.key_file, configuration.cert_file, configuration.ssl_ca_cert):
        assert not str(path).startswith(str(first_client_of_the_process))


def test_a_worker_connection_does_not_retry_silently(first_client_of_the_process):
    assert _connected_configuration().retries is False
