"""GPU node conditions written by others than tau-agent (TauGrid's node-problem-detector and
gpu-metrics-collector, the GKE device plugin, AKS node-problem-detector), read into the same
verdicts as the agent's, so a node without tau-agent still shows real health.

The mapping is data (``data/node_conditions.yaml``, package data); this module loads it and
judges one node's conditions per source.  Fail closed: a condition that reports ``Unknown``, or
whose heartbeat is stale, never reads healthy.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from tau_gpuhealth.datafile import load_data_file
from tau_gpuhealth.verdicts import Verdict, worst

MAPPING_FILE = "data/node_conditions.yaml"


class MappedCondition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    source: str
    also: list[str] = []
    when_true: Literal["unhealthy", "degraded", "unknown"]
    category: str
    what: str


class ConditionMapping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    heartbeat_seconds: float
    stale_after_periods: float
    sources: dict[str, str]
    conditions: list[MappedCondition]

    @model_validator(mode="after")
    def _known_sources_and_unique_types(self) -> ConditionMapping:
        seen: set[str] = set()
        for cond in self.conditions:
            for source in [cond.source, *cond.also]:
                if source not in self.sources:
                    raise ValueError(f"condition {cond.type}: unknown source {source!r}")
            if cond.type in seen:
                raise ValueError(f"condition {cond.type} is mapped twice")
            seen.add(cond.type)
        return self

    def by_type(self) -> dict[str, MappedCondition]:
        return {c.type: c for c in self.conditions}


class MappingError(ValueError):
    """The condition mapping file is missing or malformed; the message names the file and key."""


def load_condition_mapping(path: str | Path | None = None) -> ConditionMapping:
    """Load the mapping (the packaged one unless a path is given)."""
    return load_data_file(path, MAPPING_FILE, ConditionMapping, MappingError, "the condition mapping")


@functools.cache
def packaged_mapping() -> ConditionMapping:
    return load_condition_mapping()


class ConditionFinding(BaseModel):
    """One mapped condition as found on the node."""

    type: str
    status: str
    verdict: Verdict
    reason: str
    message: str
    stale: bool
    what: str
    category: str
    #: lastHeartbeatTime (or lastTransitionTime when the writer sets no heartbeat).
    heartbeat: datetime | None = None


class SourceHealth(BaseModel):
    """One writer's verdict for a node (tau-agent's, or a third party's from its conditions)."""

    source: str  # tau-agent, taugrid-npd, taugrid-collector, gke-device-plugin, aks-npd
    label: str
    verdict: Verdict
    reason: str
    message: str
    stale: bool
    findings: list[ConditionFinding] = []
    #: The newest heartbeat of its conditions: when this writer last vouched for the node.
    last_heartbeat: datetime | None = None


def parse_time(value: Any) -> datetime | None:
    """A condition's or report's time; one without a zone is UTC (as the API server writes them),
    so it compares with the clock's aware time."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


#: A deadline is kept this much early: a timedelta rounds seconds to the microsecond, and a verdict
#: kept a microsecond past its heartbeat's deadline would read fresh where a fresh judgement is stale.
DEADLINE_MARGIN = timedelta(microseconds=1)


def fresh_until(heartbeat: datetime, stale_after_s: float) -> datetime | None:
    """The last moment a heartbeat is surely fresh (it is stale once the clock is past heartbeat +
    stale_after_s), or None when that moment lies beyond any date (a heartbeat in the year 9999, an
    infinite period): it never goes stale."""
    try:
        return heartbeat + timedelta(seconds=stale_after_s) - DEADLINE_MARGIN
    except (OverflowError, ValueError):
        return None


def _gke_xids(reason: str) -> str:
    """GKE writes the XIDs seen as a JSON map in Reason, e.g. ``{"79":true}``."""
    try:
        seen = json.loads(reason)
    except ValueError:
        return reason
    if isinstance(seen, dict):
        return "XID " + ", ".join(sorted(str(k) for k in seen))
    return reason


def _heartbeat_of(cond: dict[str, Any]) -> datetime | None:
    return parse_time(cond.get("lastHeartbeatTime")) or parse_time(cond.get("lastTransitionTime"))


def _finding(mapped: MappedCondition, cond: dict[str, Any], now: datetime, stale_after_s: float) -> ConditionFinding:
    status = str(cond.get("status", "Unknown"))
    heartbeat = _heartbeat_of(cond)
    stale = heartbeat is None or (now - heartbeat).total_seconds() > stale_after_s
    if status == "True":
        verdict = Verdict(mapped.when_true)
    elif status == "False":
        verdict = Verdict.HEALTHY
    else:
        verdict = Verdict.UNKNOWN
    if stale:
        verdict = worst([verdict, Verdict.UNKNOWN])
    reason = str(cond.get("reason") or "")
    if mapped.source == "gke-device-plugin":
        reason = _gke_xids(reason)
    return ConditionFinding(type=mapped.type, status=status, verdict=verdict, reason=reason,
                            message=str(cond.get("message") or ""), stale=stale, what=mapped.what,
                            category=mapped.category, heartbeat=heartbeat)


def third_party_health(node: dict[str, Any], now: datetime, mapping: ConditionMapping | None = None) -> list[SourceHealth]:
    """A verdict per source that wrote any mapped condition on this node; empty when none did."""
    mapping = mapping or packaged_mapping()
    mapped = mapping.by_type()
    stale_after_s = mapping.stale_after_periods * mapping.heartbeat_seconds
    per_source: dict[str, list[ConditionFinding]] = {}
    for cond in (node.get("status") or {}).get("conditions") or []:
        entry = mapped.get(str(cond.get("type")))
        if entry is not None:
            per_source.setdefault(entry.source, []).append(_finding(entry, cond, now, stale_after_s))
    out = []
    for source, findings in per_source.items():
        verdict = worst(f.verdict for f in findings)
        problems = [f for f in findings if f.verdict is verdict] if verdict is not Verdict.HEALTHY else []
        if problems:
            first = problems[0]
            why = "stale heartbeat" if first.stale and first.status != "True" else (
                "status Unknown" if first.status not in ("True", "False") else first.what)
            detail = first.message or first.reason
            reason = ", ".join(f.type for f in problems)
            message = f"{first.type}: {why}" + (f" ({detail})" if detail and detail != why else "")
        else:
            reason, message = "NoProblem", f"{len(findings)} condition(s) report no problem"
        out.append(SourceHealth(source=source, label=mapping.sources[source], verdict=verdict, reason=reason,
                                message=message, stale=all(f.stale for f in findings), findings=findings,
                                last_heartbeat=max((f.heartbeat for f in findings if f.heartbeat), default=None)))
    return sorted(out, key=lambda s: (-s.verdict.rank, s.source))


def stale_deadlines(node: dict[str, Any], mapping: ConditionMapping | None = None) -> list[datetime]:
    """The last fresh moment of each mapped condition's heartbeat (:func:`fresh_until`; past one,
    :func:`third_party_health` judges it stale): until the earliest to come, its verdicts hold."""
    mapping = mapping or packaged_mapping()
    mapped = mapping.by_type()
    stale_after_s = mapping.stale_after_periods * mapping.heartbeat_seconds
    heartbeats = (_heartbeat_of(cond) for cond in (node.get("status") or {}).get("conditions") or []
                  if str(cond.get("type")) in mapped)
    deadlines = (fresh_until(heartbeat, stale_after_s) for heartbeat in heartbeats if heartbeat is not None)
    return [deadline for deadline in deadlines if deadline is not None]
