"""What a number of independent sampled runs is worth, in formulas a reader can check.

- `wilson`: the Wilson score interval for a proportion (hits out of runs): unlike the
  normal approximation it stays inside [0, 1] and is sound for 0 hits.
- `all_miss`: the probability that n independent runs all miss an event of per-run
  probability p, (1 - p)^n.
- `clean_bound`: after n runs without a hit, the per-run probability q below which the
  event lies with the given confidence: 1 - (1 - confidence)^(1/n) (about 3/n at 95%,
  the "rule of three").
"""

from __future__ import annotations

import math
from statistics import NormalDist

CONFIDENCE = 0.95


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal quantile: 1.96 for 95%."""
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson(hits: int, runs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval (low, high) of a proportion hits / runs."""
    if runs <= 0:
        return 0.0, 1.0
    z = z_value(confidence)
    p = hits / runs
    denominator = 1 + z * z / runs
    center = (p + z * z / (2 * runs)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs))
    low = 0.0 if hits == 0 else max(0.0, center - half)  # exact ends where rounding would blur them
    high = 1.0 if hits == runs else min(1.0, center + half)
    return low, high


def all_miss(p: float, runs: int) -> float:
    """The probability that `runs` independent runs all miss an event of per-run probability p."""
    return (1.0 - p) ** runs


def clean_bound(runs: int, confidence: float = CONFIDENCE) -> float:
    """After `runs` runs without a hit: with this confidence, the per-run probability is below this."""
    return 1.0 - (1.0 - confidence) ** (1.0 / runs) if runs > 0 else 1.0
