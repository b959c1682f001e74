"""What the simulated Kueue reads from a Workload every tick, worked out once per stored version.

The store replaces an object on every write and gives it a new resourceVersion from one counter, so
a version names its content: the facts of an unchanged Workload are looked up, not re-read from its
conditions (at 20,000 Workloads the re-reading was most of a tick)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tau_tui.core.apifields import parse_time
from tau_tui.core.cluster.convert import parse_quantity


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    namespace: str
    queue_name: str
    finished: bool
    reserved: bool  # QuotaReserved=True
    admitted: bool  # Admitted=True
    pending: bool  # in a queue, active, neither reserved nor finished
    cluster_queue: str | None  # status.admission.clusterQueue while reserved
    usage: tuple[tuple[tuple[str, str], float], ...]  # ((flavor, resource), amount) while reserved
    requeue_at: datetime | None
    quota_reserved: tuple[Any, Any, Any]  # the QuotaReserved condition's (status, reason, message)


def _true(conditions: Mapping[str, Mapping[str, Any]], type_: str) -> bool:
    c = conditions.get(type_)
    return c is not None and c.get("status") == "True"


def read_facts(wl: Mapping[str, Any]) -> WorkloadFacts:
    meta = wl["metadata"]
    spec = wl.get("spec") or {}
    status = wl.get("status") or {}
    conditions = {c.get("type"): c for c in reversed(status.get("conditions") or [])}  # the first of a type wins
    finished = _true(conditions, "Finished")
    reserved = _true(conditions, "QuotaReserved")
    admission = status.get("admission")
    usage: list[tuple[tuple[str, str], float]] = []
    if admission and reserved:
        for psa in admission.get("podSetAssignments") or ():
            for res, value in (psa.get("resourceUsage") or {}).items():
                usage.append((((psa.get("flavors") or {}).get(res, ""), res), parse_quantity(value)))
    quota = conditions.get("QuotaReserved") or {}
    return WorkloadFacts(
        namespace=meta.get("namespace", ""),
        queue_name=spec.get("queueName") or "",
        finished=finished,
        reserved=reserved,
        admitted=_true(conditions, "Admitted"),
        pending=bool(spec.get("queueName")) and spec.get("active", True) is not False and not reserved and not finished,
        cluster_queue=admission.get("clusterQueue", "") if admission and reserved else None,
        usage=tuple(usage),
        requeue_at=parse_time((status.get("requeueState") or {}).get("requeueAt")),
        quota_reserved=(quota.get("status"), quota.get("reason"), quota.get("message")),
    )


class WorkloadFactsCache:
    """Facts per Workload uid, kept while its resourceVersion is the same."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[str, WorkloadFacts]] = {}

    def of(self, wl: Mapping[str, Any]) -> WorkloadFacts:
        meta = wl["metadata"]
        uid, version = meta["uid"], meta["resourceVersion"]
        hit = self._by_uid.get(uid)
        if hit is not None and hit[0] == version:
            return hit[1]
        facts = read_facts(wl)
        self._by_uid[uid] = (version, facts)
        return facts

    def keep_only(self, uids: set[str]) -> None:
        """Forget deleted Workloads (called when the cache has grown past the store)."""
        self._by_uid = {uid: hit for uid, hit in self._by_uid.items() if uid in uids}

    def __len__(self) -> int:
        return len(self._by_uid)
