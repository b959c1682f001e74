"""Benchmark the cluster access layer on the `large` scenario.

20,000 Workloads, 50 LocalQueues, 10 ClusterQueues, 2,000 nodes with 8 GPUs each. Measures,
as medians over repetitions: building the simulated world, the backend's first sync into its
cache, reading typed snapshots (what a pane does on each tick), computing positions for every
ClusterQueue through the visibility endpoint, one simulated second of
cluster activity with its change dispatch, five more seconds with the heap frozen as the app
freezes it (the simulator's tick, which shares the app's interpreter), and the process RSS.

Run: .venv/bin/python benchmarks/cluster_large.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, machine_line  # noqa: E402
from percentiles import median  # noqa: E402
from raw_results import save_raw  # noqa: E402

from tau_tui.core.cluster.kinds import ResourceKind  # noqa: E402
from tau_tui.core.sim.backend import SimulatedBackend  # noqa: E402
from tau_tui.core.sim.scenario import build_world  # noqa: E402


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def one_round() -> dict[str, float]:
    out: dict[str, float] = {}
    out["world build"], world = timed(lambda: build_world("large"))
    backend = SimulatedBackend(world)
    out["first sync"], _ = timed(lambda: (backend.start(), backend.wait_synced(timeout=600)))
    out["snapshot: workloads"], workloads = timed(backend.workloads)
    assert len(workloads) == 20_000
    out["snapshot: nodes"], nodes = timed(backend.nodes)
    assert len(nodes) == 2_000
    queues = [cq.name for cq in backend.cluster_queues()]
    out["positions: all 10 ClusterQueues"], reports = timed(lambda: [backend.pending_positions_cluster_queue(q) for q in queues])
    out["one simulated second"], _ = timed(lambda: (world.advance(1.0), backend.generation(ResourceKind.WORKLOAD)))
    # As in the app: the built heap frozen, young collections every 50,000 allocations (startup/heap.py).
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    seconds = [timed(lambda: world.advance(1.0))[0] for _ in range(5)]
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    out["a simulated second, median of 5 more"] = median(seconds)
    out["pending workloads positioned"] = float(sum(len(r.entries) for r in reports))
    backend.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default="benchmarks/results/cluster_large.json", help="raw samples (default: %(default)s)")
    args = parser.parse_args()
    before = machine()
    rounds = [one_round() for _ in range(args.repeat)]
    print(f"large scenario, {args.repeat} repetitions (median, min..max):")
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        if key.startswith("pending"):
            print(f"  {key:32s} {values[0]:.0f}")
            continue
        print(f"  {key:32s} {median(values) * 1000:9.1f} ms   ({min(values) * 1000:.1f}..{max(values) * 1000:.1f})")
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {'peak RSS':32s} {peak_rss_mb:9.1f} MB")
    after = machine()
    print(machine_line(before, after))
    path = save_raw(args.json, {"scenario": "large", "repeat": args.repeat, "rounds_s": rounds,
                                "peak_rss_mb": round(peak_rss_mb, 1), "machine": before, "machine_after": after})
    print(f"raw samples: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
