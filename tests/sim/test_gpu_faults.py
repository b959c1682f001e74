"""The simulated agent rates an Xid as the catalog does."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tests.scenarios import demo_backend


def test_the_simulator_rates_an_xid_as_its_catalog_does_everywhere():
    world, backend = demo_backend()
    try:
        for node, verdict in (("h100-node-0", "unhealthy"), ("h100-node-1", "degraded")):
            world.gpu_fault(node, verdict, "Xid79" if verdict == "unhealthy" else "Xid92", "x", 0, kill_pods=False)
        reasons = {}
        for node in ("h100-node-0", "h100-node-1"):
            status = backend._api_get(ResourceKind.GPU_HEALTH.value, node, None)["status"]
            reasons[node] = status["gpus"][0]["reasons"][0]
        assert reasons["h100-node-0"]["action"] == "REBOOT" and reasons["h100-node-0"]["latched"] is True
        assert reasons["h100-node-1"]["action"] == "CONTACT_SUPPORT" and reasons["h100-node-1"]["latched"] is False
    finally:
        backend.close()
