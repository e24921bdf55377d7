"""The gate's Mann-Whitney U test against values computed independently: brute-force enumeration of
every assignment of ranks (exact distribution, with and without ties) and published critical values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from wkvbench.gate.stats import mann_whitney_u, quartiles, robust_rel_sd


def _brute_p(x, y) -> tuple[float, float]:
    """One-sided p-values by permuting the pooled sample over every split (midranks for ties)."""
    from scipy.stats import rankdata

    both = np.concatenate([x, y])
    ranks = rankdata(both)  # midranks for ties
    n1 = len(x)
    u_obs = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    us = [ranks[list(c)].sum() - n1 * (n1 + 1) / 2 for c in itertools.combinations(range(len(both)), n1)]
    us = np.array(us)
    return float((us >= u_obs - 1e-9).mean()), float((us <= u_obs + 1e-9).mean())


@pytest.mark.parametrize("seed", range(5))
def test_exact_p_values_equal_enumeration_without_ties(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(0.3, 1, 6), rng.normal(0, 1, 7)
    mw = mann_whitney_u(x, y)
    assert mw.method == "exact"
    g, le = _brute_p(x, y)
    assert mw.p_greater == pytest.approx(g, abs=1e-12) and mw.p_less == pytest.approx(le, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_normal_approximation_with_ties_is_close_to_the_permutation_distribution(seed):
    rng = np.random.default_rng(100 + seed)
    x = np.round(rng.normal(0.4, 1, 8), 1)  # rounding creates ties
    y = np.round(rng.normal(0.0, 1, 8), 1)
    assert len(np.unique(np.concatenate([x, y]))) < 16
    mw = mann_whitney_u(x, y)
    assert mw.method == "normal"
    g, le = _brute_p(x, y)
    assert mw.p_greater == pytest.approx(g, abs=0.03) and mw.p_less == pytest.approx(le, abs=0.03)


@pytest.mark.parametrize("n,critical", [(5, 4), (8, 15), (10, 27), (20, 138)])
def test_published_one_sided_critical_values(n, critical):
    """Mann-Whitney tables, one-tailed alpha = 0.05, n1 = n2 = n: U <= critical is significant and
    critical + 1 is not (samples built to give exactly that U: y's values interleaved into x's)."""
    def samples_with_u(u):  # x = 0..n-1; y placed so that exactly u pairs have x_i > y_j
        x = np.arange(n, dtype=float)
        y = np.full(n, n + 0.5)
        left = u
        for j in range(n):
            k = min(left, n)  # y_j sits above n - k of the x values
            y[j] = n - k - 0.5 + 1e-3 * j  # distinct: no ties, so the exact test applies
            left -= k
        return x, y

    for u, significant in ((critical, True), (critical + 1, False)):
        x, y = samples_with_u(u)
        mw = mann_whitney_u(x, y)
        assert mw.method == "exact" and mw.u == u
        assert (mw.p_less <= 0.05) is significant, (u, mw.p_less)


def test_direction_symmetry_and_the_smallest_p():
    rng = np.random.default_rng(7)
    x, y = rng.normal(1, 1, 30), rng.normal(0, 1, 30)
    a, b = mann_whitney_u(x, y), mann_whitney_u(y, x)
    assert a.p_greater == pytest.approx(b.p_less) and a.p_less == pytest.approx(b.p_greater)
    assert a.p_greater < 0.01 < a.p_less
    total = mann_whitney_u([2, 3, 4], [0, 1])  # every x above every y: the most extreme arrangement
    assert total.u == 6 and total.p_greater == pytest.approx(1 / math.comb(5, 2)) == total.min_p


def test_identical_samples_give_no_evidence():
    mw = mann_whitney_u([1.0] * 40, [1.0] * 40)
    assert mw.p_greater == 1.0 and mw.p_less == 1.0


@pytest.mark.parametrize("x,y,msg", [([], [1.0], "both sides"), ([1.0, float("nan")], [1.0], "NaN")])
def test_bad_samples_raise_clear_errors(x, y, msg):
    with pytest.raises(ValueError, match=msg):
        mann_whitney_u(x, y)


def test_quartiles_and_spread():
    assert quartiles([1, 2, 3, 4, 5]) == (2.0, 3.0, 4.0)
    rng = np.random.default_rng(3)
    assert robust_rel_sd(100 * np.exp(rng.normal(0, 0.02, 4000))) == pytest.approx(0.02, rel=0.1)
