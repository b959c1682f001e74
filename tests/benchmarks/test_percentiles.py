"""benchmarks/percentiles.py: nearest rank, against hand-computed values and independent oracles
(the definition counted out sample by sample; ``statistics.median_low``)."""

from __future__ import annotations

import math
import random
import re
import statistics
from pathlib import Path

import pytest

from benchmarks.percentiles import P99_MIN_SAMPLES, median, median_spread, percentile, summarize

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def by_definition(values: list[float], q: float) -> float:
    """The smallest sample with at least q% of the samples at or below it."""
    return min(x for x in values if sum(1 for v in values if v <= x) * 100 >= q * len(values))


@pytest.mark.parametrize(("values", "q", "expected"), [
    ([15, 20, 35, 40, 50], 5, 15), ([15, 20, 35, 40, 50], 30, 20), ([15, 20, 35, 40, 50], 40, 20),
    ([15, 20, 35, 40, 50], 50, 35), ([15, 20, 35, 40, 50], 100, 50),
    ([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], 25, 7), ([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], 50, 8),
    ([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], 75, 15), ([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], 100, 20),
    ([7], 0, 7), ([7], 99, 7), ([2, 1], 50, 1), ([2, 1], 51, 2),
])
def test_hand_computed_nearest_ranks(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == expected


def test_a_p99_of_100_samples_is_the_99th_not_the_max() -> None:
    values = list(range(1, 101))
    random.Random(3).shuffle(values)
    assert percentile(values, 99) == 99
    assert percentile(values, 90) == 90
    assert percentile(values, 50) == 50
    assert percentile(list(range(1, 1001)), 99.9) == 999


def test_matches_the_definition_counted_out_on_random_samples() -> None:
    rng = random.Random(36)
    for _ in range(300):
        values = [round(rng.expovariate(1.0), 3) for _ in range(rng.randint(1, 250))]
        for q in (0, 1, 10, 25, 50, 90, 99, 99.9, 100):
            assert percentile(values, q) == by_definition(values, q), (len(values), q)


def test_the_median_is_statistics_median_low() -> None:
    rng = random.Random(7)
    for n in range(1, 60):
        values = [rng.random() for _ in range(n)]
        assert median(values) == statistics.median_low(values)


def test_no_samples_and_bad_percentiles() -> None:
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summary_of_enough_samples() -> None:
    values = [v / 1000 for v in range(1, 201)] + [float("inf"), None, float("nan")]
    random.Random(1).shuffle(values)
    summary = summarize(values)
    assert (summary.n, summary.lost) == (200, 3)
    # the 3 lost rank above the 200 measured (203 in all): p99 is rank 201, a lost one
    assert (summary.p50, summary.p90, summary.p99, summary.max, summary.min) == (0.102, 0.183, math.inf, math.inf, 0.001)
    assert summary.p99_note == "" and summary.p99_name == "p99" and summary.p99_or_max == math.inf
    assert summary.spread == (0.001, math.inf)
    assert "p99 lost" in summary.label() and "n=200, 3 past the limit" in summary.label()
    assert summary.as_dict()["p99"] == math.inf


def test_lost_samples_rank_above_every_measured_one() -> None:
    measured = [0.001 * k for k in range(1, 100)]  # 99 measured, the worst 99 ms
    assert summarize(measured).p99 is None  # too few for a p99
    one_lost = summarize([*measured, None])  # 100 samples: the p99 is rank 99, the worst measured
    assert one_lost.p99 == 0.099 and one_lost.max == math.inf and (one_lost.n, one_lost.lost) == (99, 1)
    two_lost = summarize([*measured, None, float("inf")])  # 101 samples: rank 100 is a lost one
    assert two_lost.p99 == math.inf and "p99 lost" in two_lost.label()


def test_a_p99_of_fewer_than_100_samples_is_the_max_with_n() -> None:
    summary = summarize([0.002 * k for k in range(1, P99_MIN_SAMPLES)])  # 99 samples
    assert summary.n == 99
    assert summary.p99 is None
    assert summary.p99_note == "n<100: max shown"
    assert summary.p99_or_max == summary.max == pytest.approx(0.198)
    assert summary.p99_name == "max (n=99<100)"
    assert "p99 n/a (n<100: max shown)" in summary.label()


def test_no_finite_sample() -> None:
    summary = summarize([float("inf")])
    assert (summary.n, summary.lost, summary.p50, summary.spread) == (0, 1, None, None)
    assert summary.label() == "no sample (1 past the limit)"
    assert median_spread([None]) == "n/a"
    assert median_spread([3.0, 1.0, 2.0, None]) == "2.00 (1.00..inf)"  # the lost run ranks last


def test_no_benchmark_computes_percentiles_of_its_own() -> None:
    """Every figure goes through benchmarks/percentiles.py: no statistics/numpy percentiles, no
    indexing into sorted samples, no other percentile function."""
    own = re.compile(r"import statistics|statistics\.|numpy|\bnp\.percentile|quantiles|sorted\([^)]*\)\s*\[\s*int\(|"
                     r"def (pct|percentile|p99|median)\b|\[min\(len\(")
    offenders = {path.name: [m.group(0) for m in own.finditer(path.read_text())] for path in sorted(BENCHMARKS.glob("*.py"))
                 if path.name != "percentiles.py"}
    assert {name: found for name, found in offenders.items() if found} == {}
