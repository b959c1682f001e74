"""Taint and cordon decisions (both off by default). The agent never drains.

A node qualifies when it has an unhealthy reason that is not report-only and has stayed
unhealthy for `min_unhealthy_s`. Actions are undone when no qualifying reason is left (after the
model's own 10-minute clean period). Nodes labelled tau-tui.io/gpu-health-managed=false are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from tau_gpuhealth.names import LABEL_MANAGED
from tau_gpuhealth.report import NodeHealth
from tau_gpuhealth.verdicts import Verdict

from .config import Actions
from .kube import NodeActionRequest


@dataclass(frozen=True)
class DesiredActions:
    taint_reason: str | None
    cordon: bool

    @property
    def any(self) -> bool:
        return self.taint_reason is not None or self.cordon


class ActionPlanner:
    def __init__(self, config: Actions):
        self.config = config
        self.unhealthy_since: float | None = None
        self.applied: DesiredActions | None = None

    @property
    def enabled(self) -> bool:
        return self.config.taint.enabled or self.config.cordon.enabled

    def qualifying_reason(self, health: NodeHealth) -> str | None:
        for _gpu, reason in health.all_reasons():
            if reason.severity is Verdict.UNHEALTHY and reason.code not in self.config.report_only_reasons:
                return reason.code
        return None

    def desired(self, health: NodeHealth, now: float, labels: dict[str, str]) -> DesiredActions:
        if labels.get(LABEL_MANAGED) == "false":
            return DesiredActions(None, False)
        reason = self.qualifying_reason(health)
        if reason is None:
            self.unhealthy_since = None
            return DesiredActions(None, False)
        if self.unhealthy_since is None:
            self.unhealthy_since = now
        if now - self.unhealthy_since < self.config.min_unhealthy_s:
            # Not yet persistent: keep whatever is applied (do not flap a taint off and on).
            return self.applied or DesiredActions(None, False)
        return DesiredActions(
            reason if self.config.taint.enabled else None,
            self.config.cordon.enabled,
        )

    def request_for(self, desired: DesiredActions) -> NodeActionRequest | None:
        """The write needed to move from what is applied to `desired`, or None."""
        if not self.enabled or desired == self.applied:
            return None
        if self.applied is None and not desired.any:
            return None  # nothing applied by us and nothing wanted
        return NodeActionRequest(
            taint_reason=desired.taint_reason,
            taint_effect=self.config.taint.effect,
            manage_taint=self.config.taint.enabled,
            cordon=desired.cordon if self.config.cordon.enabled else None,
            reason=desired.taint_reason or "GPU health recovered",
            dry_run=self.config.dry_run,
        )
