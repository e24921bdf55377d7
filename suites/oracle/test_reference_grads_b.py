"""The float64 gradient oracles ``backward_wkv7``, ``backward_gdn`` (issue 5) and ``backward_kda``, checked
three ways:

* central finite differences of the forward oracle on tiny cases, for every input including the
  initial state (and GDN's / KDA's ``scale``), with random upstream ``dy`` and ``dstate`` so errors cannot
  cancel;
* torch autograd (float64) of a plain torch transcription of the forward recurrence written here,
  independent of the NumPy code, on medium cases (T = 37, N = 16);
* edge cases: T = 1, decays at ``lw ≈ 0`` and very negative, ``beta`` exactly 0 and 1, no initial
  state, and finiteness on the stress domain.

Errors are measured per tensor as ``max|got - want| / max|want|``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wkvkernels.cases import Case, Shape
from wkvoracle.gdn import backward_gdn, recurrent_gdn
from wkvoracle.inputs import generate
from wkvoracle.kda import backward_kda, recurrent_kda
from wkvoracle.wkv7 import backward_wkv7, recurrent_wkv7

FORWARD = {"wkv7": recurrent_wkv7, "gdn": recurrent_gdn, "kda": recurrent_kda}
BACKWARD = {"wkv7": backward_wkv7, "gdn": backward_gdn, "kda": backward_kda}
OPS = ["wkv7", "gdn", "kda"]
DOMAINS = ("model", "stress", "uniform")
FD_TOL, AUTOGRAD_TOL = 1e-6, 1e-10


def rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-300))


def assert_elementwise(got, want, what) -> None:
    """Entry by entry (so tiny gradients, e.g. through ``e^-30`` decays, are checked too)."""
    got, want = np.asarray(got), np.asarray(want)
    bad = np.abs(got - want) > AUTOGRAD_TOL * np.abs(want) + 1e-14 * np.abs(want).max()
    assert not bad.any(), (what, got[bad][:4], want[bad][:4])


def case_inputs(op: str, domain: str, B: int, T: int, H: int, N: int, h0: bool = True, seed: int = 0) -> dict:
    x = generate(Case(op, domain, Shape(B, T, H, N, h0=h0), "fp32", seed))
    return {n: (a.astype(np.float64) if isinstance(a, np.ndarray) else a) for n, a in x.items()}


def upstream(inputs: dict, seed: int, final: bool = True):
    rng = np.random.default_rng(1000 + seed)
    B, _, H, K = inputs["k"].shape
    V = inputs["v"].shape[-1]
    dy = rng.standard_normal(inputs["v"].shape)
    return dy, (rng.standard_normal((B, H, V, K)) if final else None)


def loss(op: str, inputs: dict, dy, dstate) -> float:
    out = FORWARD[op](**inputs)
    return float((out["y"] * dy).sum() + (0.0 if dstate is None else (out["state"] * dstate).sum()))


def loss_magnitude(op: str, inputs: dict, dy, dstate) -> float:
    """``Σ|dy ⊙ y| + Σ|dstate ⊙ S_T|``: the scale of the rounding error of one loss evaluation."""
    out = FORWARD[op](**inputs)
    final = 0.0 if dstate is None else np.abs(out["state"] * dstate).sum()
    return float(np.abs(out["y"] * dy).sum() + final)


# Inputs on which the loss is affine (y and S_T are affine in each of them, all others fixed):
# central differences are exact for any step there, so a large step removes rounding noise.
AFFINE = {"wkv7": {"state", "v", "r"}, "gdn": {"state", "v", "q", "scale"},
          "kda": {"state", "v", "q", "scale"}}


def finite_differences(op: str, inputs: dict, dy, dstate, rel_step: float = 1e-6) -> tuple[dict, dict]:
    """Central differences and, per input, their resolution ``100·eps·Σ|terms of L| / step``.

    The step is ``rel_step`` times the input's largest magnitude (at least 1), or 1000 times that
    magnitude where the loss is affine in the input.
    """
    grads, resolution = {}, {}
    B, _, H, K = inputs["k"].shape
    full = {"state": np.zeros((B, H, inputs["v"].shape[-1], K)), **inputs}
    mag = loss_magnitude(op, full, dy, dstate)
    for name, x in full.items():
        scale = max(float(np.abs(x).max()), 1.0)
        h = (1e3 if name in AFFINE[op] else rel_step) * scale
        resolution[name] = 100 * np.finfo(np.float64).eps * mag / h
        L = lambda value: loss(op, {**full, name: value}, dy, dstate)  # noqa: B023, E731
        if not isinstance(x, np.ndarray):  # scale
            grads[name] = (L(x + h) - L(x - h)) / (2 * h)
            continue
        g = np.empty_like(x)
        for ix in np.ndindex(x.shape):
            hi, lo = x.copy(), x.copy()
            hi[ix] += h
            lo[ix] -= h
            g[ix] = (L(hi) - L(lo)) / (2 * h)
        grads[name] = g
    return grads, resolution


def expected_keys(op: str) -> set[str]:
    if op == "wkv7":
        return {"r", "k", "v", "a", "b", "lw", "state"}
    return {"q", "k", "v", "g", "beta", "scale", "state"}


def check_fd(op: str, inputs: dict, dy, dstate) -> dict[str, float]:
    """``max|got - fd| ≤ 1e-6·max|fd|``, loosened only by the differences' own resolution (which
    matters only for gradients ~1e-6 of the loss's scale, e.g. GDN's ``g`` at ``g ≤ -10``)."""
    got = BACKWARD[op](**inputs, dy=dy, dstate=dstate)
    assert set(got) == expected_keys(op)
    fd, resolution = finite_differences(op, inputs, dy, dstate)
    errs = {}
    for name, want in fd.items():
        assert np.shape(got[name]) == np.shape(want), name
        err = float(np.abs(got[name] - want).max())
        errs[name] = err / max(float(np.abs(want).max()), 1e-300)
        assert err <= FD_TOL * np.abs(want).max() + resolution[name], (op, name, errs[name], resolution[name])
    return errs


FD_SHAPES = [(1, 1, 1, 3), (2, 3, 1, 4), (1, 7, 2, 3), (2, 5, 2, 5)]


@pytest.mark.parametrize("shape", FD_SHAPES, ids=lambda s: "B{}-T{}-H{}-N{}".format(*s))
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", OPS)
def test_backward_matches_finite_differences(op, domain, shape):
    inputs = case_inputs(op, domain, *shape, seed=sum(shape))
    dy, dstate = upstream(inputs, seed=sum(shape))
    check_fd(op, inputs, dy, dstate)


@pytest.mark.parametrize("op", OPS)
def test_backward_without_initial_state_or_final_gradient(op):
    """Absent initial state (zeros; its gradient still returned) and ``dstate=None``."""
    inputs = case_inputs(op, "model", 2, 4, 2, 3, h0=False, seed=3)
    assert "state" not in inputs
    dy, _ = upstream(inputs, seed=3)
    check_fd(op, inputs, dy, None)
    got = BACKWARD[op](**inputs, dy=dy)
    B, _, H, N = inputs["k"].shape
    assert got["state"].shape == (B, H, N, N) and np.abs(got["state"]).max() > 0


def test_gdn_backward_with_value_size_unlike_key_size():
    rng = np.random.default_rng(7)
    B, T, H, K, V = 2, 4, 2, 3, 5
    k = rng.standard_normal((B, T, H, K))
    inputs = {"q": rng.standard_normal((B, T, H, K)), "k": k / np.linalg.norm(k, axis=-1, keepdims=True),
              "v": rng.standard_normal((B, T, H, V)), "g": -rng.uniform(0, 2, (B, T, H)),
              "beta": rng.uniform(0, 1, (B, T, H)), "scale": 0.7, "state": rng.standard_normal((B, H, V, K))}
    dy, dstate = upstream(inputs, seed=7)
    check_fd("gdn", inputs, dy, dstate)


# --- edge cases -----------------------------------------------------------------------------------

def test_wkv7_backward_extreme_decays():
    """Decays at lw ≈ 0 (d → 1) and lw very negative (d ≈ e^-30) in the same head, T = 1 and T = 6."""
    for T in (1, 6):
        inputs = case_inputs("wkv7", "uniform", 2, T, 2, 4, seed=11 + T)
        rng = np.random.default_rng(T)
        inputs["lw"] = np.where(rng.random(inputs["lw"].shape) < 0.5, -1e-7, -30.0)
        dy, dstate = upstream(inputs, seed=T)
        got = backward_wkv7(**inputs, dy=dy, dstate=dstate)
        assert all(np.isfinite(g).all() for g in got.values())
        errs = check_fd("wkv7", inputs, dy, dstate)
        assert max(errs.values()) <= FD_TOL
        want = torch_grads("wkv7", inputs, dy, dstate)
        for name in want:
            assert_elementwise(got[name], want[name], (T, name))


@pytest.mark.parametrize("T", [1, 6])
@pytest.mark.parametrize("op", ["gdn", "kda"])
def test_backward_beta_zero_and_one_and_extreme_gates(op, T):
    """β exactly 0 (no write, no erase) and exactly 1 (full replacement); g ≈ 0 and g = -20 (kda: mixed
    inside one key vector)."""
    inputs = case_inputs(op, "uniform", 2, T, 2, 4, seed=21 + T)
    rng = np.random.default_rng(T)
    shape = inputs["beta"].shape
    inputs["beta"] = np.where(rng.random(shape) < 0.5, 0.0, 1.0)
    inputs["g"] = np.where(rng.random(inputs["g"].shape) < 0.5, -1e-7, -20.0)
    dy, dstate = upstream(inputs, seed=T)
    got = BACKWARD[op](**inputs, dy=dy, dstate=dstate)
    assert all(np.isfinite(g).all() for g in got.values())
    check_fd(op, inputs, dy, dstate)
    want = torch_grads(op, inputs, dy, dstate)
    for name in want:
        assert_elementwise(got[name], want[name], (T, name))
    # β = 0 everywhere: the update is pure decay, so v, k get no gradient
    inputs["beta"] = np.zeros(shape)
    got = BACKWARD[op](**inputs, dy=dy, dstate=dstate)
    assert not got["v"].any() and not got["k"].any() and np.abs(got["beta"]).max() > 0


@pytest.mark.parametrize("op", OPS)
def test_backward_is_finite_on_the_stress_domain(op):
    inputs = case_inputs(op, "stress", 2, 64, 2, 16, seed=5)
    dy, dstate = upstream(inputs, seed=5)
    got = BACKWARD[op](**inputs, dy=dy, dstate=dstate)
    assert all(np.isfinite(g).all() for g in got.values())


@pytest.mark.parametrize("T", [1, 6])
def test_gdn_tiny_gradients_at_strong_gates(T):
    """Stress gates g ∈ [-20, -10] make ``∂L/∂g`` and ``∂L/∂S_0`` ~1e-7 of the loss's scale, below
    what central differences resolve; autograd checks them entry by entry instead."""
    inputs = case_inputs("gdn", "stress", 2, T, 2, 4, seed=3)
    dy, dstate = upstream(inputs, seed=3)
    got, want = backward_gdn(**inputs, dy=dy, dstate=dstate), torch_grads("gdn", inputs, dy, dstate)
    for name in want:
        assert_elementwise(got[name], want[name], name)


# --- independent derivation: torch autograd of a plain torch transcription ------------------------

def torch_forward_wkv7(r, k, v, a, b, lw, state):
    S, ys = state, []
    for t in range(k.shape[1]):
        rt, kt, vt, at, bt, lwt = (x[:, t] for x in (r, k, v, a, b, lw))
        sa = (S * at[:, :, None, :]).sum(-1)  # S_{t-1} a_t, before decay
        S = (S * torch.exp(lwt)[:, :, None, :] + sa[..., :, None] * bt[:, :, None, :]
             + vt[..., :, None] * kt[:, :, None, :])
        ys.append((S * rt[:, :, None, :]).sum(-1))
    return torch.stack(ys, 1), S


def torch_forward_gdn(q, k, v, g, beta, scale, state):
    S, ys = state, []
    for t in range(k.shape[1]):
        kt = k[:, t]
        S = S * torch.exp(g[:, t])[:, :, None, None]
        pred = torch.matmul(S, kt[..., None])[..., 0]
        S = S + (beta[:, t, :, None] * (v[:, t] - pred))[..., :, None] * kt[:, :, None, :]
        ys.append(scale * torch.matmul(S, q[:, t, ..., None])[..., 0])
    return torch.stack(ys, 1), S


def torch_forward_kda(q, k, v, g, beta, scale, state):
    S, ys = state, []
    for t in range(k.shape[1]):
        kt = k[:, t]
        S = S * torch.exp(g[:, t])[:, :, None, :]  # each key column by its own gate
        pred = torch.matmul(S, kt[..., None])[..., 0]
        S = S + (beta[:, t, :, None] * (v[:, t] - pred))[..., :, None] * kt[:, :, None, :]
        ys.append(scale * torch.matmul(S, q[:, t, ..., None])[..., 0])
    return torch.stack(ys, 1), S


TORCH_FORWARD = {"wkv7": torch_forward_wkv7, "gdn": torch_forward_gdn, "kda": torch_forward_kda}


def torch_grads(op: str, inputs: dict, dy, dstate) -> dict[str, np.ndarray]:
    B, _, H, K = inputs["k"].shape
    full = {"state": np.zeros((B, H, inputs["v"].shape[-1], K)), **inputs}
    tens = {n: torch.tensor(np.asarray(x, np.float64), dtype=torch.float64, requires_grad=True)
            for n, x in full.items()}
    y, S = TORCH_FORWARD[op](**tens)
    L = (y * torch.from_numpy(dy)).sum()
    if dstate is not None:
        L = L + (S * torch.from_numpy(dstate)).sum()
    L.backward()
    return {n: (t.grad.numpy() if t.grad.ndim else float(t.grad)) for n, t in tens.items()}


@pytest.mark.parametrize("h0", [True, False], ids=["h0", "empty"])
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", OPS)
def test_backward_matches_torch_autograd(op, domain, h0):
    inputs = case_inputs(op, domain, 2, 37, 2, 16, h0=h0, seed=1)
    dy, dstate = upstream(inputs, seed=1, final=h0)  # without h0 also without a final-state gradient
    got = BACKWARD[op](**inputs, dy=dy, dstate=dstate)
    assert set(got) == expected_keys(op)
    want = torch_grads(op, inputs, dy, dstate)
    # the transcription itself reproduces the NumPy forward
    tens = {n: torch.tensor(x) if isinstance(x, np.ndarray) else x for n, x in inputs.items()}
    B, _, H, K = inputs["k"].shape
    tens.setdefault("state", torch.zeros(B, H, K, K, dtype=torch.float64))
    y, _ = TORCH_FORWARD[op](**tens)
    assert rel(y.numpy(), FORWARD[op](**inputs)["y"]) <= 1e-12
    for name in want:
        assert rel(got[name], want[name]) <= AUTOGRAD_TOL, (op, domain, name, rel(got[name], want[name]))

