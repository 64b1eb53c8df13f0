"""The statistics the papers report, so a campaign's table can be compared with theirs.

- `wilson`: the Wilson score interval of a success rate (small samples: 6/42 is not 14 % +- 0).
- `sign_flip_test`: paired randomization test over per-task success fractions (two systems on
  the same tasks): exact over all 2^n sign patterns when that is small, otherwise Monte Carlo
  with the Phipson-Smyth correction (p = (b + 1) / (m + 1): never 0 from a finite sample).
- `a12`: Vargha-Delaney effect size with Romano et al.'s magnitude thresholds (stated on
  Cliff's delta = 2 * A12 - 1).
- `compare`: Shapiro-Wilk on each group, then Student's t when both look normal, else
  Kruskal-Wallis, at alpha = 0.05 (scipy's tests: a well-tested dependency, not re-derived).
- `pp_per_min`: MotorMind's time-normalised score, success percentage points per minute.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

ALPHA = 0.05
EXACT_MAX_N = 16  # 2^16 sign patterns enumerate in well under a second


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for `successes` out of `n` trials, as fractions."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    z = _z(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class SignFlip:
    """A paired randomization test's outcome: mean difference (a - b) and two-sided p."""

    mean_diff: float
    p: float
    exact: bool
    resamples: int  # sign patterns evaluated


def sign_flip_test(a: Sequence[float], b: Sequence[float], *, resamples: int = 20_000,
                   seed: int = 0) -> SignFlip:
    """Two-sided paired sign-flip test of mean(a - b) = 0 (per-task fractions in [0, 1])."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if d.ndim != 1 or len(a) != len(b) or d.size == 0:
        raise ValueError("sign_flip_test needs two equally long, non-empty sequences")
    n = d.size
    observed = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, observed)  # ties count as extreme (float sums differ in order)
    if n <= EXACT_MAX_N:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        stats = np.abs(signs @ d) / n
        return SignFlip(float(d.mean()), float(np.mean(stats >= observed - tol)), True,
                        len(signs))
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(resamples, n))
    extreme = int(np.sum(np.abs(signs @ d) / n >= observed - tol))
    return SignFlip(float(d.mean()), (extreme + 1) / (resamples + 1), False, resamples)


# Romano et al. (2006) on |Cliff's delta|: negligible < 0.147 <= small < 0.33 <= medium
# < 0.474 <= large
_ROMANO = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))


@dataclass(frozen=True)
class EffectSize:
    a12: float  # P(X > Y) + P(X = Y) / 2
    magnitude: str


def a12(x: Sequence[float], y: Sequence[float]) -> EffectSize:
    """Vargha-Delaney A12 of x over y, with its Romano magnitude."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    if xs.size == 0 or ys.size == 0:
        raise ValueError("a12 needs two non-empty samples")
    diff = xs[:, None] - ys[None, :]
    value = float((np.sum(diff > 0) + 0.5 * np.sum(diff == 0)) / diff.size)
    delta = abs(2 * value - 1)
    magnitude = next((name for bound, name in _ROMANO if delta < bound), "large")
    return EffectSize(value, magnitude)


@dataclass(frozen=True)
class Comparison:
    test: str  # "student_t" | "kruskal_wallis"
    statistic: float
    p: float
    normal: bool  # every group passed Shapiro-Wilk at alpha
    significant: bool


def compare(*groups: Sequence[float], alpha: float = ALPHA) -> Comparison:
    """Shapiro-Wilk on each group; Student's t (two groups, all normal) else Kruskal-Wallis."""
    from scipy import stats

    arrays = [np.asarray(g, float) for g in groups]
    if len(arrays) < 2 or any(a.size < 3 for a in arrays):
        raise ValueError("compare needs at least two groups of three or more values")
    # a constant group is not "non-normal" evidence Shapiro-Wilk can weigh: treat as normal
    normal = all(np.ptp(a) == 0 or stats.shapiro(a).pvalue > alpha for a in arrays)
    if normal and len(arrays) == 2:
        res = stats.ttest_ind(arrays[0], arrays[1], equal_var=True)
        name = "student_t"
    else:
        res = stats.kruskal(*arrays)
        name = "kruskal_wallis"
    p = float(res.pvalue) if math.isfinite(res.pvalue) else 1.0
    return Comparison(name, float(res.statistic), p, normal, p < alpha)


def pp_per_min(success_rate: float, mean_seconds: float) -> float:
    """Success percentage points per minute of mean episode time (MotorMind)."""
    if mean_seconds <= 0:
        raise ValueError(f"mean episode time must be positive, got {mean_seconds}")
    return 100.0 * success_rate / (mean_seconds / 60.0)
