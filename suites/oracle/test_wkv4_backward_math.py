"""The algorithm of the wkv4 CUDA backward (``wkvkernels/wkv4/cuda/wkv4.cu``), checked on the CPU.

``two_sweep_backward`` transcribes the kernel's two sweeps in NumPy, line for line but vectorized
over (batch, channel): a forward sweep that carries ``dA/dW`` and stores ``gy/d, q, y`` per token,
then the reverse max-tracking adjoint recurrence. It is compared with central finite differences of
the float64 oracle ``recurrent_wkv4`` (spec §2.1), including upstream gradients of the final state
and the initial state's gradients, and it is run in float32 on the stress domain to show that no
exponential overflows. ``suites/gpu/test_gpu_wkv4_cuda.py`` checks the compiled kernel itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from wkvkernels.cases import Case, Shape
from wkvoracle.inputs import generate
from wkvoracle.wkv4 import recurrent_wkv4

STATE = ("aa", "bb", "pp")


def two_sweep_backward(k, v, w4, u, dy, aa=None, bb=None, pp=None, daa=None, dbb=None, dpp=None,
                       dtype=np.float64) -> dict:
    B, T, C = k.shape
    f = lambda x: np.asarray(x, dtype)  # noqa: E731
    k, v, gy, W, U = f(k), f(v), f(dy), f(w4), f(u)
    zero = np.zeros((B, C), dtype)
    a0 = zero if aa is None else f(aa)
    b0 = zero if bb is None else f(bb)
    p0 = np.full((B, C), -1e38, dtype) if pp is None else f(pp)
    gaT, gbT, gpT = (zero if x is None else f(x) for x in (daa, dbb, dpp))
    a, b, p, da, db, gW, gU = a0, b0, p0, zero, zero, zero, zero
    argmax = np.full((B, C), -1)
    M, Q, Y = (np.empty((T, B, C), dtype) for _ in range(3))
    with np.errstate(over="raise", invalid="raise"):
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            q = np.maximum(p, U + kt)
            e1, e2 = np.exp(p - q), np.exp(U + kt - q)
            d = e1 * b + e2
            Y[t] = (e1 * a + e2 * vt) / d
            M[t], Q[t] = gy[:, t] / d, q
            gW = gW + M[t] * e1 * (da - Y[t] * db)
            gU = gU + M[t] * e2 * (vt - Y[t])
            pw = p + W
            q2 = np.maximum(pw, kt)
            argmax = np.where(kt >= pw, t, argmax)
            f1, f2 = np.exp(pw - q2), np.exp(kt - q2)
            da, db = f1 * (da + a), f1 * (db + b)
            a, b, p = f1 * a + f2 * vt, f1 * b + f2, q2
        gP = gpT - gaT * a - gbT * b
        gW = gW + gaT * da + gbT * db + gP * np.where(argmax < 0, T, T - 1 - argmax)
        alpha, beta, rho = gaT, gbT, -p
        gk, gv = np.empty_like(k), np.empty_like(v)
        for t in range(T - 1, -1, -1):
            kt, vt, m, q, yt = k[:, t], v[:, t], M[t], Q[t], Y[t]
            ek = np.exp(kt + rho)
            direct = m * np.exp(U + kt - q)
            gk[:, t] = ek * (vt * alpha + beta) + direct * (vt - yt) + np.where(argmax == t, gP, 0)
            gv[:, t] = ek * alpha + direct
            r2 = np.maximum(rho + W, -q)
            f1, f2 = np.exp(rho + W - r2), np.exp(-q - r2)
            alpha, beta, rho = f1 * alpha + f2 * m, f1 * beta - f2 * m * yt, r2
        s = np.exp(rho + p0)
        ga0, gb0 = alpha * s, beta * s
        gp0 = ga0 * a0 + gb0 * b0 + np.where(argmax < 0, gP, 0)
    return {"k": gk, "v": gv, "w4": gW.sum(0), "u": gU.sum(0), "aa": ga0, "bb": gb0, "pp": gp0}


def loss(inputs: dict, dy, dstate: dict) -> float:
    out = recurrent_wkv4(**inputs)
    return float((out["y"] * dy).sum() + sum((out[n] * g).sum() for n, g in dstate.items()))


def finite_differences(inputs: dict, dy, dstate: dict, h: float = 1e-6) -> dict:
    grads = {}
    for name, x in inputs.items():
        x = np.asarray(x, np.float64)
        g = np.empty_like(x)
        for ix in np.ndindex(x.shape):
            hi, lo = x.copy(), x.copy()
            hi[ix] += h
            lo[ix] -= h
            up, down = loss({**inputs, name: hi}, dy, dstate), loss({**inputs, name: lo}, dy, dstate)
            g[ix] = (up - down) / (2 * h)
        grads[name] = g
    return grads


def tiny_problem(h0: bool, final_grads: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    B, T, C = 2, 6, 4
    inputs = {"k": rng.uniform(-2, 2, (B, T, C)), "v": rng.standard_normal((B, T, C)),
              "w4": -np.exp(rng.uniform(-1, 1, C)), "u": rng.uniform(-1, 1, C)}
    if h0:
        inputs.update(aa=rng.standard_normal((B, C)), bb=rng.uniform(0.5, 2, (B, C)),
                      pp=rng.standard_normal((B, C)))
    dy = rng.standard_normal((B, T, C))
    dstate = {n: rng.standard_normal((B, C)) for n in STATE} if final_grads else {}
    return inputs, dy, dstate


@pytest.mark.parametrize("final_grads", [False, True], ids=["dy", "dy+dstate"])
@pytest.mark.parametrize("h0", [False, True], ids=["empty", "h0"])
def test_two_sweep_backward_matches_finite_differences(h0, final_grads):
    inputs, dy, dstate = tiny_problem(h0, final_grads)
    fd = finite_differences(inputs, dy, dstate)
    got = two_sweep_backward(dy=dy, **inputs, **{"d" + n: g for n, g in dstate.items()})
    for name, want in fd.items():
        err = np.abs(got[name] - want).max() / np.abs(want).max()
        assert err < 1e-7, (name, err)


@pytest.mark.parametrize("domain", ["model", "stress", "uniform"])
def test_two_sweep_backward_in_float32_is_finite_and_close(domain):
    case = Case("wkv4", domain, Shape(1, 64, 1, 16, h0=True), "fp32")
    inputs = {n: x.astype(np.float64) for n, x in generate(case).items()}
    dy = np.random.default_rng(1).standard_normal(inputs["k"].shape)
    want = two_sweep_backward(dy=dy, **inputs)
    got = two_sweep_backward(dy=dy, **inputs, dtype=np.float32)  # raises on overflow / invalid
    for name in want:
        err = np.sqrt(np.mean((got[name] - want[name]) ** 2) / max(np.mean(want[name] ** 2), 1e-300))
        assert np.isfinite(got[name]).all() and err < 1e-4, (domain, name, err)
