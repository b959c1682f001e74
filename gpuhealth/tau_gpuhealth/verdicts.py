"""The four verdicts a GPU can get, ranked fail-closed, and the action on-call should take."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Verdict(str, enum.Enum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNKNOWN = "unknown"
    UNHEALTHY = "unhealthy"

    @property
    def rank(self) -> int:
        # Unknown ranks above degraded: fail closed, a GPU we cannot judge is not "mostly fine".
        return _VERDICT_RANK[self]


_VERDICT_RANK = {Verdict.HEALTHY: 0, Verdict.DEGRADED: 1, Verdict.UNKNOWN: 2, Verdict.UNHEALTHY: 3}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    result = Verdict.HEALTHY
    for verdict in verdicts:
        if verdict.rank > result.rank:
            result = verdict
    return result


class Action(str, enum.Enum):
    """What on-call should do; keeps the catalog's verb so a GPU reset is not confused with a reboot."""

    NONE = "NONE"
    RESTART_APP = "RESTART_APP"
    RESET_GPU = "RESET_GPU"
    REBOOT = "REBOOT"
    CONTACT_SUPPORT = "CONTACT_SUPPORT"
    CHECK_AGENT = "CHECK_AGENT"


#: Each action in words an on-call engineer can follow (the catalog's verbs alone read as jargon).
ACTION_WORDS = {
    Action.NONE: "nothing to do now; watch it",
    Action.RESTART_APP: "restart the application; the GPU itself is fine",
    Action.RESET_GPU: "reset the GPU (nvidia-smi -r, after draining its pods) or reboot the node",
    Action.REBOOT: "drain and reboot the node: the GPU cannot be reset while it is off the bus",
    Action.CONTACT_SUPPORT: "drain the node and contact hardware support if it recurs",
    Action.CHECK_AGENT: "check that the node agent (tau-agent) runs and can reach NVML",
}


def action_in_words(action: Action) -> str:
    return ACTION_WORDS.get(action, action.value)
