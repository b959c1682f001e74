"""The Kubernetes write budget over a simulated hour (injected clock; writes are counted)."""

from __future__ import annotations

import random
import re

from tau_agent.budget import EVENT_REASON_PATTERN, EventLimiter, ReportScheduler, event_name, xid_reason
from tau_agent.config import Budget

from .fake_nvml import h100_node
from .sim import START, SimNode, fast_config


def max_in_window(times: list[float], window: float = 3600) -> int:
    best = 0
    for i, start in enumerate(times):
        best = max(best, sum(1 for t in times[i:] if t < start + window))
    return best


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_one_hour_of_state_flips_stays_within_budget_and_delivers_the_last_state():
    config = fast_config(thresholds={"raise_after_polls": 1, "clear_after_s": 0}, budget={"startup_delay_max_s": 30})
    node = SimNode(h100_node(8), config=config, labels={"nvidia.com/gpu.count": "8"})
    # Why each report was written ('initial', 'change' or 'heartbeat'), as the scheduler decided it.
    report_kinds: list[tuple[float, str]] = []
    scheduler_written = node.agent.scheduler.written

    def record_kind(now: float, fingerprint: str, kind: str) -> None:
        report_kinds.append((now, kind))
        scheduler_written(now, fingerprint, kind)

    node.agent.scheduler.written = record_kind
    rng = random.Random(42)
    flips = 0
    boot = 1
    while node.clock.now < START + 3600:
        gpu = node.nvml.gpus[rng.randrange(8)]
        gpu.clock_reasons = 0x1 if gpu.clock_reasons == 0x40 else 0x40  # degraded <-> healthy
        flips += 1
        if rng.random() < 0.3:
            node.nvml.emit_xid(rng.randrange(8), rng.choice([13, 31, 43, 79, 48, 94, 999]))
        if rng.random() < 0.05:
            boot += 1
            node.boot_id = f"boot-{boot}"  # reboot: clears latched XIDs -> more transitions
        node.step(5)
    assert flips >= 700

    # Settle on a final state and give the budget time to deliver it.
    for gpu in node.nvml.gpus:
        gpu.clock_reasons = 0x1
    node.nvml.gpus[6].clock_reasons = 0x40
    node.run_for(400, step=5)

    cond_times = node.writer.times("conditions")
    health_times = node.writer.times("health")
    event_times = node.writer.times("event")
    hour_conditions = [t for t in cond_times if t < START + 3600]

    # First write only after the random startup delay (0-30 s), never before.
    assert START <= cond_times[0] <= START + 30 + 5
    # At most one write every 30 s, for each object.
    assert min(gaps(cond_times)) >= 30
    assert min(gaps(health_times)) >= 30
    assert cond_times == health_times
    # Every report the writer saw is one the scheduler decided (no write outside the budget).
    assert [t for t, _ in report_kinds] == cond_times
    change_times = [t for t, kind in report_kinds if kind in ("initial", "change")]
    heartbeat_times = [t for t, kind in report_kinds if kind == "heartbeat"]
    # At most 20 change-driven writes in any hour: the storm hits the cap exactly.
    assert max_in_window(change_times) == 20
    # Heartbeats only after 5 min +-10 % without any write (a change write resets the period).
    for t in heartbeat_times:
        previous = max(w for w in cond_times if w < t)
        assert t - previous >= 270 - 5
    # In total: 20 change writes plus heartbeats (at most one per 4.5 min: 14) in any hour.
    assert max_in_window(cond_times) <= 20 + 14
    assert 20 <= len(hour_conditions) <= 34
    # Events: at most 30 an hour, one per (GPU, reason) per 10 minutes.
    assert max_in_window(event_times) <= 30
    by_name: dict[str, list[float]] = {}
    for kind, t, event in node.writer.writes:
        if kind == "event":
            by_name.setdefault(event.name, []).append(t)
    for times in by_name.values():
        assert all(g >= 600 for g in gaps(times))
    assert node.agent.events.suppressed > 0  # the storm was coalesced, not written

    # Nothing dropped: the last written state is the final desired state.
    assert node.agent.scheduler.written_fingerprint == node.health.fingerprint()
    assert node.writer.condition("GPUDegraded")["status"] == "True"
    assert "gpu6" in node.writer.condition("GPUDegraded")["message"]
    assert node.writer.health_status["verdict"] == node.health.verdict.value

    print(
        f"\nsimulated hour: {flips} flips, {len(hour_conditions)} condition writes "
        f"({sum(1 for t in change_times if t < START + 3600)} change, "
        f"{sum(1 for t in heartbeat_times if t < START + 3600)} heartbeat), "
        f"{len(health_times)} health-object writes total, {len(event_times)} events, "
        f"{node.agent.events.suppressed} event occurrences coalesced"
    )


