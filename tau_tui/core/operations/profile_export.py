"""`tau-tui profiles export`: a TauWorkloadProfileSnapshot written from the live TauCluster, as
TauGrid's `tau cluster profiles export` does (taugrid.md §2.5, §3.6): it fails closed.  The status
must be there and observed (`status.workloadProfiles`, `observed` not false), current
(observedGeneration and the WorkloadProfilesReady condition at the object's generation) and
consistent (profileSetHash equal to the hash recomputed over the profiles); otherwise nothing is
written and every reason is given.  As TauGrid's provider (which reads the condition's presence and
freshness, not its value), a set with some profiles not Ready exports: those profiles keep their
Ready=False in the snapshot, stay unselectable offline, and the export names them
(:attr:`Export.not_ready`).

The snapshot keeps each profile as resolved, conditions included, so `render --profiles` re-checks
each profile's readiness against the exported generation, and the hash against the profiles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Export:
    document: dict[str, Any]
    #: Profiles whose Ready is not True at this generation: exported, but not selectable offline.
    not_ready: tuple[str, ...]
    #: The set condition when it is not True (its reason and message), else "".
    set_condition: str


def export_snapshot(tau_cluster: Mapping[str, Any] | None) -> Export:
    """The snapshot of TauCluster/cluster, or :class:`ExportRefused` with the reasons."""
    if not tau_cluster:
        raise ExportRefused([f"TauCluster/{TAUCLUSTER_NAME} not found: TauGrid is not installed or not configured here"])
    profile_set = profile_set_from_taucluster(dict(tau_cluster))
    problems = list(profile_set.gate_problems)
    status: Mapping[str, Any] = tau_cluster.get("status") or {}
    workload_profiles = status.get("workloadProfiles")
    if not isinstance(workload_profiles, Mapping):
        problems.insert(0, "status.workloadProfiles is missing: the tau-core controller has not published the profiles")
    elif workload_profiles.get("observed") is False:
        problems.append("status.workloadProfiles.observed is false: the controller has not observed the profiles")
    if problems:
        raise ExportRefused(problems)
    assert profile_set.generation is not None  # the gate checked it
    document = snapshot_document(profile_set.generation, [dict(p.raw) for p in profile_set.profiles])
    if document["profileSetHash"] != profile_set.profile_set_hash:  # the gate compared them; never write another
        raise ExportRefused(["profileSetHash changed while exporting"])
    condition = next((c for c in parse_conditions(status.get("conditions")) if c.type == SET_CONDITION), None)
    detail = "" if condition is None or condition.is_true else (
        f"{SET_CONDITION}={condition.status}" + (f" ({condition.reason}: {condition.message})" if condition.reason else ""))
    not_ready = tuple(p.name for p in profile_set.profiles if not ((ready := p.condition("Ready")) and ready.is_true))
    return Export(document, not_ready, detail)
