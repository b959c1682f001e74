"""The simulated Kueue reads a Workload's conditions once per stored version, not once per scan."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.sim.conditions import is_true
from tau_tui.core.sim.controllers import workload_facts
from tau_tui.core.sim.scenario import build_world

R = ResourceKind


def _versions(world) -> dict[str, str]:
    return {w["metadata"]["uid"]: w["metadata"]["resourceVersion"] for w in world.store.items(R.WORKLOAD.type)}


def test_a_tick_reads_only_the_workloads_whose_version_changed(monkeypatch):
    world = build_world("demo")
    world.advance(3)
    reads: list[str] = []
    original = workload_facts.read_facts

    def counting(wl):
        reads.append(wl["metadata"]["uid"])
        return original(wl)

    monkeypatch.setattr(workload_facts, "read_facts", counting)
    for _ in range(5):
        before = _versions(world)
        reads.clear()
        world.advance(1)
        after = _versions(world)
        changed = {uid for uid, version in after.items() if before.get(uid) != version}
        # Versions written during the tick are read again; unchanged ones never.
        assert set(reads) <= changed | set(before), reads
        assert not {uid for uid in reads if uid in before and before[uid] == after.get(uid)}
        assert len(after) > len(changed)  # the check means something: most Workloads did not change


def test_facts_agree_with_the_conditions_they_summarise():
    world = build_world("demo")
    world.advance(5)
    workloads = world.store.items(R.WORKLOAD.type)
    assert workloads
    for wl in workloads:
        facts = workload_facts.read_facts(wl)
        assert facts.reserved == is_true(wl, "QuotaReserved")
        assert facts.admitted == is_true(wl, "Admitted")
        assert facts.finished == is_true(wl, "Finished")
        assert facts.pending == (bool(wl["spec"].get("queueName")) and wl["spec"].get("active", True) is not False
                                 and not facts.reserved and not facts.finished)
        admission = (wl.get("status") or {}).get("admission")
        assert facts.cluster_queue == (admission["clusterQueue"] if admission and facts.reserved else None)
    kinds = {(f.reserved, f.admitted, f.finished, f.pending) for f in map(workload_facts.read_facts, workloads)}
    assert len(kinds) >= 3, kinds  # the demo has pending, admitted and finished Workloads


def test_a_new_version_is_read_again_and_the_old_one_forgotten():
    cache = workload_facts.WorkloadFactsCache()
    wl = {"metadata": {"uid": "u1", "resourceVersion": "1", "namespace": "ns"}, "spec": {"queueName": "q"},
          "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m"}]}}
    assert cache.of(wl).pending
    reserved = {**wl, "metadata": {**wl["metadata"], "resourceVersion": "2"},
                "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                           "admission": {"clusterQueue": "cq", "podSetAssignments": [
                               {"flavors": {"nvidia.com/gpu": "h100"}, "resourceUsage": {"nvidia.com/gpu": "8"}}]}}}
    facts = cache.of(reserved)
    assert not facts.pending and facts.cluster_queue == "cq" and facts.usage == ((("h100", "nvidia.com/gpu"), 8.0),)
    cache.keep_only(set())
    assert len(cache) == 0
