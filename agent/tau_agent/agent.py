"""The agent loop: poll NVML, evaluate health, report within the write budget, act if enabled.

Everything with side effects is injected (collector, Kubernetes writer, XID source, clock and
random source), so the loop runs in tests with a fake NVML, a fake clock and a recording writer.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC
from typing import Any, Protocol

from tau_gpuhealth.conditions import node_conditions, transitions
from tau_gpuhealth.model import HealthModel
from tau_gpuhealth.names import CONDITION_DEGRADED, CONDITION_UNHEALTHY, LABEL_EXPECTED_GPU_COUNT
from tau_gpuhealth.report import LatchRecord, NodeHealth
from tau_gpuhealth.samples import NodeSample, XidObservation
from tau_gpuhealth.verdicts import Verdict
from tau_gpuhealth.xid import XidSeverity, load_xid_catalog

from . import __version__
from .actions import ActionPlanner
from .budget import EventLimiter, ReportScheduler, xid_reason
from .collector import Collector
from .config import AgentConfig
from .kube import KubeWriter, OwnNodeState, rfc3339
from .metrics import AgentMetrics

log = logging.getLogger(__name__)

_EVENT_TYPE = {
    Verdict.HEALTHY: "Normal",
    Verdict.DEGRADED: "Warning",
    Verdict.UNKNOWN: "Warning",
    Verdict.UNHEALTHY: "Warning",
}


class XidSource(Protocol):
    def drain(self) -> list[XidObservation]: ...

    def stale_for(self) -> float: ...


class Agent:
    def __init__(
        self,
        config: AgentConfig,
        collector: Collector,
        writer: KubeWriter | None,
        *,
        node_name: str,
        xids: XidSource | None = None,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        metrics: AgentMetrics | None = None,
    ):
        self.config = config
        self.collector = collector
        self.writer = writer
        self.node_name = node_name
        self.xids = xids
        self.clock = clock
        self.rng = rng or random.Random()
        self.metrics = metrics or AgentMetrics()
        catalog = load_xid_catalog(config.xid_catalog_path)
        self.model = HealthModel(config.thresholds, catalog)
        start = clock()
        self.scheduler = ReportScheduler(config.budget, self.rng, start)
        self.events = EventLimiter(config.budget, node_name, start)
        self.planner = ActionPlanner(config.actions)
        self.health: NodeHealth | None = None
        self.own = OwnNodeState()
        self.own_state_read = False
        self.expected_count: int | None = config.expected_gpu_count
        self.collector.expected_count = lambda: self.expected_count
        self._transition_times: dict[str, tuple[str, float]] = {}
        #: Transitions stamped by the write in flight, kept once it succeeds.
        self._pending_transitions: dict[str, tuple[str, float]] = {}
        self.next_poll = start
        self.next_counters = start
        self.next_config = start
        self.last_tick: float | None = None
        self.last_report: float | None = None
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._events_retry_at = 0.0
        self._pending_xids: list[XidObservation] = []
        self._last_poll: float | None = None
        self._events_retry_delay = config.budget.retry_initial_s

    # -- start-up --

    def start(self) -> None:
        """Read our own Node and health object once, so latches and transition times survive restarts."""
        if self.writer is None:
            return
        try:
            self.own = self.writer.read_own_state()
            self.own_state_read = True
        except Exception as exc:
            log.warning("could not read own node %s at start: %s", self.node_name, exc)
            return
        if self.expected_count is None:
            label = self.own.labels.get(LABEL_EXPECTED_GPU_COUNT)
            if label and label.isdigit():
                self.expected_count = int(label)
        for cond in self.own.conditions:
            if cond.get("type") in (CONDITION_UNHEALTHY, CONDITION_DEGRADED) and cond.get("lastTransitionTime"):
                from datetime import datetime

                when = datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00")).timestamp()
                self._transition_times[cond["type"]] = (str(cond.get("status")), when)
        latches = (self.own.health_status or {}).get("latches") or []
        records = []
        for item in latches:
            try:
                records.append(LatchRecord.model_validate(item))
            except Exception:
                log.warning("ignoring unreadable latch record in the health object: %r", item)
        if records:
            boot_id = self.collector.boot_id()
            restored = self.model.restore_latches(records, boot_id, None)
            log.info("restored %d of %d latched GPU states", restored, len(records))

    # -- one iteration --

    def tick(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        with self._lock:
            self._tick(now)

    def _tick(self, now: float) -> None:
        self.last_tick = now
        if self.xids is not None:
            self._pending_xids.extend(self.xids.drain())
        # An XID triggers an early poll (at most one a second, so an XID storm cannot spin NVML).
        early = bool(self._pending_xids) and (self._last_poll is None or now - self._last_poll >= 1.0)
        if early or now >= self.next_poll:
            xids, self._pending_xids = self._pending_xids, []
            self._last_poll = now
            self._poll(now, xids)
        if self.health is None:
            return
        self._report(now)
        self._flush_events(now)
        self._act(now)

    def _poll(self, now: float, xids: list[XidObservation]) -> None:
        iv = self.config.intervals
        counters = now >= self.next_counters
        refresh = now >= self.next_config
        started = time.perf_counter()
        sample = self.collector.collect(now, counters=counters, refresh_config=refresh)
        self.metrics.poll_seconds.set(time.perf_counter() - started)
        self.metrics.polls.inc()
        self.next_poll = now + iv.fast_poll_s
        if counters:
            self.next_counters = now + iv.slow_poll_s
        if refresh:
            self.next_config = now + iv.config_poll_s
        self._check_xid_watcher(sample)
        self.metrics.hung_calls.set(len(self.collector.guard.stuck_calls()))

        for obs in xids:
            entry = self.model.record_xid(obs)
            gpu = f"gpu{obs.gpu_index}" if obs.gpu_index is not None else "gpu?"
            self.metrics.xids.labels(gpu, str(obs.xid), entry.severity.value).inc()
            where = f"{gpu} {obs.gpu_uuid}" if obs.gpu_uuid else gpu
            self.events.offer(
                obs.key,
                xid_reason(obs.xid),
                "Normal" if entry.severity is XidSeverity.EVENT else "Warning",
                f"{where}: XID {obs.xid} {entry.mnemonic}; severity {entry.severity.value}, "
                f"action {entry.action.value} (catalog {self.model.catalog.version})",
                obs.time,
            )

        previous = self.health
        health = self.model.evaluate(sample, node_name=self.node_name)
        health.heartbeat_period_s = self.config.budget.heartbeat_s
        health.agent_version = __version__
        self.health = health
        self.metrics.observe(health)
        for change in transitions(previous, health):
            self.events.offer(change.gpu_key, change.reason, _EVENT_TYPE[change.after], change.message, now)
        for recovery in self.model.recoveries:
            self.events.offer(
                recovery.gpu_key,
                "GPUHealthRecovered",
                "Normal",
                f"gpu{recovery.gpu_index if recovery.gpu_index is not None else '?'} {recovery.gpu_key}: "
                f"{recovery.code} cleared by recovery evidence: {recovery.evidence}",
                now,
            )

    def _check_xid_watcher(self, sample: NodeSample) -> None:
        if self.xids is None or not sample.nvml_available or sample.hung_call:
            return
        iv = self.config.intervals
        if self.xids.stale_for() > iv.xid_wait_ms / 1000.0 + 3 * iv.call_timeout_s:
            sample.hung_call = "nvmlEventSetWait"

    # -- reporting --

    def conditions(self, now: float) -> list[dict[str, Any]]:
        """The conditions to write now: a status that changed since the last write that succeeded is
        stamped with this write's time (the admission policy accepts a lastTransitionTime only
        within a minute of the request: a write retried later must not carry an older time)."""
        assert self.health is not None
        result = []
        self._pending_transitions = {}
        for cond in node_conditions(self.health):
            known = self._transition_times.get(cond.type)
            if known is None or known[0] != cond.status:
                known = (cond.status, now)
                self._pending_transitions[cond.type] = known
            result.append(
                {
                    "type": cond.type,
                    "status": cond.status,
                    "reason": cond.reason,
                    "message": cond.message,
                    "lastHeartbeatTime": rfc3339(now),
                    "lastTransitionTime": rfc3339(known[1]),
                }
            )
        return result

    def health_status(self, now: float) -> dict[str, Any]:
        assert self.health is not None
        from datetime import datetime

        self.health.reported_at = datetime.fromtimestamp(now, tz=UTC)
        return self.health.model_dump(by_alias=True, mode="json", exclude_none=True)

    def _report(self, now: float) -> None:
        assert self.health is not None
        fingerprint = self.health.fingerprint()
        kind = self.scheduler.decide(now, fingerprint)
        self.metrics.deferred.set(1 if fingerprint != self.scheduler.written_fingerprint else 0)
        if kind is None or self.writer is None:
            return
        if not self.own_state_read:
            self.start()
        try:
            self.writer.write_conditions(self.conditions(now))
            self._transition_times.update(self._pending_transitions)  # written: these times are the node's now
            self.metrics.writes.labels("conditions", "ok").inc()
            self.writer.write_health_object(self.health_status(now))
            self.metrics.writes.labels("health_object", "ok").inc()
        except Exception as exc:
            self.metrics.writes.labels("report", "error").inc()
            log.warning("report write failed (%s); will retry with backoff: %s", kind, exc)
            self.scheduler.failed(now)
            return
        self.scheduler.written(now, fingerprint, kind)
        self.last_report = now

    def _flush_events(self, now: float) -> None:
        if self.writer is None or now < self._events_retry_at:
            return
        for record in self.events.due(now):
            try:
                self.writer.write_event(record)
                self.metrics.writes.labels("event", "ok").inc()
                self._events_retry_delay = self.config.budget.retry_initial_s
            except Exception as exc:
                status = getattr(exc, "status", None)
                if isinstance(status, int) and 400 <= status < 500 and status not in (409, 429):
                    # Refused for good (invalid, forbidden): retrying would only add API load.
                    self.metrics.writes.labels("event", "rejected").inc()
                    log.error("event %s rejected by the API server (HTTP %s), dropped: %s", record.reason, status, exc)
                    continue
                self.metrics.writes.labels("event", "error").inc()
                log.warning("event write failed, kept for retry: %s", exc)
                self.events.restore_count(record)
                self._events_retry_at = now + self._events_retry_delay * self.rng.uniform(0.5, 1.5)
                self._events_retry_delay = min(self._events_retry_delay * 2, self.config.budget.retry_max_s)
                break
        self.events.forget_older_than(now)
        self.metrics.events_pending.set(self.events.pending())

    def _act(self, now: float) -> None:
        assert self.health is not None
        if self.writer is None or not self.planner.enabled:
            return
        desired = self.planner.desired(self.health, now, self.own.labels)
        request = self.planner.request_for(desired)
        if request is None:
            return
        try:
            self.writer.apply_node_actions(request, now)
            self.metrics.writes.labels("node_actions", "ok").inc()
            self.planner.applied = desired
        except Exception as exc:
            self.metrics.writes.labels("node_actions", "error").inc()
            log.warning("taint/cordon update failed: %s", exc)

    # -- the real loop --

    def next_wakeup(self, now: float) -> float:
        candidates = [self.next_poll, self.scheduler.next_due(now)]
        if self._pending_xids:
            candidates.append(now + 1.0)
        if self.events.pending():
            candidates.append(now + 5.0)
        return max(now + 0.05, min(candidates))

    def run(self, stop: threading.Event) -> None:
        self.start()
        while not stop.is_set():
            now = self.clock()
            try:
                self.tick(now)
            except Exception:
                log.exception("agent tick failed; continuing")
            delay = self.next_wakeup(self.clock()) - self.clock()
            self.wake.wait(max(0.0, min(delay, 30.0)))
            self.wake.clear()

    def status(self) -> dict[str, Any]:
        with self._lock:
            health = self.health.model_dump(by_alias=True, mode="json") if self.health else None
            return {
                "node": self.node_name,
                "agentVersion": __version__,
                "health": health,
                "conditions": [c.model_dump() for c in node_conditions(self.health)] if self.health else [],
                "lastTick": rfc3339(self.last_tick) if self.last_tick else None,
                "lastReport": rfc3339(self.last_report) if self.last_report else None,
                "budget": {
                    "changeWritesLastHour": len(self.scheduler.change_writes),
                    "deferredDecisions": self.scheduler.deferred,
                    "eventsPending": self.events.pending(),
                    "eventsSuppressedByDedup": self.events.suppressed,
                },
                "stuckNvmlCalls": self.collector.guard.stuck_calls(),
                "xidWatcherIdleSeconds": round(self.xids.stale_for(), 1) if self.xids else None,
                "xidWatcherError": getattr(self.xids, "last_error", None),
                "xidEventsUnsupportedGpus": getattr(self.xids, "unsupported_gpus", []),
            }
