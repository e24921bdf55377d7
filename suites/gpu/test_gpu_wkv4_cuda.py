"""wkvbench's own RWKV-4 CUDA kernel (``wkv4.wkvbench.cuda``) against the float64 oracle, on a GPU.

* forward, with and without an initial state, every value domain: fp32 within a few float32
  round-offs (the stress domain amplifies them, as it does for every fp32 kernel), bf16 at the
  output's own rounding floor (the error of the exact result rounded once to bf16);
* the state is carried exactly: two halves equal one run bit for bit, and in-place state works;
* backward against central finite differences of ``wkvoracle.recurrent_wkv4`` in float64 on a
  tiny case (B=1, T=6, C=4), with upstream gradients of the final state and the initial state's
  gradients, and on a larger case against float64 torch autograd of the same recurrence.

Everything skips with the variant's availability reason where it cannot run (no CUDA device, no
nvcc, a failed build); on such a machine one test checks that the reason is the exact one.
"""

from __future__ import annotations

import numpy as np
import pytest

from wkvkernels._torch import to_torch
from wkvkernels.base import availability
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import round_to
from wkvkernels.wkv4 import wkvbench_cuda as w4
from wkvoracle.inputs import generate
from wkvoracle.wkv4 import recurrent_wkv4

NAME = "wkv4.wkvbench.cuda"
STATE = ("aa", "bb", "pp")
AV = availability(NAME)
gpu = pytest.mark.skipif(not AV, reason=AV.reason or "")


def rel_rms(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.sqrt(np.mean((got - want) ** 2) / max(np.mean(want ** 2), 1e-300)))


def run_variant(case: Case):
    v = w4.Wkv4WkvbenchCuda()
    inputs = generate(case)
    want = recurrent_wkv4(**v.effective_inputs(inputs, case.dtype))
    got = v.to_canonical(v.run(v.prepare(inputs, case)))
    return got, want


def test_reason_without_a_device_is_exact():
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        assert AV.reason == "torch not installed"
        return
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert AV.reason == "no CUDA device (torch.cuda.is_available() is False)"


# --------------------------------------------------------------------------- forward

FP32_BOUND = {"uniform": 2e-6, "model": 2e-5, "stress": 3e-4}
SHAPES = [Shape(2, 37, 1, 128, h0=True), Shape(2, 64, 1, 64), Shape(1, 1, 1, 96, h0=True),
          Shape(3, 300, 1, 200, h0=True)]


@gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("domain", ["uniform", "model", "stress"])
def test_forward_fp32_matches_oracle(domain, shape):
    got, want = run_variant(Case("wkv4", domain, shape, "fp32"))
    for name in ("y", *STATE):
        assert np.isfinite(got[name]).all(), name
        err = rel_rms(got[name], want[name])
        assert err < FP32_BOUND[domain], (name, err)


@gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("domain", ["uniform", "model", "stress"])
def test_forward_bf16_at_the_rounding_floor(domain, shape):
    got, want = run_variant(Case("wkv4", domain, shape, "bf16"))
    floor = rel_rms(round_to(want["y"], "bf16"), want["y"])
    err = rel_rms(got["y"], want["y"])
    assert np.isfinite(got["y"]).all()
    assert err <= 1.2 * floor + 1e-6, (err, floor)
    for name in STATE:  # the state is float32 whatever the case dtype
        assert rel_rms(got[name], want[name]) < FP32_BOUND[domain], name


@gpu
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_state_carries_exactly_and_in_place(dtype):
    import torch

    case = Case("wkv4", "model", Shape(2, 50, 1, 64, h0=True), dtype)
    x = generate(case)
    t = {n: to_torch(x[n], dtype, "cuda") for n in ("k", "v")}
    p = {n: to_torch(x[n], "fp32", "cuda") for n in ("w4", "u")}
    s0 = tuple(to_torch(x[n], "fp32", "cuda") for n in STATE)
    y, *sT = w4.wkv4_forward(t["k"], t["v"], p["w4"], p["u"], *s0)
    # the same run in two pieces, the state updated in place between them
    s = tuple(a.clone() for a in s0)
    ys = []
    for part in (slice(0, 23), slice(23, 50)):
        yp = torch.empty_like(t["k"][:, part])
        kp, vp = t["k"][:, part].contiguous(), t["v"][:, part].contiguous()
        w4.launch_forward(kp, vp, p["w4"], p["u"], yp, s, s)
        ys.append(yp)
    assert torch.equal(torch.cat(ys, dim=1), y)
    for a, b in zip(s, sT, strict=True):
        assert torch.equal(a, b)


# --------------------------------------------------------------------------- backward


