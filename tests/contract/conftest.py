"""The ``env`` fixture: every contract test runs against the simulated
backend (always) and the real backend on the harness tiers."""

from __future__ import annotations

import pytest

from tests.contract.envs import ProcessSimEnv, SimEnv


def _real_env(request, tier: str):
    from tests.contract.real_env import RealEnv

    plane = request.getfixturevalue(tier)
    return RealEnv(plane, tier)


@pytest.fixture(
    params=[
        pytest.param("sim", id="sim"),
        pytest.param("sim-process", id="sim-process"),
        pytest.param("t1", id="real-t1", marks=[pytest.mark.harness, pytest.mark.t1]),
    ]
)
def env(request):
    yield from _environment(request)


@pytest.fixture(
    params=[
        pytest.param("sim", id="sim"),
        pytest.param("sim-process", id="sim-process"),
        pytest.param("t2", id="real-t2", marks=[pytest.mark.harness, pytest.mark.t2]),
    ]
)
def pod_env(request):
    """Environments that run pods and serve their logs."""
    yield from _environment(request)


def _environment(request):
    if request.param == "sim":
        environment = SimEnv()
    elif request.param == "sim-process":
        environment = ProcessSimEnv()
    else:
        environment = _real_env(request, request.param)
    try:
        yield environment
    finally:
        environment.close()
