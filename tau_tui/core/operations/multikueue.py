"""Live ``MultiKueueReady`` evaluation (taugrid.md §4.1, seed 000_362d573c40e0bbf8).

The TauCluster controller reports ``status.conditions[MultiKueueReady]``; this
module recomputes the same rule from what the manager can see right now, so
the MultiKueue pane can show both side by side and flag a disagreement:

1. keep AdmissionChecks whose ``spec.controllerName`` is exactly
   ``kueue.x-k8s.io/multikueue`` (the name is ignored); none → False;
2. each must be ``Active=True``, have ``spec.parameters`` =
   ``{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: X}``, X must be
   readable and list ``spec.clusters``, and at least one referenced
   MultiKueueCluster must be ``Active=True``;
3. the first check that passes gives True, reason ``Ready``;
4. otherwise False, reason ``PrerequisitesNotReady``, with the sorted issues.

Pure: views in, result out.  No I/O, no Textual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tau_tui.core.apifields import Condition
from tau_tui.core.cluster.names import MULTIKUEUE_CONTROLLER_NAME
from tau_tui.core.cluster.view_types import (
    AdmissionCheckView,
    MultiKueueClusterView,
    MultiKueueConfigView,
    TauClusterView,
)

CONDITION_TYPE = "MultiKueueReady"
REASON_READY = "Ready"
REASON_NOT_READY = "PrerequisitesNotReady"
NO_CHECK_MESSAGE = f"no AdmissionCheck uses controller {MULTIKUEUE_CONTROLLER_NAME}"
PARAMETER_GROUP = "kueue.x-k8s.io"
PARAMETER_KIND = "MultiKueueConfig"


@dataclass(frozen=True)
class ReadinessResult:
    status: str  # "True" | "False"
    reason: str
    message: str
    issues: tuple[str, ...] = ()
    #: The AdmissionCheck that satisfied the rule (when status is True).
    check: str | None = None

    @property
    def ready(self) -> bool:
        return self.status == "True"


@dataclass(frozen=True)
class Comparison:
    """The live evaluation next to what the TauCluster condition claims."""

    live: ReadinessResult
    claimed: Condition | None
    claimed_current: bool  # observedGeneration matches the TauCluster generation

    @property
    def agrees(self) -> bool:
        return self.claimed is not None and self.claimed.status == self.live.status

    @property
    def summary(self) -> str:
        if self.claimed is None:
            return "TauCluster reports no MultiKueueReady condition"
        if not self.claimed_current:
            return f"TauCluster condition is stale (observedGeneration {self.claimed.observed_generation})"
        if self.agrees:
            return "TauCluster condition agrees with the live evaluation"
        return f"TauCluster says {self.claimed.status} but the live evaluation says {self.live.status}"


def _active(condition: Condition | None) -> tuple[bool, str]:
    if condition is None:
        return False, "has no Active condition"
    if condition.is_true:
        return True, ""
    why = ": ".join(part for part in (condition.reason, condition.message) if part)
    return False, f"Active={condition.status}" + (f" ({why})" if why else "")


def evaluate_multikueue_ready(
    admission_checks: Sequence[AdmissionCheckView],
    configs: Sequence[MultiKueueConfigView] | None,
    clusters: Sequence[MultiKueueClusterView] | None,
) -> ReadinessResult:
    """Apply the rule.  ``configs``/``clusters`` = None means "not readable":
    every check then fails (fail closed)."""
    checks = sorted((c for c in admission_checks if c.controller_name == MULTIKUEUE_CONTROLLER_NAME), key=lambda c: c.name)
    if not checks:
        return ReadinessResult("False", REASON_NOT_READY, NO_CHECK_MESSAGE, (NO_CHECK_MESSAGE,))
    config_by_name = {c.name: c for c in configs or ()}
    cluster_by_name = {c.name: c for c in clusters or ()}
    issues: list[str] = []
    for check in checks:
        active, why = _active(check.condition("Active"))
        if not active:
            issues.append(f"AdmissionCheck \"{check.name}\" {why}")
            continue
        params = dict(check.parameters or {})
        if params.get("apiGroup") != PARAMETER_GROUP or params.get("kind") != PARAMETER_KIND or not params.get("name"):
            issues.append(
                f"AdmissionCheck \"{check.name}\" parameters must reference {PARAMETER_GROUP} {PARAMETER_KIND} by name "
                f"(got {params or 'none'})"
            )
            continue
        config_name = params["name"]
        if configs is None:
            issues.append(f"MultiKueueConfig \"{config_name}\" cannot be read")
            continue
        config = config_by_name.get(config_name)
        if config is None:
            issues.append(f"AdmissionCheck \"{check.name}\" references MultiKueueConfig \"{config_name}\", which does not exist")
            continue
        if not config.clusters:
            issues.append(f"MultiKueueConfig \"{config_name}\" lists no clusters")
            continue
        cluster_issues: list[str] = []
        ok = False
        for name in config.clusters:
            cluster = cluster_by_name.get(name) if clusters is not None else None
            if cluster is None:
                cluster_issues.append(f"MultiKueueCluster \"{name}\" " + ("cannot be read" if clusters is None else "does not exist"))
                continue
            active, why = _active(cluster.condition("Active"))
            if active:
                ok = True
                break
            cluster_issues.append(f"MultiKueueCluster \"{name}\" {why}")
        if ok:
            return ReadinessResult(
                "True", REASON_READY, f"AdmissionCheck \"{check.name}\" has an active MultiKueue config and worker", (), check.name
            )
        issues.append(f"MultiKueueConfig \"{config_name}\" has no active worker: " + "; ".join(cluster_issues))
    issues.sort()
    return ReadinessResult("False", REASON_NOT_READY, "; ".join(issues), tuple(issues))


def compare_with_tau_cluster(live: ReadinessResult, tau_cluster: TauClusterView | None) -> Comparison:
    claimed = tau_cluster.condition(CONDITION_TYPE) if tau_cluster is not None else None
    current = (
        claimed is not None
        and tau_cluster is not None
        and (claimed.observed_generation is None or claimed.observed_generation == tau_cluster.generation)
    )
    return Comparison(live, claimed, current)
