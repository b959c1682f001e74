"""The one percentile method every benchmark figure uses: nearest rank.

The p-th percentile of n samples is the value at rank ceil(p/100 * n) of the sorted samples
(1-based; the smallest sample for p = 0): always a value that was measured, never one
interpolated between two.  It is numpy's ``method="inverted_cdf"``.  The median (p50) of an
even count is the lower of the two middle samples.

A p99 over fewer than 100 samples is the max (with n < 100, rank ceil(0.99 n) is n), so
:func:`summarize` does not call it a p99: ``p99`` is None, ``p99_note`` says so and
:meth:`Summary.label` prints the max with n."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction

#: Fewer samples than this and a "p99" is only the max.
P99_MIN_SAMPLES = 100
P99_NOTE = f"n<{P99_MIN_SAMPLES}: max shown"


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 <= q <= 100); NaN for no samples."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    if not 0 <= q <= 100:
        raise ValueError(f"a percentile is between 0 and 100, not {q}")
    # Exact arithmetic: 0.99 * 100 in floats must not become rank 100 of 100 by rounding up.
    rank = math.ceil(Fraction(str(q)) * len(ordered) / 100)
    return ordered[max(rank, 1) - 1]


def median(values: Iterable[float]) -> float:
    """p50 by nearest rank (a sample, the lower middle one of an even count)."""
    return percentile(values, 50)


@dataclass(frozen=True)
class Summary:
    """p50/p90/p99/max of ``n`` finite samples, their spread (min..max), and how many were left
    out as infinite or NaN (``lost``: past a limit, never seen).  ``p99`` is None below
    P99_MIN_SAMPLES samples; ``p99_note`` then says the max stands in for it."""

    n: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    min: float | None
    lost: int = 0
    p99_note: str = ""

    @property
    def spread(self) -> tuple[float, float] | None:
        return None if self.min is None or self.max is None else (self.min, self.max)

    @property
    def p99_or_max(self) -> float | None:
        """The p99, or the max where there are too few samples for one (see ``p99_note``)."""
        return self.p99 if self.p99 is not None else self.max

    @property
    def p99_name(self) -> str:
        """What :attr:`p99_or_max` is: ``p99``, or ``max (n=24<100)``."""
        return "p99" if self.p99 is not None else f"max (n={self.n}<{P99_MIN_SAMPLES})"

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self, unit: str = "ms", scale: float = 1000.0, digits: int = 0) -> str:
        """``p50 12 ms, p90 20 ms, p99 31 ms, max 40 ms, min..max 3..40 ms, n=812``; below 100
        samples ``p99 n/a (n<100: max shown)`` instead of a p99."""
        if not self.n:
            return "no sample" + (f" ({self.lost} past the limit)" if self.lost else "")

        def shown(value: float | None) -> str:
            if value is not None and math.isinf(value):
                return "lost"
            return "n/a" if value is None else f"{value * scale:.{digits}f} {unit}"

        p99 = shown(self.p99) if self.p99 is not None else f"n/a ({self.p99_note})"
        return (f"p50 {shown(self.p50)}, p90 {shown(self.p90)}, p99 {p99}, max {shown(self.max)}, "
                f"min..max {shown(self.min)}..{shown(self.max)}, n={self.n}"
                + (f", {self.lost} past the limit" if self.lost else ""))


def summarize(values: Iterable[float | None]) -> Summary:
    """The nearest-rank summary of ``values``.  None, infinite and NaN samples (past a limit,
    never seen) are counted in ``lost`` and ranked above every measured one: a percentile that
    lands on one is ``inf`` (it was worse than the limit), and so is the max.  ``n`` and the min
    are the measured samples'; the p99 is given from P99_MIN_SAMPLES samples, lost ones included."""
    given = list(values)
    finite = sorted(v for v in given if v is not None and math.isfinite(v))
    lost = len(given) - len(finite)
    if not finite:
        return Summary(0, None, None, None, None, None, lost)
    ranked = finite + [math.inf] * lost
    enough = len(ranked) >= P99_MIN_SAMPLES
    return Summary(n=len(finite), p50=percentile(ranked, 50), p90=percentile(ranked, 90),
                   p99=percentile(ranked, 99) if enough else None, max=ranked[-1], min=finite[0],
                   lost=lost, p99_note="" if enough else P99_NOTE)


def median_spread(values: Iterable[float | None], fmt: str = ".2f") -> str:
    """``median (min..max)`` of repetitions, by nearest rank (a lost one ranks last and shows as
    ``inf``); ``n/a`` without a finite value."""
    summary = summarize(values)
    if summary.p50 is None or summary.min is None or summary.max is None:
        return "n/a"
    return f"{summary.p50:{fmt}} ({summary.min:{fmt}}..{summary.max:{fmt}})"
