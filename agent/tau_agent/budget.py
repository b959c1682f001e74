"""Kubernetes write budget: when the agent may write, and which Events go out.

Conditions and the health object are written together as one report:
  - debounced: a change waits `debounce_s` from when it was first seen (bursts coalesce);
  - at most one report every `min_write_interval_s`, at most `max_change_writes_per_hour` for changes;
  - a heartbeat report every `heartbeat_s` +- jitter, skipped while change reports keep it fresh;
  - a random startup delay before the first report.
A change is never dropped: the desired state is level-triggered, so a deferred change is carried
by the next allowed report (at the latest the heartbeat).

Events: one per node and reason, named ``<node>.gpuhealth.<reason in lower case>`` (the admission
policy allows no other name, and only the reasons in :data:`EVENT_REASON_PATTERN`), so the agent
keeps at most that many Events about its Node; repeats bump the count.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from .config import Budget


class ReportScheduler:
    def __init__(self, budget: Budget, rng: random.Random, start: float):
        self.budget = budget
        self.rng = rng
        self.not_before = start + rng.uniform(0, budget.startup_delay_max_s)
        self.written_fingerprint: str | None = None
        self.change_seen_at: float | None = None
        self.last_write: float | None = None
        self.next_heartbeat: float | None = None
        self.change_writes: deque[float] = deque()
        self.retry_at: float | None = None
        self._retry_delay = budget.retry_initial_s
        self.deferred = 0

    def _heartbeat_period(self) -> float:
        jitter = self.budget.heartbeat_jitter
        return self.budget.heartbeat_s * self.rng.uniform(1 - jitter, 1 + jitter)

    def _prune(self, now: float) -> None:
        while self.change_writes and now - self.change_writes[0] >= 3600:
            self.change_writes.popleft()

    def decide(self, now: float, fingerprint: str) -> str | None:
        """Return 'initial', 'change' or 'heartbeat' when a report should be written now."""
        if now < self.not_before or (self.retry_at is not None and now < self.retry_at):
            return None
        if self.last_write is None:
            return "initial"
        self._prune(now)
        spaced = now - self.last_write >= self.budget.min_write_interval_s
        if fingerprint != self.written_fingerprint:
            if self.change_seen_at is None:
                self.change_seen_at = now
            debounced = now - self.change_seen_at >= self.budget.debounce_s
            if debounced and spaced and len(self.change_writes) < self.budget.max_change_writes_per_hour:
                return "change"
            self.deferred += 1
        else:
            self.change_seen_at = None
        if self.next_heartbeat is not None and now >= self.next_heartbeat and spaced:
            return "heartbeat"
        return None

    def written(self, now: float, fingerprint: str, kind: str) -> None:
        if kind in ("initial", "change"):
            self.change_writes.append(now)
        self.last_write = now
        self.written_fingerprint = fingerprint
        self.change_seen_at = None
        self.next_heartbeat = now + self._heartbeat_period()
        self.retry_at = None
        self._retry_delay = self.budget.retry_initial_s

    def failed(self, now: float) -> None:
        delay = self._retry_delay * self.rng.uniform(0.5, 1.5)
        self.retry_at = now + delay
        self._retry_delay = min(self._retry_delay * 2, self.budget.retry_max_s)

    def next_due(self, now: float) -> float:
        """Earliest time a decision could change without a new state (for the loop's sleep)."""
        candidates = [self.not_before]
        if self.retry_at is not None:
            candidates.append(self.retry_at)
        if self.next_heartbeat is not None:
            candidates.append(self.next_heartbeat)
        if self.change_seen_at is not None:
            candidates.append(self.change_seen_at + self.budget.debounce_s)
            if self.last_write is not None:
                candidates.append(self.last_write + self.budget.min_write_interval_s)
            if len(self.change_writes) >= self.budget.max_change_writes_per_hour:
                candidates.append(self.change_writes[0] + 3600)
        future = [c for c in candidates if c > now]
        return min(future) if future else now + 1.0


#: The reasons an Event of the agent may have (manifests/agent/admission-policy.yaml says the same):
#: the verdict transitions, a recovery, and one per XID (1-999; any other XID is GpuXidOther).
EVENT_REASON_PATTERN = "^(GPUHealthy|GPUDegraded|GPUUnhealthy|GPUHealthUnknown|GPUHealthRecovered|GpuXidOther|GpuXid[1-9][0-9]{0,2})$"
XID_REASON_MAX = 999


def xid_reason(xid: int) -> str:
    return f"GpuXid{xid}" if 1 <= xid <= XID_REASON_MAX else "GpuXidOther"


def event_name(node_name: str, reason: str) -> str:
    """The one Event the agent keeps about its Node for ``reason``."""
    return f"{node_name}.gpuhealth.{reason.lower()}"


@dataclass
class EventRecord:
    name: str
    key: str  # the reason
    reason: str
    type: str  # Normal | Warning
    message: str
    count: int
    first_time: float
    last_time: float
    added: int = 1  # occurrences this write adds to the count


@dataclass
class _EventKeyState:
    name: str
    key: str
    count: int = 0  # occurrences already written
    pending: int = 0  # occurrences not yet written
    last_emit: float | None = None
    first_time: float = 0.0
    last_seen: float = 0.0
    reason: str = ""
    type: str = "Normal"
    message: str = ""
    #: The GPUs whose occurrences are pending (the message names the latest and counts the others).
    gpus: set[str] | None = None


class EventLimiter:
    """At most one write per reason per dedup window, to the node's one Event of that reason; repeats
    (of any GPU) bump the count, never lost.

    A node-wide token bucket (burst, then max per hour) and a sliding hour window cap the rest;
    anything over budget waits, coalesced per key, until a token is free.
    """

    def __init__(self, budget: Budget, node_name: str, start: float):
        self.budget = budget
        self.node_name = node_name
        self._keys: dict[str, _EventKeyState] = {}
        self._tokens = float(budget.event_burst)
        self._refilled_at = start
        self._window: deque[float] = deque()
        self.suppressed = 0

    def offer(self, gpu_key: str, reason: str, event_type: str, message: str, now: float) -> None:
        key = reason
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _EventKeyState(name=event_name(self.node_name, reason), key=key, first_time=now)
        state.gpus = (state.gpus if state.pending and state.gpus else set()) | {gpu_key}
        state.pending += 1
        state.last_seen = now
        state.reason, state.type, state.message = reason, event_type, message
        if state.last_emit is not None and now - state.last_emit < self.budget.event_dedup_s:
            self.suppressed += 1

    def _refill(self, now: float) -> None:
        rate = self.budget.max_events_per_hour / 3600.0
        self._tokens = min(float(self.budget.event_burst), self._tokens + (now - self._refilled_at) * rate)
        self._refilled_at = now
        while self._window and now - self._window[0] >= 3600:
            self._window.popleft()

    def due(self, now: float) -> list[EventRecord]:
        self._refill(now)
        ready = [
            s
            for s in self._keys.values()
            if s.pending and (s.last_emit is None or now - s.last_emit >= self.budget.event_dedup_s)
        ]
        ready.sort(key=lambda s: s.last_seen)
        out = []
        for state in ready:
            if self._tokens < 1 or len(self._window) >= self.budget.max_events_per_hour:
                break
            self._tokens -= 1
            self._window.append(now)
            added = state.pending
            state.count += added
            state.pending = 0
            state.last_emit = now
            others = len(state.gpus or ()) - 1
            message = state.message + (f" (and {others} more GPU(s) with {state.reason} since the last event)"
                                       if others > 0 else "")
            out.append(
                EventRecord(
                    name=state.name,
                    key=state.key,
                    reason=state.reason,
                    type=state.type,
                    message=message,
                    count=state.count,
                    first_time=state.first_time,
                    last_time=state.last_seen,
                    added=added,
                )
            )
        return out

    def restore_count(self, record: EventRecord) -> None:
        """A failed write: put its occurrences back so the next attempt carries them."""
        state = self._keys.get(record.key)
        if state is not None:
            state.pending += record.added
            state.count -= record.added
            state.last_emit = None

    def pending(self) -> int:
        return sum(s.pending for s in self._keys.values())

    def forget_older_than(self, now: float, age: float = 7200) -> None:
        """Keep memory bounded: drop keys with nothing pending and no activity for `age` seconds."""
        for key in [k for k, s in self._keys.items() if not s.pending and now - s.last_seen > age]:
            del self._keys[key]
