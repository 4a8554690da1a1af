"""Paired bootstrap intervals for a comparison of two recall settings on the same questions.

Two arms measured on the same questions give one difference per question (variant − baseline).
The interval resamples the questions with replacement (seeded, so a run can be repeated) and
takes the percentiles of the resampled mean differences: a delta whose interval lies above 0 is
one the questions support, not the luck of which questions were asked. Standard library only.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
ROUNDING = 1e-9


@dataclass(frozen=True)
class Delta:
    """The mean of each arm, their difference and its paired bootstrap interval."""

    baseline: float
    variant: float
    delta: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "baseline": round(self.baseline, 4),
            "variant": round(self.variant, 4),
            "delta": round(self.delta, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "n": self.n,
        }


def paired_delta(
    baseline: Sequence[float],
    variant: Sequence[float],
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> Delta:
    """The variant's mean minus the baseline's over the same questions (paired by position),
    with a percentile bootstrap interval at `confidence` from `resamples` resamples."""
    if len(baseline) != len(variant):
        raise ValueError(f"paired arms differ in length: {len(baseline)} ≠ {len(variant)}")
    n = len(baseline)
    if n == 0:
        return Delta(0.0, 0.0, 0.0, 0.0, 0.0, 0)
    differences = [b - a for a, b in zip(baseline, variant, strict=True)]
    observed = math.fsum(differences) / n
    means = bootstrap_means(differences, resamples, seed)
    low, high = percentile_interval(means, confidence)
    # a resampled mean is a float sum in another order: an all-equal sample would miss the
    # observed delta by a rounding error, which is no uncertainty
    if abs(low - observed) < ROUNDING:
        low = min(low, observed)
    if abs(high - observed) < ROUNDING:
        high = max(high, observed)
    return Delta(statistics.fmean(baseline), statistics.fmean(variant), observed, low, high, n)


def bootstrap_means(values: Sequence[float], resamples: int, seed: int) -> list[float]:
    """The mean of each of `resamples` resamples of `values` (with replacement, seeded)."""
    rng = random.Random(seed)
    n = len(values)
    return [math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples)]


def percentile_interval(means: Sequence[float], confidence: float) -> tuple[float, float]:
    """The central `confidence` share of `means`: the lowest and highest left once the
    ⌊(1 − confidence)/2 · n⌋ smallest and as many largest are set aside (symmetric, so
    swapping the arms mirrors the interval exactly)."""
    ordered = sorted(means)
    trimmed = math.floor((1 - confidence) / 2 * len(ordered) + ROUNDING)
    trimmed = min(trimmed, (len(ordered) - 1) // 2)
    return ordered[trimmed], ordered[len(ordered) - 1 - trimmed]
