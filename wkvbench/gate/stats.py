"""Small statistics for the regression gate.

``mann_whitney_u`` is the two-sample rank test that asv uses to decide whether two sets of timing
samples differ: the exact null distribution of U for small samples without ties, otherwise the
normal approximation with tie correction and continuity correction. SciPy computes it
(``scipy.stats.mannwhitneyu``): a maintained, widely tested implementation replaced the rank and
exact-distribution code this module used to carry; this wrapper keeps the gate's view of it (both
one-sided p-values, the method, the smallest p the sample sizes allow). SciPy is imported only when
the gate compares timings, so the rest of the suite does not need it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EXACT_MAX_N = 50  # exact distribution when n1 + n2 <= this and there are no ties (counts fit a float64)


@dataclass(frozen=True)
class MannWhitney:
    """``u`` counts pairs (x_i, y_j) with x_i > y_j (ties count 1/2); ``p_greater`` is the one-sided
    p-value of "x is stochastically greater than y", ``p_less`` of "x is smaller"."""

    u: float
    n1: int
    n2: int
    p_greater: float
    p_less: float
    method: str  # "exact" or "normal"

    @property
    def min_p(self) -> float:
        """The smallest one-sided p-value these sample sizes can produce at all (exact test)."""
        return 1.0 / math.comb(self.n1 + self.n2, self.n1)


def mann_whitney_u(x, y) -> MannWhitney:
    """One-sided Mann-Whitney U test of samples ``x`` against ``y`` (both directions), by
    ``scipy.stats.mannwhitneyu``: exact when there are no ties and ``n1 + n2 <= EXACT_MAX_N``, else the
    normal approximation with tie and continuity correction."""
    from scipy.stats import mannwhitneyu

    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError(f"Mann-Whitney U needs samples on both sides (got {n1} and {n2})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("Mann-Whitney U: samples contain NaN or Inf")
    distinct = len(np.unique(np.concatenate([x, y])))
    if distinct == 1:  # every value identical: no evidence either way
        return MannWhitney(n1 * n2 / 2.0, n1, n2, 1.0, 1.0, "normal")
    exact = distinct == n1 + n2 and n1 + n2 <= EXACT_MAX_N
    method = "exact" if exact else "asymptotic"
    hi = mannwhitneyu(x, y, alternative="greater", method=method)
    lo = mannwhitneyu(x, y, alternative="less", method=method)
    return MannWhitney(float(hi.statistic), n1, n2, float(hi.pvalue), float(lo.pvalue),
                       "exact" if exact else "normal")


def quartiles(samples) -> tuple[float, float, float]:
    """(q1, median, q3) with linear interpolation."""
    s = np.asarray(samples, dtype=np.float64)
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    return float(q1), float(med), float(q3)


def robust_rel_sd(samples) -> float:
    """Relative spread of single samples: IQR / 1.349 / median (the standard deviation for normal data)."""
    q1, med, q3 = quartiles(samples)
    return (q3 - q1) / 1.349 / med if med > 0 else float("inf")
