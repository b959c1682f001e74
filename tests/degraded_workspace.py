"""A second, Degraded TauWorkspace for the demo world (team-nlp, drift detected), added by the tests
that need a workspace that is not Ready.  Not in the demo scenario itself: an object added there
would shift the seeded UIDs of every run after it, and every picture that shows them."""

from __future__ import annotations

import copy

from tau_tui.core.cluster.kinds import ResourceKind

DEGRADED_WORKSPACE = {
    "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
    "metadata": {"name": "team-nlp", "namespace": "tau-system"},
    "spec": {"authorization": {"mode": "cluster-wide"}, "target": {"namespace": "team-nlp"}, "queue": "jobqueue",
             "defaults": {"priority": "normal", "outputRoot": "/data/team-nlp/runs", "ttlSecondsAfterFinished": 86400}},
    "status": {
        "phase": "Degraded", "observedGeneration": 1, "target": {"resolvedNamespace": "team-nlp"},
        "queue": {"localQueue": "jobqueue", "clusterQueue": "jobqueue"},
        "conditions": [
            {"type": "RBACReady", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2025-03-01T00:00:00Z"},
            {"type": "QueueReady", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2025-03-01T00:00:00Z"},
            {"type": "WorkloadIdentityReady", "status": "False", "reason": "ServiceAccountMissing",
             "message": "ServiceAccount team-nlp/tau-runner not found", "lastTransitionTime": "2025-03-02T09:00:00Z"},
            {"type": "DriftDetected", "status": "True", "reason": "RoleBindingEdited",
             "message": "RoleBinding team-nlp/tau-researcher was changed outside TauGrid", "lastTransitionTime": "2025-03-02T09:00:00Z"},
        ],
    },
}


def add_degraded_workspace(world) -> None:
    world.store.put(ResourceKind.TAU_WORKSPACE.type, copy.deepcopy(DEGRADED_WORKSPACE))


def with_degraded_workspace(monkeypatch) -> None:
    """Every demo world the command under test builds (``--demo``) gets the Degraded workspace too."""
    from tau_tui.core.sim import scenario

    original = scenario.build_world

    def build(*args, **kwargs):
        world = original(*args, **kwargs)
        add_degraded_workspace(world)
        return world

    monkeypatch.setattr(scenario, "build_world", build)