def finite_differences(inputs: dict, dy, dstate: dict, h: float = 1e-6) -> dict:
    """Central differences of ``<dy, y> + sum <dstate[n], state_T[n]>`` through the float64 oracle."""

    def loss(x):
        out = recurrent_wkv4(**x)
        return (out["y"] * dy).sum() + sum((out[n] * g).sum() for n, g in dstate.items())

    grads = {}
    for name, x in inputs.items():
        g = np.empty_like(x)
        for ix in np.ndindex(x.shape):
            hi, lo = x.copy(), x.copy()
            hi[ix] += h
            lo[ix] -= h
            g[ix] = (loss({**inputs, name: hi}) - loss({**inputs, name: lo})) / (2 * h)
        grads[name] = g
    return grads


def tiny(h0: bool, final_grads: bool, dtype: str, seed: int = 0):
    """B=1, T=6, C=4 inputs already rounded to what the kernel sees (float64)."""
    rng = np.random.default_rng(seed)
    B, T, C = 1, 6, 4
    x = {"k": round_to(rng.uniform(-2, 2, (B, T, C)), dtype),
         "v": round_to(rng.standard_normal((B, T, C)), dtype),
         "w4": round_to(-np.exp(rng.uniform(-1, 1, C)), "fp32"), "u": round_to(rng.uniform(-1, 1, C), "fp32")}
    if h0:
        x.update(aa=round_to(rng.standard_normal((B, C)), "fp32"),
                 bb=round_to(rng.uniform(0.5, 2, (B, C)), "fp32"),
                 pp=round_to(rng.standard_normal((B, C)), "fp32"))
    dy = round_to(rng.standard_normal((B, T, C)), dtype)
    dstate = {n: round_to(rng.standard_normal((B, C)), "fp32") for n in STATE} if final_grads else {}
    return x, dy, dstate


@gpu
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("final_grads", [False, True], ids=["dy", "dy+dstate"])
@pytest.mark.parametrize("h0", [False, True], ids=["empty", "h0"])
def test_backward_matches_finite_differences(h0, final_grads, dtype):
    x, dy, dstate = tiny(h0, final_grads, dtype)
    want = finite_differences(x, dy, dstate)
    got = w4.canonical_backward(x, dy, dtype, dstate)
    for name, g in want.items():
        # gk, gv are stored in the case dtype: bf16 rounds them (relative 2^-9 each)
        bound = 1e-2 if dtype == "bf16" and name in ("k", "v") else 1e-4
        err = np.abs(got[name] - g).max() / np.abs(g).max()
        assert err < bound, (name, err)


def torch_reference_grads(x: dict, dy, dstate: dict) -> dict:
    """Float64 autograd (CPU) through the max-tracking recurrence of spec §2.1."""
    import torch

    t = {n: torch.tensor(a, dtype=torch.float64, requires_grad=True) for n, a in x.items()}
    k, v, W, u = t["k"], t["v"], t["w4"], t["u"]
    a, b, p = t["aa"], t["bb"], t["pp"]
    ys = []
    for i in range(k.shape[1]):
        kt, vt = k[:, i], v[:, i]
        q = torch.maximum(p, u + kt)
        e1, e2 = torch.exp(p - q), torch.exp(u + kt - q)
        ys.append((e1 * a + e2 * vt) / (e1 * b + e2))
        q = torch.maximum(p + W, kt)
        e1, e2 = torch.exp(p + W - q), torch.exp(kt - q)
        a, b, p = e1 * a + e2 * vt, e1 * b + e2, q
    final = {"aa": a, "bb": b, "pp": p}
    loss = (torch.stack(ys, 1) * torch.from_numpy(dy)).sum()
    loss = loss + sum((final[n] * torch.from_numpy(g)).sum() for n, g in dstate.items())
    loss.backward()
    return {n: t[n].grad.numpy() for n in x}


@gpu
@pytest.mark.parametrize("domain", ["uniform", "model", "stress"])
def test_backward_matches_float64_autograd(domain):
    case = Case("wkv4", domain, Shape(2, 64, 1, 96, h0=True), "fp32")
    x = {n: a.astype(np.float64) for n, a in generate(case).items()}
    rng = np.random.default_rng(3)
    dy = round_to(rng.standard_normal(x["k"].shape), "fp32")
    dstate = {n: round_to(rng.standard_normal(x["aa"].shape), "fp32") for n in STATE}
    want = torch_reference_grads(x, dy, dstate)
    got = w4.canonical_backward(x, dy, "fp32", dstate)
    bound = 1e-3 if domain == "stress" else 1e-5
    for name, g in want.items():
        assert np.isfinite(got[name]).all(), name
        assert rel_rms(got[name], g) < bound, (name, rel_rms(got[name], g))
