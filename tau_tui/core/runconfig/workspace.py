"""A TauWorkspace as the run config sees it: the defaults it supplies (taugrid.md §4.2).

`tau run` discovers the primary workspace when none is named, then fills what the config leaves
unset from it: namespace, queue, priority, output root and TTL.  Client dry-run applies none of
them (§2.3).  This module only reads a workspace object; finding it on a cluster is
`core/cluster/workspaces.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tau_tui.core.apifields import Condition, parse_conditions

PRIMARY_ANNOTATION = "tau.azure.com/v0-primary-workspace"
DEFAULT_WORKSPACE = "taugrid-default"
#: Where TauWorkspaces live (taugrid.md §0 drift 4): the system namespace, and its legacy name.
SYSTEM_NAMESPACE = "tau-system"
LEGACY_SYSTEM_NAMESPACE = "tau-platform"
#: The phase needs these; DriftDetected=True makes it Degraded; WorkloadIdentityReady is diagnostic.
REQUIRED_CONDITIONS = ("RBACReady", "QueueReady")
CONDITION_TYPES = ("RBACReady", "QueueReady", "WorkloadIdentityReady", "DriftDetected")
#: `defaults.priority` as the run config's priority tier (`normal` is the default tier).
PRIORITY_TIERS = {"default": "default", "priority": "priority", "normal": "default"}
#: `MinWorkspaceTTLSecondsAfterFinished`: the lifecycle recorder needs the Job for 600 s.
MIN_TTL_SECONDS = 600


def is_primary(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(PRIMARY_ANNOTATION, "")).lower() == "true"


@dataclass(frozen=True)
class WorkspaceDefaults:
    """One TauWorkspace: its identity, readiness and the defaults it gives a run."""

    name: str
    system_namespace: str
    namespace: str
    queue: str | None
    cluster_queue: str | None
    priority_tier: str | None
    output_root: str | None
    ttl_seconds_after_finished: int | None
    phase: str | None
    primary: bool
    generation: int | None = None
    observed_generation: int | None = None
    conditions: tuple[Condition, ...] = field(default_factory=tuple)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> WorkspaceDefaults:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        defaults = spec.get("defaults") or {}
        name = str(meta.get("name") or "")
        namespace = ((status.get("target") or {}).get("resolvedNamespace")
                     or (spec.get("target") or {}).get("namespace") or name)
        ttl = defaults.get("ttlSecondsAfterFinished")
        return cls(
            name=name,
            system_namespace=str(meta.get("namespace") or ""),
            namespace=str(namespace),
            queue=(status.get("queue") or {}).get("localQueue") or spec.get("queue"),
            cluster_queue=(status.get("queue") or {}).get("clusterQueue"),
            priority_tier=PRIORITY_TIERS.get(str(defaults.get("priority") or "")),
            output_root=(str(defaults["outputRoot"]).rstrip("/") or "/") if defaults.get("outputRoot") else None,
            ttl_seconds_after_finished=ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None,
            phase=status.get("phase"),
            primary=is_primary(obj),
            generation=meta.get("generation"),
            observed_generation=status.get("observedGeneration"),
            conditions=parse_conditions(status.get("conditions") if isinstance(status.get("conditions"), list) else None),
        )

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def readiness_problems(self) -> list[str]:
        """Why this workspace is not proven Ready (empty: Ready and current).  Fails closed: a stale or
        missing status is a problem, never a pass."""
        problems: list[str] = []
        if self.generation is not None and self.observed_generation != self.generation:
            problems.append(f"status is stale (observedGeneration {self.observed_generation}, generation {self.generation}): "
                            "the tau-core controller has not caught up")
        if self.phase != "Ready":
            problems.append(f"phase is {self.phase or 'not reported'}")
        for type_ in REQUIRED_CONDITIONS:
            cond = self.condition(type_)
            if cond is None:
                problems.append(f"condition {type_} is missing")
            elif cond.status != "True":
                problems.append(f"{type_}={cond.status}" + (f" ({cond.reason}: {cond.message})" if cond.reason or cond.message else ""))
        drift = self.condition("DriftDetected")
        if drift is not None and drift.status == "True":
            problems.append("DriftDetected=True" + (f" ({drift.message})" if drift.message else ""))
        return problems

    def output_for(self, run_name: str) -> str | None:
        return f"{self.output_root.rstrip('/')}/{run_name}" if self.output_root else None
