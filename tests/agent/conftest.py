"""Fixtures shared by the agent's tier-2 harness tests."""

from __future__ import annotations

import pytest
from kubernetes import config as k8s_config


@pytest.fixture(scope="module")
def admin(t2):
    """A cluster-admin client of the tier-2 control plane (where every agent harness test runs)."""
    api_client = k8s_config.new_client_from_config(config_file=t2.kubeconfig)
    yield api_client
    api_client.close()
