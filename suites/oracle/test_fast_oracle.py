"""The fast chunked float64 oracle (``wkvoracle.FAST``) against the per-step recurrences (``ORACLES``):
≤ 1e-12 relative on every value domain, with and without an initial state, for sequence lengths
that are and are not multiples of the chunk, and for several chunk lengths (both the factored and
the split path of the decay factorization are exercised)."""

from __future__ import annotations

import numpy as np
import pytest

from suites.oracle.test_references import DOMAINS, TOL, _inputs, rel
from wkvoracle import FAST, ORACLES
from wkvoracle._chunked import ChunkDecay, unit_lower_inverse

EDGE = {"wkv4": ("lw0", "lwneg"), "wkv6": ("lw0", "lwneg", "const"), "gla": ("lw0", "lwneg"),
        "wkv7": ("lw0", "lwneg", "beta0", "beta1"), "gdn": ("lw0", "lwneg", "beta0", "beta1"),
        "kda": ("lw0", "lwneg", "beta0", "beta1", "safegate")}
CASES = [(op, d) for op in ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda") for d in (*DOMAINS, *EDGE[op])]
CHUNKS = (1, 7, 16, 32, 64)


def _run_inputs(op, domain, T, h0, seed=0):
    x = _inputs(op, domain, T=T, h0=h0, seed=seed)
    if not h0 and op != "wkv4":
        x.pop("state")  # no initial state at all (wkv4 gets the recurrence's default aa, bb, pp)
    return x


def _worst(a, b) -> float:
    assert set(a) == set(b)
    return max(rel(b[n], a[n]) for n in a)


@pytest.mark.parametrize("op,domain", CASES)
def test_fast_matches_recurrence(op, domain):
    for T in (1, 5, 37, 100):
        for h0 in (True, False):
            x = _run_inputs(op, domain, T, h0)
            ref = ORACLES[op](**x)
            for chunk in CHUNKS:
                err = _worst(ref, FAST[op](**x, chunk=chunk))
                assert err <= TOL, (T, h0, chunk, err)


@pytest.mark.parametrize("op", ("wkv6", "wkv7", "gla", "gdn", "kda"))
def test_fast_matches_recurrence_at_head_size_64(op):
    """The default chunk at N = 64, strong decays included (the split path)."""
    for domain in ("model", "stress", "lwneg"):
        x = _inputs(op, domain, T=150, N=64)
        assert _worst(ORACLES[op](**x), FAST[op](**x)) <= TOL, domain


def test_both_decay_paths_are_exercised():
    """The model domain's chunks take the single factored product, the lwneg edge the split path."""
    for domain, fast in (("model", True), ("lwneg", False)):
        lw = _inputs("gla", domain, T=64)["lw"]
        assert ChunkDecay(np.cumsum(lw, axis=1).transpose(0, 2, 1, 3)).fast is fast  # one chunk of 64


@pytest.mark.parametrize("op", ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda"))
def test_one_perturbed_decay_fails_the_tolerance(op):
    """The comparison is not hollow: one decay of one token (wkv4: of one channel) moved by 1e-6 in
    log space makes the fast oracle disagree with the unperturbed recurrence far beyond 1e-12, while
    it still agrees with the recurrence run on the perturbed inputs."""
    x = _run_inputs(op, "model", 37, True)
    name = {"wkv4": "w4", "gdn": "g", "kda": "g"}.get(op, "lw")
    bad = {**x, name: x[name].copy()}
    if op == "wkv4":
        bad[name][3] *= 1 + 1e-6
    elif op == "kda":  # the key this token decays least: the model domain's strong gates forget the others
        bad[name][0, 18, 1, np.argmax(x[name][0, 18, 1])] -= 1e-6
    else:
        bad[name][0, 18, 1, ...] += -1e-6 if op == "gdn" else np.r_[-1e-6, np.zeros(bad[name].shape[-1] - 1)]
    ref, got = ORACLES[op](**x), FAST[op](**bad)
    assert _worst(ref, got) > 1e3 * TOL
    assert _worst(ORACLES[op](**bad), got) <= TOL


@pytest.mark.parametrize("op", ("wkv7", "gla"))
def test_reading_the_wrong_state_fails(op):
    """A formulation off by one token (reading the state before the update instead of after) fails."""
    x = _run_inputs(op, "model", 37, True)
    ref = ORACLES[op](**x)
    rd = "r" if op == "wkv7" else "q"
    shifted = ORACLES[op](**{**x, rd: np.roll(x[rd], 1, axis=1)})
    got = FAST[op](**x)
    assert rel(got["y"], shifted["y"]) > 1e-3 and rel(got["y"], ref["y"]) <= TOL


def test_unit_lower_inverse():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 16, 37, 64):
        A = np.tril(0.3 * rng.standard_normal((3, 2, n, n)), -1)
        X = unit_lower_inverse(A)
        assert rel(X, np.linalg.inv(np.eye(n) + A)) <= TOL
        assert np.array_equal(X, np.tril(X))
        # the diagonal and the upper triangle of A are never read (the delta rules pass whole score blocks)
        assert np.array_equal(unit_lower_inverse(A + np.triu(rng.standard_normal(A.shape))), X)


@pytest.mark.parametrize("op", ("wkv6", "wkv7", "gla", "gdn", "kda"))
def test_inputs_in_any_float_dtype_give_the_same_result(op):
    """Chunks are read in place into float64 work arrays from the inputs' own dtype: float16 and float32
    inputs give exactly what their float64 conversion gives, and a non-contiguous input what its
    contiguous copy gives."""
    x = _run_inputs(op, "model", 37, True)
    for low in (np.float16, np.float32):
        lowx = {n: (a.astype(low) if isinstance(a, np.ndarray) and n != "state" else a) for n, a in x.items()}
        f64 = {n: (a.astype(np.float64) if isinstance(a, np.ndarray) else a) for n, a in lowx.items()}
        strided = {n: (np.asfortranarray(a) if isinstance(a, np.ndarray) else a) for n, a in f64.items()}
        want = FAST[op](**f64)
        for other in (lowx, strided):
            got = FAST[op](**other)
            for n in want:
                assert np.array_equal(got[n], want[n]), (low, n)


@pytest.mark.parametrize("op", ("wkv4", "wkv7", "gdn", "kda"))
def test_threads_do_not_change_the_result(op):
    x = _run_inputs(op, "stress", 37, True)
    one, two = FAST[op](**x, workers=1), FAST[op](**x, workers=2)
    for n in one:
        assert np.array_equal(one[n], two[n]), n
