"""The nearest-rank percentile the latency benchmarks report (p99 of key timings)."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
