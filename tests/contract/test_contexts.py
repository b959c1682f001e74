"""Switching context needs no restart (simulated: two worlds; real: a merged
KUBECONFIG with an admin and a restricted ServiceAccount context)."""

from __future__ import annotations

import pytest
import yaml

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world
from tests.contract.envs import wait_real
from tests.contract.real_env import RealEnv

R = ResourceKind


def test_sim_context_switch():
    demo, faults = build_world("demo"), build_world("faults")
    backend = SimulatedBackend({"demo": demo, "faults": faults}, context="demo")
    backend.start()
    assert backend.contexts() == ["demo", "faults"]
    assert any(q.name == "jobqueue" for q in backend.cluster_queues())
    backend.use_context("faults")
    assert backend.current_context == "faults"
    # The faults demo's own queues (its recovery runs live in research-cq), none of the demo's.
    assert {q.name for q in backend.cluster_queues()} == {"oncall-cq", "mk-cq", "research-cq"}
    with pytest.raises(ClusterError, match="not found"):
        backend.use_context("nope")
    backend.close()


@pytest.mark.harness
@pytest.mark.t1
def test_real_context_switch_with_merged_kubeconfig(t1, tmp_path, monkeypatch):
    env = RealEnv(t1, "t1")
    ns = env.unique_namespace("ctx")
    sa_path = t1.kubeconfig_for_serviceaccount(ns, "ctx-viewer")  # no RBAC granted at all
    admin_doc = yaml.safe_load(open(t1.kubeconfig))
    sa_doc = yaml.safe_load(open(sa_path))
    for doc, suffix in ((admin_doc, "admin"), (sa_doc, "viewer")):
        for section in ("clusters", "users", "contexts"):
            for item in doc[section]:
                item["name"] = f"{item['name']}-{suffix}" if section != "contexts" else suffix
        ctx = doc["contexts"][0]["context"]
        ctx["cluster"] += f"-{suffix}"
        ctx["user"] += f"-{suffix}"
    sa_doc.pop("current-context", None)
    admin_doc["current-context"] = "admin"
    (tmp_path / "admin.yaml").write_text(yaml.safe_dump(admin_doc))
    (tmp_path / "viewer.yaml").write_text(yaml.safe_dump(sa_doc))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'admin.yaml'}:{tmp_path / 'viewer.yaml'}")

    backend = KubernetesBackend(namespace=ns)
    backend.start()
    try:
        assert backend.contexts() == ["admin", "viewer"] and backend.current_context == "admin"
        assert backend.wait_synced(60)
        assert backend.view_state(R.CLUSTER_QUEUE).status is ViewStatus.READY
        backend.use_context("viewer")
        assert wait_real(lambda: backend.view_state(R.CLUSTER_QUEUE).status is ViewStatus.FORBIDDEN, timeout=60)
        assert backend.view_state(R.WORKLOAD).message == f"no access: list workloads.kueue.x-k8s.io in ns {ns}"
        backend.use_context("admin")
        assert wait_real(lambda: backend.view_state(R.CLUSTER_QUEUE).status is ViewStatus.READY, timeout=60)
    finally:
        backend.close()
        env.close()