def test_steady_state_is_heartbeats_only():
    node = SimNode(h100_node(8), config=fast_config(budget={"startup_delay_max_s": 30}))
    node.run_for(2 * 3600, step=5)
    times = node.writer.times("conditions")
    assert 23 <= len(times) <= 27  # initial + one every 5 min +-10% over two hours
    heartbeat_gaps = gaps(times)
    assert all(270 - 5 <= g <= 330 + 5 for g in heartbeat_gaps)
    assert len(set(round(g) for g in heartbeat_gaps)) > 3  # jittered, not lock-step
    assert node.writer.times("event") == []


def test_startup_delay_spreads_a_rollout():
    firsts = []
    for seed in range(20):
        node = SimNode(h100_node(1), config=fast_config(budget={"startup_delay_max_s": 30}), seed=seed)
        node.run_for(40, step=1)
        firsts.append(node.writer.times("conditions")[0] - START)
    assert all(0 <= f <= 31 for f in firsts)
    assert max(firsts) - min(firsts) > 10


def test_failed_writes_retry_with_backoff_and_keep_the_state():
    node = SimNode(h100_node(1))
    node.writer.fail_next = 4
    node.run_for(60, step=1)
    times = node.writer.times("conditions")
    assert len(times) == 1  # retried until it went through, once
    assert node.writer.condition("GPUUnhealthy")["status"] == "False"


def test_scheduler_coalesces_bursts_and_caps_change_writes():
    budget = Budget(startup_delay_max_s=0)
    sched = ReportScheduler(budget, random.Random(1), start=0)
    writes = []
    now = 0.0
    state = 0
    while now < 3600:
        state += 1  # a new state every second
        kind = sched.decide(now, f"s{state}")
        if kind:
            sched.written(now, f"s{state}", kind)
            writes.append((now, kind))
        now += 1
    change = [t for t, k in writes if k in ("initial", "change")]
    assert len(change) == 20
    assert all(k in ("initial", "change", "heartbeat") for _, k in writes)
    assert min(gaps([t for t, _ in writes])) >= 30


def test_event_limiter_dedups_per_gpu_and_reason_and_counts_repeats():
    budget = Budget()
    limiter = EventLimiter(budget, "n1", start=0)
    for i in range(50):
        limiter.offer("GPU-a", "GpuXid13", "Normal", "xid 13", float(i))
    first = limiter.due(50)
    assert [e.count for e in first] == [50]
    for i in range(10):
        limiter.offer("GPU-a", "GpuXid13", "Normal", "xid 13", 100.0 + i)
    assert limiter.due(200) == []  # inside the 10-minute window
    later = limiter.due(700)
    assert [e.count for e in later] == [60] and later[0].name == first[0].name


def test_event_limiter_burst_then_hourly_cap_without_losing_keys():
    budget = Budget()
    limiter = EventLimiter(budget, "n1", start=0)
    for i in range(60):
        limiter.offer("GPU-a", f"GpuXid{i + 1}", "Warning", "x", 0.0)
    assert len(limiter.due(0)) == 10  # burst
    sent = 10
    t = 0.0
    while t < 3600:
        t += 60
        sent += len(limiter.due(t))
    assert sent <= 10 + 30
    while limiter.pending() and t < 4 * 3600:
        t += 60
        limiter.due(t)
    assert limiter.pending() == 0  # every key eventually written


def test_one_event_per_node_and_reason_whatever_the_gpu():
    """The admission policy lets the agent keep one Event per node and reason: several GPUs with the
    same reason share it, the count adds up and the message names the latest and counts the others."""
    limiter = EventLimiter(Budget(), "n1", start=0)
    for gpu in ("GPU-a", "GPU-b", "GPU-c"):
        limiter.offer(gpu, "GPUUnhealthy", "Warning", f"{gpu}: healthy -> unhealthy", 0.0)
    limiter.offer("GPU-a", xid_reason(79), "Warning", "xid 79", 0.0)
    limiter.offer("GPU-a", xid_reason(4096), "Warning", "xid 4096", 0.0)
    events = {e.reason: e for e in limiter.due(0)}
    assert set(events) == {"GPUUnhealthy", "GpuXid79", "GpuXidOther"}
    unhealthy = events["GPUUnhealthy"]
    assert unhealthy.name == event_name("n1", "GPUUnhealthy") == "n1.gpuhealth.gpuunhealthy" and unhealthy.count == 3
    assert unhealthy.message == "GPU-c: healthy -> unhealthy (and 2 more GPU(s) with GPUUnhealthy since the last event)"
    assert all(re.match(EVENT_REASON_PATTERN, reason) for reason in events)
