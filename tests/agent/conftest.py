"""Fixtures shared by the agent's tests."""

from __future__ import annotations

import pytest
from kubernetes import config as k8s_config

from .fake_nvml import h100_node
from .sim import SimNode


@pytest.fixture(scope="module")
def admin(plane):
    """A cluster-admin client of the module's control plane (each module's `plane` names its tier)."""
    api_client = k8s_config.new_client_from_config(config_file=plane.kubeconfig)
    yield api_client
    api_client.close()


@pytest.fixture()
def node():
    """A simulated two-GPU H100 node whose agent loop has run for 30 s."""
    sim = SimNode(h100_node(2))
    sim.run_for(30)
    return sim
