"""Benchmark: CPU per agent poll cycle and resident memory with 8 fake GPUs.

Runs the production loop (real call guard threads, NVML reader, health model, metrics, report
serialisation) against the test-only fake NVML, with an injected clock so one cycle is one
15 s poll. Counter reads (ECC, remap, NVLink x18, PCIe, modes) happen every 4th cycle (60 s),
as configured in production. Prints medians over repetitions as JSON.

    .venv/bin/python benchmarks/agent_poll.py [--cycles 400] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import kubernetes.client  # noqa: E402,F401  (production imports it; count it in RSS)
from machine_info import machine  # noqa: E402
from percentiles import median  # noqa: E402
from raw_results import save_raw  # noqa: E402

from tau_agent.agent import Agent  # noqa: E402
from tau_agent.call_guard import CallGuard  # noqa: E402
from tau_agent.collector import Collector  # noqa: E402
from tau_agent.config import AgentConfig  # noqa: E402
from tau_agent.nvml_reader import NvmlReader  # noqa: E402
from tests.agent.fake_nvml import FakeNvml, h100_node  # noqa: E402


class DiscardingWriter:
    """Builds every payload like the real writer would, then drops it (no API server here)."""

    def __init__(self) -> None:
        self.writes = 0

    def read_own_state(self):
        from tau_agent.kube import OwnNodeState

        return OwnNodeState(labels={"nvidia.com/gpu.count": "8"})

    def write_conditions(self, conditions):
        json.dumps(conditions)
        self.writes += 1

    def write_health_object(self, status):
        json.dumps(status)
        self.writes += 1

    def write_event(self, event):
        self.writes += 1

    def apply_node_actions(self, request, now):
        self.writes += 1


def rss_mb() -> tuple[float, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024.0
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def run_once(cycles: int, seed: int, counters_every_cycle: bool) -> float:
    clock_now = [1_800_000_000.0]
    config = AgentConfig.model_validate(
        {
            "intervals": {"fast_poll_s": 15, "slow_poll_s": 15 if counters_every_cycle else 60},
            "budget": {"startup_delay_max_s": 0},
        }
    )
    nvml = FakeNvml(h100_node(8))
    collector = Collector(NvmlReader(nvml), CallGuard(config.intervals.call_timeout_s), boot_id=lambda: "boot")
    agent = Agent(
        config, collector, DiscardingWriter(), node_name="bench-node", clock=lambda: clock_now[0], rng=random.Random(seed)
    )
    agent.start()
    agent.tick(clock_now[0])  # warm-up: first poll initialises NVML and reads everything
    started = time.process_time()
    for _ in range(cycles):
        clock_now[0] += 15
        agent.tick(clock_now[0])
    used = time.process_time() - started
    assert agent.collector.polls == cycles + 1
    return used / cycles


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default="benchmarks/results/agent_poll.json", help="raw samples (default: %(default)s)")
    args = parser.parse_args()
    before = machine()
    mixed = [run_once(args.cycles, seed, False) for seed in range(args.repeats)]
    counters = [run_once(args.cycles, seed, True) for seed in range(args.repeats)]
    rss, hwm = rss_mb()
    median_mixed = median(mixed)
    median_counters = median(counters)
    result = {
        "gpus": 8,
        "poll_interval_s": 15,
        "cycles_per_repeat": args.cycles,
        "repeats": args.repeats,
        "cpu_ms_per_cycle_median": round(median_mixed * 1000, 3),
        "cpu_ms_per_cycle_min_max": [round(min(mixed) * 1000, 3), round(max(mixed) * 1000, 3)],
        "cpu_percent_of_one_core_median": round(median_mixed / 15 * 100, 4),
        "cpu_ms_per_cycle_all_counters_median": round(median_counters * 1000, 3),
        "cpu_percent_all_counters_median": round(median_counters / 15 * 100, 4),
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(hwm, 1),
        "python": sys.version.split()[0],
    }
    print(json.dumps(result, indent=2))
    raw = dict(result, cpu_s_per_cycle_samples=mixed, cpu_s_per_cycle_all_counters_samples=counters,
               machine=before, machine_after=machine())
    print(f"raw samples: {save_raw(args.json, raw)}")


if __name__ == "__main__":
    main()
