"""The fail-closed profile gate (taugrid.md §3.4), selection (§3.5) and the explanation API."""

from __future__ import annotations

import copy

import pytest

from tau_tui.core.runconfig.profiles import (
    Caller,
    SelectionError,
    compute_profile_set_hash,
    explain,
    profile_set_from_taucluster,
    select,
    taucluster_status,
)
from tests.data.regen import CATALOG, GENERATION

CALLER = Caller("taugrid-default", "research", "training")


def taucluster(generation: int = GENERATION, profiles=None) -> dict:
    profiles = copy.deepcopy(CATALOG if profiles is None else profiles)
    return {"metadata": {"name": "cluster", "generation": generation}, "status": taucluster_status(generation, profiles)}


def test_healthy_taucluster_opens_the_gate():
    profile_set = profile_set_from_taucluster(taucluster())
    assert profile_set.gate_open
    assert select(profile_set, "azure.research.training.l", CALLER).gpus_per_worker == 1


def test_generation_not_observed_closes_the_gate():
    obj = taucluster()
    obj["metadata"]["generation"] = GENERATION + 1
    profile_set = profile_set_from_taucluster(obj)
    assert any("has not caught up" in p for p in profile_set.gate_problems)
    with pytest.raises(SelectionError, match="cannot be trusted"):
        select(profile_set, "azure.research.training.l", CALLER)


def test_missing_and_stale_set_condition_close_the_gate():
    obj = taucluster()
    obj["status"]["conditions"] = []
    assert any("WorkloadProfilesReady is missing" in p for p in profile_set_from_taucluster(obj).gate_problems)
    obj = taucluster()
    obj["status"]["conditions"][0]["observedGeneration"] = GENERATION - 1
    assert any("is stale" in p for p in profile_set_from_taucluster(obj).gate_problems)


def test_hash_must_be_present_and_match():
    obj = taucluster()
    obj["status"]["workloadProfiles"]["profileSetHash"] = ""
    assert any("profileSetHash is empty" in p for p in profile_set_from_taucluster(obj).gate_problems)
    obj = taucluster()
    obj["status"]["workloadProfiles"]["profiles"][0]["workerCount"] = 3
    assert any("does not match" in p for p in profile_set_from_taucluster(obj).gate_problems)


def test_hash_ignores_conditions_and_order_but_not_intent():
    profiles = copy.deepcopy(CATALOG)
    base = compute_profile_set_hash(profiles)
    reordered = list(reversed(copy.deepcopy(profiles)))
    reordered[0]["conditions"] = []
    assert compute_profile_set_hash(reordered) == base
    changed = copy.deepcopy(profiles)
    changed[1]["defaultLocalQueue"] = "other"
    assert compute_profile_set_hash(changed) != base
    normalised = copy.deepcopy(profiles)
    normalised[0]["mode"] = "FIXED"
    assert compute_profile_set_hash(normalised) == base


def test_profile_ready_must_be_true_and_current():
    profiles = copy.deepcopy(CATALOG)
    ready = next(c for c in profiles[0]["conditions"] if c["type"] == "Ready")
    ready["observedGeneration"] = GENERATION - 1
    profile_set = profile_set_from_taucluster(taucluster(profiles=profiles))
    with pytest.raises(SelectionError, match="Ready is stale"):
        select(profile_set, profiles[0]["name"], CALLER)


def test_explain_says_why_for_every_profile():
    explanations = {e.name: e for e in explain(profile_set_from_taucluster(taucluster()), CALLER)}
    assert set(explanations) == {p["name"] for p in CATALOG}
    assert explanations["azure.research.training.l"].selectable
    assert explanations["azure.research.training.l"].reasons == ()
    broken = explanations["azure.experimental.broken"]
    assert not broken.selectable and "ClusterQueuesReady=False ClusterQueueInactive" in broken.reasons[0]
    assert explanations["azure.vision.training.l"].reasons == ("not applicable to team research (allowed: vision)",)
    assert explanations["azure.research.eval.gpu"].reasons == ("not applicable to lane training (allowed: eval)",)
    assert explanations["kind-cpu-job"].reasons == ("not applicable to namespace taugrid-default (allowed: ray)",)


def test_unknown_team_is_not_treated_as_any_team():
    explanations = {e.name: e for e in explain(profile_set_from_taucluster(taucluster()), Caller("taugrid-default", None, "eval"))}
    assert explanations["azure.research.eval.gpu"].reasons == ("limited to teams research and the team is not set",)


def test_implicit_selection_needs_a_unique_match():
    profile_set = profile_set_from_taucluster(taucluster())
    assert select(profile_set, None, Caller("ray", None, "training")).name == "kind-cpu-job"
    with pytest.raises(SelectionError, match="multiple ready workload profiles"):
        select(profile_set, None, CALLER)
    with pytest.raises(SelectionError, match="no ready workload profile matches"):
        select(profile_set, None, Caller("elsewhere", None, "training"))


def test_team_and_lane_are_normalised():
    profile_set = profile_set_from_taucluster(taucluster())
    assert select(profile_set, "azure.research.eval.gpu", Caller("taugrid-default", "Research", "EVAL")).name == "azure.research.eval.gpu"


def test_no_profiles_declared_reports_true_with_reason():
    status = taucluster_status(3, [])
    assert status["conditions"][0]["reason"] == "NoWorkloadProfiles"
    assert profile_set_from_taucluster({"metadata": {"generation": 3}, "status": status}).gate_open
