"""Small statistics for the regression gate, in NumPy only (no SciPy dependency).

``mann_whitney_u`` is the two-sample rank test that asv uses to decide whether two sets of timing
samples differ: the exact null distribution of U for small samples without ties, otherwise the
normal approximation with tie correction and continuity correction.
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


def midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n; tied values share the mean of the ranks they span."""
    order = np.argsort(values, kind="mergesort")
    sorted_v = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def u_distribution(n1: int, n2: int) -> np.ndarray:
    """Number of arrangements giving each U = 0..n1*n2 under H0 (no ties), by counting the
    n1-subsets of ranks {1..n1+n2} per rank sum (a dynamic programme over the ranks)."""
    n = n1 + n2
    max_sum = sum(range(n2 + 1, n + 1))
    counts = np.zeros((n1 + 1, max_sum + 1), dtype=np.float64)  # counts[k, s]: k-subsets with sum s
    counts[0, 0] = 1.0
    for r in range(1, n + 1):
        counts[1:, r:] = counts[1:, r:] + counts[:-1, :-r]  # right side is evaluated before assignment
    by_sum = counts[n1]
    offset = n1 * (n1 + 1) // 2
    return by_sum[offset : offset + n1 * n2 + 1]


def mann_whitney_u(x, y) -> MannWhitney:
    """One-sided Mann-Whitney U test of samples ``x`` against ``y`` (both directions)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError(f"Mann-Whitney U needs samples on both sides (got {n1} and {n2})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("Mann-Whitney U: samples contain NaN or Inf")
    both = np.concatenate([x, y])
    ranks = midranks(both)
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    ties = len(np.unique(both)) < len(both)
    if not ties and n1 + n2 <= EXACT_MAX_N:
        dist = u_distribution(n1, n2)
        total = dist.sum()
        k = int(round(u))
        return MannWhitney(
            u, n1, n2, float(dist[k:].sum() / total), float(dist[: k + 1].sum() / total), "exact"
        )
    mu = n1 * n2 / 2.0
    n = n1 + n2
    _, t = np.unique(both, return_counts=True)
    var = n1 * n2 / 12.0 * ((n + 1) - float((t**3 - t).sum()) / (n * (n - 1)))
    if var <= 0:  # every value identical: no evidence either way
        return MannWhitney(u, n1, n2, 1.0, 1.0, "normal")
    sd = math.sqrt(var)
    z_hi = (u - mu - 0.5) / sd
    z_lo = (u - mu + 0.5) / sd
    return MannWhitney(
        u, n1, n2, 0.5 * math.erfc(z_hi / math.sqrt(2)), 0.5 * math.erfc(-z_lo / math.sqrt(2)), "normal"
    )


def quartiles(samples) -> tuple[float, float, float]:
    """(q1, median, q3) with linear interpolation."""
    s = np.asarray(samples, dtype=np.float64)
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    return float(q1), float(med), float(q3)


def robust_rel_sd(samples) -> float:
    """Relative spread of single samples: IQR / 1.349 / median (the standard deviation for normal data)."""
    q1, med, q3 = quartiles(samples)
    return (q3 - q1) / 1.349 / med if med > 0 else float("inf")
