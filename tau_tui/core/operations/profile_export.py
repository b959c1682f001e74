"""`tau-tui profiles export`: a TauWorkloadProfileSnapshot written from the live TauCluster, as
TauGrid's `tau cluster profiles export` does (taugrid.md §2.5, §3.6): it fails closed.  The status
must be current (observedGeneration and the WorkloadProfilesReady condition at the object's
generation), ready (WorkloadProfilesReady=True) and consistent (profileSetHash equal to the hash
recomputed over the profiles); otherwise nothing is written and every reason is given.

The snapshot keeps each profile as resolved, conditions included, so `render --profiles` re-checks
each profile's readiness against the exported generation, and the hash against the profiles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau_tui.core.apifields import parse_conditions
from tau_tui.core.runconfig.profiles import (
    SET_CONDITION,
    TAUCLUSTER_NAME,
    profile_set_from_taucluster,
    snapshot_document,
)


class ExportRefused(Exception):
    """The TauCluster's status cannot be trusted; ``problems`` says why, one reason each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def export_snapshot(tau_cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """The snapshot document of TauCluster/cluster, or :class:`ExportRefused` with the reasons."""
    if not tau_cluster:
        raise ExportRefused([f"TauCluster/{TAUCLUSTER_NAME} not found: TauGrid is not installed or not configured here"])
    profile_set = profile_set_from_taucluster(dict(tau_cluster))
    problems = list(profile_set.gate_problems)
    status: Mapping[str, Any] = tau_cluster.get("status") or {}
    condition = next((c for c in parse_conditions(status.get("conditions")) if c.type == SET_CONDITION), None)
    if condition is not None and condition.status != "True":
        detail = ": ".join(part for part in (condition.reason, condition.message) if part)
        not_ready = [p.name for p in profile_set.profiles if not ((ready := p.condition("Ready")) and ready.is_true)]
        problems.append(f"{SET_CONDITION}={condition.status}" + (f" ({detail})" if detail else "")
                        + (f"; not ready: {', '.join(not_ready)}" if not_ready else ""))
    if problems:
        raise ExportRefused(problems)
    assert profile_set.generation is not None  # the gate checked it
    raw_profiles = [dict(p.raw) for p in profile_set.profiles]
    document = snapshot_document(profile_set.generation, raw_profiles)
    if document["profileSetHash"] != profile_set.profile_set_hash:  # the gate compared them; never write another
        raise ExportRefused(["profileSetHash changed while exporting"])
    return document
