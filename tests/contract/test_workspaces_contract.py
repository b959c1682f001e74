"""TauWorkspace in the cache, on both backends (issue 45): listed and watched in the system namespace
whatever namespace the session reads, changes seen, deletion seen; the same objects through
the one-shot read that `tau-tui workspace` uses."""

from __future__ import annotations

import contextlib

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.view_types import TauWorkspaceView
from tau_tui.core.cluster.workspaces import read_workspaces
from tau_tui.core.runconfig.workspace import SYSTEM_NAMESPACE

R = ResourceKind


def _workspace(name: str, target: str) -> dict:
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
            "spec": {"authorization": {"mode": "cluster-wide"}, "target": {"namespace": target}, "queue": "jobqueue"}}


def test_workspaces_are_watched_in_the_system_namespace_whatever_the_session_reads(env):
    with contextlib.suppress(ApiFailure):  # shared by the tests of a tier
        env.create(R.NAMESPACE.type, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}})
    team = env.unique_namespace("ws")
    name = f"ws-{team}"
    backend = env.backend(namespace=team)  # the session reads the team's namespace, not tau-system

    def seen() -> TauWorkspaceView | None:
        return next((w for w in backend.tau_workspaces() if w.name == name), None)

    env.create(R.TAU_WORKSPACE.type, _workspace(name, team))
    try:
        assert env.settle(lambda: seen() is not None), [w.name for w in backend.tau_workspaces()]
        view = seen()
        assert view is not None and view.namespace == SYSTEM_NAMESPACE and view.target_namespace == team and view.phase is None
        env.patch(R.TAU_WORKSPACE.type, name, SYSTEM_NAMESPACE, {"metadata": {"annotations": {"tau.azure.com/v0-primary-workspace": "false"}}})
        assert env.settle(lambda: (seen() or view).annotations.get("tau.azure.com/v0-primary-workspace") == "false")
        assert name in {w.name for w in read_workspaces(backend).workspaces}  # the one-shot read sees the same
    finally:
        env.delete(R.TAU_WORKSPACE.type, name, SYSTEM_NAMESPACE)
    assert env.settle(lambda: seen() is None)
