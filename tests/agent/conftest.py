"""Fixtures shared by the agent's harness tests."""

from __future__ import annotations

import pytest
from kubernetes import config as k8s_config


@pytest.fixture(scope="module")
def admin(plane):
    """A cluster-admin client of the module's control plane (each module's `plane` names its tier)."""
    api_client = k8s_config.new_client_from_config(config_file=plane.kubeconfig)
    yield api_client
    api_client.close()
