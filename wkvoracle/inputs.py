"""Seeded input generators, one per operator, over three named value domains.

* ``model``: the distributions trained models feed the kernels (RWKV-7 exactly as spec §4.1:
  ``lw = -e^{-1/2}·σ(x_w) ∈ (-0.6065, 0)``, ``a = -κ̂``, ``b = κ̂ ⊙ iclr``; RWKV-4/6 decays from
  ``time_decay`` ranges of trained checkpoints; GDN with unit-norm q/k, ``β = σ(x)``, ``g = logσ(x)/16``
  as FLA's tests use; GLA as QRWKV-6 feeds ``ggml_gated_linear_attn``).
* ``stress``: decays close to 0 and close to 1 in the same head, 4-15x larger magnitudes (kept so
  that every exact output still fits fp16), extreme ``β`` / ``iclr``; the stress set adds a long sequence.
* ``const`` (wkv6 only): the model domain with each sequence's decay constant over time,
  ``lw[:, t] = lw[:, 0]`` (per head and key it still varies), as RWKV-5's kernels take it.
* KDA (``kda``): gdn's q, k, v and ``β`` with a gate per key: Kimi Linear's ``g = -A·softplus(f)``
  (``model``; FLA's layer at initialization), gdn's stress gates per key, ggml's gdn gate range per key.
* ``uniform``: the ranges of ggml's ``test-backend-ops`` (U(-1, 1) everywhere; GDN: ``g ~ U(-20, -1e-4)``,
  ``β ~ U(0, 1)``, ``v ~ U(-0.3, 5)``, L2-normalized q/k). ggml draws its multiplicative decays from
  U(-1, 1); a negative decay has no ``lw = log d``, so decays here are U(1e-6, 1). For wkv4 (no ggml op)
  this is U(-1, 1) with ``W = -exp(U(-1, 1))``; for gdn_wy it is the FLA unit test's ``A = I + 0.1·N``.

The edge set adds edge domains (one quantity at its limit: ``lw0``, ``lwneg``, ``beta0``, ``beta1``) and
boundary domains at the ends of the input ranges that kernel packages document (``ggmlend``, ``hmix``,
``safegate`` for wkv7 and kda; ``BOUNDARY_RANGES`` cites each range's package, file and version).

``generate(case)`` is a pure function of the case id (dtype excluded: every dtype of a case sees
the same canonical inputs, rounded by the variant). Arrays are float32, the canonical precision.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .conventions import SAFE_GATE, SAFE_LOWER_BOUND
from .gdn_wy import kkt_inverse

LW_MODEL_BOUND = -0.6065306597126334  # -exp(-1/2), RWKV-7's decay bound (spec §4.1)


def _rng(case) -> np.random.Generator:
    s = case.shape
    key = [case.seed, zlib.crc32(case.op.encode()), zlib.crc32(case.domain.encode()),
           s.B, s.T, s.H, s.N, s.C, int(s.h0)]
    if s.in_conventions:  # only then: the inputs of every case without conventions stay as they were
        key += [s.HV, s.P, s.pad, int(s.varlen), int(s.raw), int(s.qkn)] + ([1] if s.safe else [])
    return np.random.default_rng(key)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _normalize(x, eps: float = 0.0):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps or 1e-30)


def _two_sided_log_decay(rng, shape) -> np.ndarray:
    """Per-key log decays that are half close to 0 (d ≈ 1) and half close to -inf (d ≈ 0)."""
    near_one = -(10.0 ** rng.uniform(-7, -3, shape))
    near_zero = -rng.uniform(10.0, 30.0, shape)
    return np.where(rng.random(shape) < 0.5, near_one, near_zero)


def _wkv4(rng, domain, s) -> dict:
    B, T, C = s.B, s.T, s.H * s.N
    if domain == "model":
        W = -np.exp(rng.uniform(-5.0, 1.5, C))
        u, k, v = rng.uniform(-1, 1, C), 2 * rng.standard_normal((B, T, C)), rng.standard_normal((B, T, C))
        st = (rng.standard_normal((B, C)), rng.uniform(0.5, 2.0, (B, C)), 2 * rng.standard_normal((B, C)))
    elif domain == "stress":
        W = -np.where(rng.random(C) < 0.5, 10.0 ** rng.uniform(-6, -3, C), rng.uniform(10, 30, C))
        u, k, v = 5 * rng.standard_normal(C), 15 * rng.standard_normal((B, T, C)), 10 * rng.standard_normal((B, T, C))
        st = (10 * rng.standard_normal((B, C)), rng.uniform(0.1, 10.0, (B, C)), 30 * rng.standard_normal((B, C)))
    else:
        W = -np.exp(rng.uniform(-1, 1, C))
        u, k, v = rng.uniform(-1, 1, C), rng.uniform(-1, 1, (B, T, C)), rng.uniform(-1, 1, (B, T, C))
        st = (rng.uniform(-1, 1, (B, C)), rng.uniform(0.1, 1, (B, C)), rng.uniform(-1, 1, (B, C)))
    out = {"k": k, "v": v, "w4": W, "u": u}
    if s.h0:
        out.update(aa=st[0], bb=st[1], pp=st[2])
    return out


def _state(rng, domain, s, scale_model: float = 0.5) -> np.ndarray:
    shape = (s.B, s.H, s.N, s.N)
    if domain == "uniform":
        return rng.uniform(-1, 1, shape)
    return (scale_model if domain == "model" else 10 * scale_model) * rng.standard_normal(shape)


def _wkv6(rng, domain, s) -> dict:
    shape = (s.B, s.T, s.H, s.N)
    if domain == "const":  # the model domain with each sequence's decay held at its token-0 value
        out = _wkv6(rng, "model", s)
        out["lw"] = np.ascontiguousarray(np.broadcast_to(out["lw"][:, :1], shape))
        return out
    if domain == "model":
        r, k, v = (rng.standard_normal(shape) for _ in range(3))
        lw, u = -np.exp(rng.uniform(-6.0, 0.5, shape)), 0.5 * rng.standard_normal((s.H, s.N))
    elif domain == "stress":
        r, k, v = (4 * rng.standard_normal(shape) for _ in range(3))
        lw, u = _two_sided_log_decay(rng, shape), 4 * rng.standard_normal((s.H, s.N))
    else:
        r, k, v = (rng.uniform(-1, 1, shape) for _ in range(3))
        lw, u = np.log(rng.uniform(1e-6, 1, shape)), rng.uniform(-1, 1, (s.H, s.N))
    out = {"r": r, "k": k, "v": v, "lw": lw, "u": u}
    if s.h0:
        out["state"] = _state(rng, domain, s)
    return out


def _wkv7(rng, domain, s) -> dict:
    shape = (s.B, s.T, s.H, s.N)
    if domain == "uniform":
        r, k, v = (rng.uniform(-1, 1, shape) for _ in range(3))
        a, b = (_normalize(rng.uniform(-1, 1, shape), 1e-7) for _ in range(2))
        lw = np.log(rng.uniform(1e-6, 1, shape))
    else:
        mag = 1.0 if domain == "model" else 4.0
        r, v, kraw = (mag * rng.standard_normal(shape) for _ in range(3))
        kk = _normalize(rng.standard_normal(shape))
        if domain == "model":
            iclr = _sigmoid(rng.standard_normal(shape))
            lw = LW_MODEL_BOUND * _sigmoid(rng.normal(-1.0, 2.0, shape))
        else:  # in-context learning rates at 0 and 1; decays at the model bound and near 1
            iclr = np.where(rng.random(shape) < 0.5, 1e-4, 1 - 1e-4)
            lw = np.where(rng.random(shape) < 0.5, LW_MODEL_BOUND * (1 - 1e-6), -(10.0 ** rng.uniform(-7, -3, shape)))
        k = kraw * (1 + (iclr - 1) * rng.uniform(0, 1, shape))
        a, b = -kk, kk * iclr
    out = {"r": r, "k": k, "v": v, "a": a, "b": b, "lw": lw}
    if s.h0:
        out["state"] = _state(rng, domain, s)
    return out


def _gla(rng, domain, s) -> dict:
    shape = (s.B, s.T, s.H, s.N)
    if domain == "model":  # QRWKV-6 through ggml_gated_linear_attn: k <- k (1 - g)
        q, k, v = (rng.standard_normal(shape) for _ in range(3))
        lw = -np.exp(rng.uniform(-6.0, 0.5, shape))
        k = k * (1 - np.exp(lw))
    elif domain == "stress":
        q, k, v = (4 * rng.standard_normal(shape) for _ in range(3))
        lw = _two_sided_log_decay(rng, shape)
    else:
        q, k, v = (rng.uniform(-1, 1, shape) for _ in range(3))
        lw = np.log(rng.uniform(1e-6, 1, shape))
    out = {"q": q, "k": k, "v": v, "lw": lw, "scale": float(s.N) ** -0.5}
    if s.h0:
        out["state"] = _state(rng, domain, s)
    return out


EDGE_LW0 = (-9.0, -6.0)  # lw0: log decays -(10^U(-9, -6)): decays within 1e-6 of 1
EDGE_LWNEG = (20.0, 60.0)  # lwneg: log decays -U(20, 60): decays 1e-9 .. 1e-26


def _edge_log_decay(rng, domain, shape) -> np.ndarray | None:
    """The log decays of the ``lw0`` / ``lwneg`` edge domains, None for any other domain."""
    if domain == "lw0":
        return -(10.0 ** rng.uniform(*EDGE_LW0, shape))
    if domain == "lwneg":
        return -rng.uniform(*EDGE_LWNEG, shape)
    return None


def _edge(op: str, rng, domain, s) -> dict:
    """Edge domains: the model domain's inputs with one quantity at its limit (drawn after them, so
    every other input equals nothing in particular but stays reproducible per case id)."""
    out = GENERATORS[op](rng, "model", s)
    if op == "wkv4":
        C = s.H * s.N
        out["w4"] = (-(10.0 ** rng.uniform(*EDGE_LW0, C)) if domain == "lw0" else -rng.uniform(*EDGE_LWNEG, C))
    elif op in ("wkv6", "wkv7", "gla") and domain in ("lw0", "lwneg"):
        out["lw"] = _edge_log_decay(rng, domain, out["lw"].shape)
    elif op == "wkv7":  # beta0 / beta1: the in-context learning rate iclr at 0 / 1, b = kk * iclr = -a * iclr
        out["b"] = -out["a"] * (0.0 if domain == "beta0" else 1.0)
    elif op in ("gdn", "kda"):  # kda: the same on its per-key gate
        if domain in ("lw0", "lwneg"):
            out["g"] = _edge_log_decay(rng, domain, out["g"].shape)
        else:
            out["beta"] = np.full(out["beta"].shape, 0.0 if domain == "beta0" else 1.0)
    return out


# ---- Boundary domains: the ends of documented input ranges (edge set) --------------------------------
# Each range is one a kernel package documents or tests with, cited where it is used (BOUNDARY_RANGES)
# and in docs/verification.md. Every value is a float32 at an end of its range, on the inside of an end
# the range excludes, so that the canonical float32 inputs stay within the range as stated.

def _f32_inside(x: float, toward: float) -> float:
    """``x`` as a float32, moved one ulp toward ``toward`` if rounding put it outside (beyond ``x``)."""
    f = np.float32(x)
    if (float(f) - x) * (toward - x) < 0:  # rounding moved it away from the inside
        f = np.nextafter(f, np.float32(toward))
    return float(f)


def _f32_below(x: float) -> float:
    """The largest float32 below ``float32(x)``: the inside end of a half-open ``[lo, x)``."""
    return float(np.nextafter(np.float32(x), np.float32(-np.inf)))


_GGML = ("ggml 0.15.3 (vendored in the ggml-python 0.0.45 sdist; the same ranges at ggml-org/ggml d99724f), "
         "tests/test-backend-ops.cpp")
_FLA = "fla-core 0.6.0"
_FLA_REPO = "fla-org/flash-linear-attention bc3b101"
# ggml draws every tensor it does not name from init_tensor_uniform's default U(-1, 1) (std::uniform_real_
# distribution<float>: [-1, 1)), line 54.
GGML_UNIT = (-1.0, _f32_below(1.0))
# ggml's rwkv_wkv6 / gated_linear_attn / rwkv_wkv7 take the multiplicative decay exp(lw), drawn from the
# same [-1, 1). A negative decay has no log; its positive part (0, 1) ends at 1 - 2^-24 (the largest
# float32 below 1: the weakest decay a float32 decay can hold) and, at 0, at our floor 1e-6 (the uniform
# domain's; ggml's own lower end lw = -inf is no input).
DECAY_WEAKEST = float(np.float32(np.log(np.float64(_f32_below(1.0)))))  # lw = -5.96e-8
DECAY_FLOOR_LW = _f32_inside(float(np.log(1e-6)), 0.0)  # lw = -13.8155 (ours, see above)
# test_gated_delta_net::initialize_tensors (lines 3916-3931): g U(-20, -1e-4), beta U(0, 1),
# v U(-0.3, 5), every other tensor (q, k, state) U(-1, 1); q, k then ggml_l2_norm(eps 1e-6) (line 3912).
GGML_GDN_G = (-20.0, _f32_below(-1e-4))
GGML_GDN_BETA = (0.0, _f32_below(1.0))
GGML_GDN_V = (float(np.float32(-0.3)), _f32_below(5.0))  # ggml's own float32 -0.3f is its lower end
# FLA's RWKV-7 decay bound: fla/layers/rwkv7.py (flash-linear-attention bc3b101, lines 271 and 320) forms
# w = -0.6065306597126334 * sigmoid(.) and calls chunk_rwkv7 with lower_bound=-0.6065306597126334, which
# fla-core 0.6.0's fla/ops/rwkv7/chunk.py documents as "asserts lower_bound <= w < 0" (spec §4.1's bound).
FLA_RWKV7_LOWER_BOUND = _f32_inside(LW_MODEL_BOUND, 0.0)
# FLA's safe gate: fla-core 0.6.0 fla/ops/rwkv7/chunk.py (chunk_rwkv7, and chunk_dplr_delta_rule in
# fla/ops/generalized_delta_rule/dplr/chunk.py): "safe_gate: ... The safe range is approximately [-5, 0)".
FLA_SAFE_GATE_LOWER = -5.0
# FLA's GLA gate: fla/layers/gla.py (bc3b101) gk = logsigmoid(x) / gate_logit_normalizer; FLA's own chunk
# and fused_recurrent GLA tests (tests/ops/test_gla.py, bc3b101) draw x ~ U[0, 1) with normalizers 0.1, 1
# and 10: the strongest tested gate is logsigmoid(0) / 0.1 = -10 ln 2 (a decay of 2^-10 per token).
FLA_GLA_TEST_LOWER = _f32_inside(-10.0 * np.log(2.0), 0.0)
# FLA's KDA safe gate: fla-core 0.6.0 fla/ops/kda/chunk.py, chunk_kda: safe_gate "bounds gates to
# [lower_bound, 0)" (line 290), lower_bound "Recommended value: -5" (line 297), and the call raises unless
# "-5 <= lower_bound < 0" ("the safe range [-5, 0)", line 482): the strongest gate it admits is -5.
_FLA_KDA_SAFE_GATE = (f"strong: {_FLA} fla/ops/kda/chunk.py safe_gate bounds gates to [lower_bound, 0), "
                      "lower_bound 'Recommended value: -5' and 'the safe range [-5, 0)'; weak: the weakest "
                      "float32 decay 1 - 2^-24 (the range's open end 0, as a decay below 1)")


@dataclass(frozen=True)
class Bound:
    """The closed float32 interval ``[lo, hi]`` a boundary domain keeps one input in, and its source.
    ``unit``: the input is L2-normalized over its last axis after drawing in ``[lo, hi]`` (the range is
    the pre-normalization one; the test checks the norm). ``heads``: ``lo`` in the even heads and ``hi``
    in the odd heads (the ``hmix`` / ``safegate`` decays); otherwise each element is ``lo`` or ``hi``."""

    lo: float
    hi: float
    source: str
    unit: bool = False
    heads: bool = False


def _ggml_bounds(op: str) -> dict[str, Bound]:
    uni = f"{_GGML}: init_tensor_uniform default [-1, 1)"
    dec = (f"{_GGML}: the decay of test_rwkv_wkv6 / test_gla / test_rwkv_wkv7 is U(-1, 1); its positive part "
           "ends at 1 - 2^-24 (weakest float32 decay) and at our floor 1e-6")
    if op == "gdn":
        gdn = f"{_GGML}: test_gated_delta_net::initialize_tensors"
        return {"q": Bound(*GGML_UNIT, uni + ", then ggml_l2_norm", unit=True),
                "k": Bound(*GGML_UNIT, uni + ", then ggml_l2_norm", unit=True),
                "v": Bound(*GGML_GDN_V, gdn + ": v U(-0.3, 5)"), "g": Bound(*GGML_GDN_G, gdn + ": g U(-20, -1e-4)"),
                "beta": Bound(*GGML_GDN_BETA, gdn + ": beta U(0, 1)"), "state": Bound(*GGML_UNIT, uni)}
    names = {"wkv6": ("r", "k", "v", "u", "state"), "gla": ("q", "k", "v", "state"),
             "wkv7": ("r", "k", "v", "state")}[op]
    out = {n: Bound(*GGML_UNIT, uni) for n in names}
    out["lw"] = Bound(DECAY_FLOOR_LW, DECAY_WEAKEST, dec)
    if op == "wkv7":
        out.update({n: Bound(*GGML_UNIT, uni + ", then ggml_l2_norm (test_rwkv_wkv7)", unit=True) for n in "ab"})
    return out


_HMIX_WEAK = "the weakest float32 decay 1 - 2^-24 (ggml's decay range [-1, 1) at 1)"
# (domain, op) -> {input: Bound}: what each boundary domain keeps at its ends, and whose range that is.
BOUNDARY_RANGES: dict[tuple[str, str], dict[str, Bound]] = {
    **{("ggmlend", op): _ggml_bounds(op) for op in ("wkv6", "wkv7", "gla", "gdn")},
    **{("hmix", op): {"lw": Bound(FLA_GLA_TEST_LOWER, DECAY_WEAKEST, f"strong: {_FLA_REPO} tests/ops/test_gla.py, "
                                  "logsigmoid(U[0, 1)) / 0.1 >= -10 ln 2 (inside ggml's decay range); weak: "
                                  + _HMIX_WEAK, heads=True)} for op in ("wkv6", "gla")},
    ("hmix", "wkv7"): {"lw": Bound(FLA_RWKV7_LOWER_BOUND, DECAY_WEAKEST, f"strong: {_FLA_REPO} fla/layers/rwkv7.py "
                                   f"lower_bound=-0.6065306597126334 ({_FLA} chunk_rwkv7: lower_bound <= w < 0); weak: "
                                   + _HMIX_WEAK, heads=True)},
    ("hmix", "gdn"): {"g": Bound(*GGML_GDN_G, f"{_GGML}: test_gated_delta_net g U(-20, -1e-4), both ends",
                                 heads=True)},
    ("safegate", "wkv7"): {"lw": Bound(FLA_SAFE_GATE_LOWER, DECAY_WEAKEST, f"strong: {_FLA} fla/ops/rwkv7/chunk.py "
                                       "safe_gate 'The safe range is approximately [-5, 0)'; weak: " + _HMIX_WEAK,
                                       heads=True)},
    ("safegate", "kda"): {"g": Bound(FLA_SAFE_GATE_LOWER, DECAY_WEAKEST, _FLA_KDA_SAFE_GATE, heads=True)},
}


def _boundary(op: str, rng, domain, s) -> dict:
    """A boundary domain's inputs (``BOUNDARY_RANGES``). ``ggmlend``: every input that ggml's test draws
    at one end of its range, chosen per element; ``hmix`` / ``safegate``: the model domain's inputs with
    the decay (log gate) at the range's strong end in the even heads and its weak end in the odd heads,
    every token and key, so that one chunk holds both (drawn after the model inputs)."""
    bounds = BOUNDARY_RANGES[(domain, op)]
    if domain == "ggmlend":
        shape = (s.B, s.T, s.H, s.N)
        full = {"state": (s.B, s.H, s.N, s.N), "u": (s.H, s.N), "g": shape[:3], "beta": shape[:3]}
        out = {}
        for name, b in bounds.items():
            if name == "state" and not s.h0:
                continue
            x = np.where(rng.random(full.get(name, shape)) < 0.5, b.lo, b.hi)
            out[name] = _normalize(x, 1e-6 if op == "gdn" else 1e-7) if b.unit else x
        if op in ("gla", "gdn"):
            out["scale"] = float(s.N) ** -0.5
        return out
    out = GENERATORS[op](rng, "model", s)
    ((name, b),) = bounds.items()
    x = np.empty_like(out[name])
    x[:, :, 0::2] = b.lo
    x[:, :, 1::2] = b.hi
    out[name] = x
    return out


def boundary_violations(case, inputs: dict) -> list[str]:
    """Where ``inputs`` (a boundary-domain case's) leave ``BOUNDARY_RANGES`` or miss an end: empty when
    every bounded input lies in ``[lo, hi]`` and sits at its ends as the domain says."""
    out = []
    for name, b in BOUNDARY_RANGES[(case.domain, case.op)].items():
        if name not in inputs:
            if name != "state" or case.shape.h0:
                out.append(f"{name}: missing")
            continue
        x = np.asarray(inputs[name], np.float64)
        if b.unit:
            norms = np.linalg.norm(x, axis=-1)
            if not np.allclose(norms, 1.0, rtol=1e-5, atol=0):
                out.append(f"{name}: not unit-norm (norms {norms.min():.6g}..{norms.max():.6g})")
            continue
        if not np.isfinite(x).all() or x.min() < b.lo or x.max() > b.hi:
            out.append(f"{name}: outside [{b.lo!r}, {b.hi!r}] ({x.min()!r}..{x.max()!r}); source: {b.source}")
        elif b.heads:
            if not ((x[:, :, 0::2] == b.lo).all() and (x[:, :, 1::2] == b.hi).all()):
                out.append(f"{name}: even heads not all at {b.lo!r} or odd heads not all at {b.hi!r}")
        elif not np.isin(x, (b.lo, b.hi)).all():
            out.append(f"{name}: values between the ends {b.lo!r} and {b.hi!r}")
    return out


def _gdn_gates(rng, domain, shape):
    if domain in ("beta0", "beta1"):  # gdn_wy's edge domains (gdn's are set in _edge)
        g = np.log(_sigmoid(rng.standard_normal(shape))) / 16
        return g, np.full(shape, 0.0 if domain == "beta0" else 1.0)
    if domain == "model":
        return np.log(_sigmoid(rng.standard_normal(shape))) / 16, _sigmoid(rng.standard_normal(shape))
    if domain == "stress":
        g = np.where(rng.random(shape) < 0.5, -(10.0 ** rng.uniform(-7, -3, shape)), -rng.uniform(10, 20, shape))
        return g, np.where(rng.random(shape) < 0.5, 1e-4, 1 - 1e-4)
    return rng.uniform(-20, -1e-4, shape), rng.uniform(0, 1, shape)


def _gdn(rng, domain, s) -> dict:
    shape, gshape = (s.B, s.T, s.H, s.N), (s.B, s.T, s.H)
    if domain == "uniform":
        q, k = (_normalize(rng.uniform(-1, 1, shape), 1e-6) for _ in range(2))
        v = rng.uniform(-0.3, 5, shape)
    else:
        q, k = (_normalize(rng.standard_normal(shape)) for _ in range(2))
        v = (1.0 if domain == "model" else 10.0) * rng.standard_normal(shape)
    g, beta = _gdn_gates(rng, domain, gshape)
    out = {"q": q, "k": k, "v": v, "g": g, "beta": beta, "scale": float(s.N) ** -0.5}
    if s.h0:
        out["state"] = _state(rng, domain, s)
    return out


# Kimi Linear's gate (flash-linear-attention 0812a88, fla/layers/kda.py, as fla-core 0.6.0's
# fla/ops/kda/gate.py computes it): g = -exp(A_log) * softplus(f + dt_bias), one per token, head and key,
# with A_log = log U(1, 16) per head and dt_bias = 0 at initialization. f is the low-rank projection
# f_proj(x); its scale is not fixed by the layer, so it is drawn N(0, 1) (ours).
KDA_A_RANGE = (1.0, 16.0)


def _kda(rng, domain, s) -> dict:
    """q, k, v, beta, scale and the state as gdn's domains draw them, then the per-key gate ``g``:
    ``model`` Kimi Linear's (above), ``stress`` each key near 1 or near 0 as gdn's stress gate,
    ``uniform`` ggml's gdn gate range U(-20, -1e-4) per key (ggml has no KDA op)."""
    out = _gdn(rng, domain, s)  # its scalar g is replaced below
    shape = (s.B, s.T, s.H, s.N)
    if domain == "model":
        A = rng.uniform(*KDA_A_RANGE, s.H)[:, None]
        f = rng.standard_normal(shape)
        out["g"] = -A * (np.maximum(f, 0) + np.log1p(np.exp(-np.abs(f))))  # -A softplus(f)
    elif domain == "stress":
        out["g"] = np.where(rng.random(shape) < 0.5, -(10.0 ** rng.uniform(-7, -3, shape)),
                            -rng.uniform(10, 20, shape))
    else:
        out["g"] = rng.uniform(-20, -1e-4, shape)
    return out


def chunk_local_cumsum(g: np.ndarray, chunk: int) -> np.ndarray:
    """Inclusive cumulative sum of ``g`` `[B, T, H]` restarting at every chunk boundary."""
    gc = np.empty_like(g, dtype=np.float64)
    for s0 in range(0, g.shape[1], chunk):
        gc[:, s0 : s0 + chunk] = np.cumsum(g[:, s0 : s0 + chunk], axis=1)
    return gc


def _gdn_wy(rng, domain, s) -> dict:
    shape, gshape, BT = (s.B, s.T, s.H, s.N), (s.B, s.T, s.H), s.C
    if domain == "uniform":  # FLA's test_recompute_w_u_fwd: A = I + 0.1 N (lower), g = 0.1 N
        k, v = rng.standard_normal(shape), rng.standard_normal(shape)
        beta, gc = _sigmoid(rng.standard_normal(gshape)), 0.1 * rng.standard_normal(gshape)
        A = np.zeros((s.B, s.T, s.H, BT))
        for s0 in range(0, s.T, BT):
            n = min(BT, s.T - s0)
            block = np.tril(np.eye(n) + 0.1 * rng.standard_normal((s.B, s.H, n, n)))
            A[:, s0 : s0 + n, :, :n] = block.transpose(0, 2, 1, 3)
        return {"k": k, "v": v, "beta": beta, "A": A, "gc": gc}
    k = _normalize(rng.standard_normal(shape))
    v = (10.0 if domain == "stress" else 1.0) * rng.standard_normal(shape)
    if domain in ("model", "beta0", "beta1"):
        g, beta = _gdn_gates(rng, domain, gshape)
    else:
        g, beta = -rng.uniform(0, 5, gshape), 1 - 10.0 ** rng.uniform(-4, -1, gshape)
    gc = chunk_local_cumsum(g.astype(np.float32).astype(np.float64), BT)
    A = kkt_inverse(k.astype(np.float32), beta.astype(np.float32), gc.astype(np.float32), BT)
    return {"k": k, "v": v, "beta": beta, "A": A, "gc": gc}


GENERATORS: dict[str, Callable] = {
    "wkv4": _wkv4, "wkv6": _wkv6, "wkv7": _wkv7, "gla": _gla, "gdn": _gdn, "gdn_wy": _gdn_wy, "kda": _kda,
}


def _drawn(op: str, rng, domain: str, s) -> dict:
    if domain in ("lw0", "lwneg", "beta0", "beta1") and op != "gdn_wy":
        return _edge(op, rng, domain, s)
    if (domain, op) in BOUNDARY_RANGES:
        return _boundary(op, rng, domain, s)
    return GENERATORS[op](rng, domain, s)


# ---- Production conventions (wkvkernels/cases.py Shape; docs/conventions.md) --------------------------
# Raw gates as Qwen3-Next's and Kimi Linear's layers initialise them (Mamba-2's initialisation):
# A = U(1, 16), so A_log = log A; dt = exp(U(log 1e-3, log 1e-1)) and dt_bias = softplus^-1(dt).
RAW_A_RANGE = (1.0, 16.0)
RAW_DT_RANGE = (1e-3, 1e-1)
# the raw logits a (gate) and b (beta) per domain: a projection's outputs (model), wide (stress), ggml-like
RAW_LOGIT_SCALE = {"model": 1.0, "stress": 6.0}
QKN_SCALE = (0.25, 4.0)  # qkn: each raw q/k vector's norm, drawn per token and head


def _with_conventions(op: str, rng, domain: str, s) -> dict:
    """The inputs of a case in production conventions: the canonical draws of the same problem (one row
    per sequence, value heads throughout), then put into the conventions the shape names."""
    HV, nseq = s.value_heads, s.B
    flat = replace(s, B=1 if s.varlen else s.B, H=HV, HV=0, P=0, pad=0, varlen=False, raw=False, qkn=False, safe=False,
                   h0=s.h0 and not s.varlen)
    out = _drawn(op, rng, domain, flat)
    G = HV // s.H
    if G > 1:  # the key heads: one of every group's G value heads' draws (gdn_wy has no q)
        out.update({n: out[n][:, :, ::G] for n in ("q", "k") if n in out})
    if s.varlen:
        cuts = np.sort(rng.choice(np.arange(1, s.T), s.B - 1, replace=False)) if s.B > 1 else np.array([], int)
        out["cu_seqlens"] = np.array([0, *cuts, s.T], np.int64)
        if s.h0:
            out["state"] = _state(rng, domain, replace(flat, B=nseq))
    if s.P:
        out["state_pool"] = _state(rng, domain, replace(flat, B=s.P))
        idx = rng.permutation(s.P)[:nseq].astype(np.int32)
        idx[rng.choice(nseq, s.pad, replace=False)] = -1
        out["state_indices"] = idx
    if s.raw:
        g, beta = out.pop("g"), out.pop("beta")
        out["A_log"] = np.log(rng.uniform(*RAW_A_RANGE, HV))
        dt = np.exp(rng.uniform(np.log(RAW_DT_RANGE[0]), np.log(RAW_DT_RANGE[1]), (HV, *g.shape[3:])))
        out["dt_bias"] = dt + np.log(-np.expm1(-dt))
        if domain == "uniform":
            out["a"], out["b"] = rng.uniform(-1, 1, g.shape), rng.uniform(-1, 1, beta.shape)
        else:
            scale = RAW_LOGIT_SCALE[domain]
            out["a"], out["b"] = scale * rng.standard_normal(g.shape), scale * rng.standard_normal(beta.shape)
        if s.safe:  # the same draws; the gate's form is marked on the inputs (wkvoracle.conventions.raw_gates)
            out[SAFE_GATE] = SAFE_LOWER_BOUND
    if s.qkn:
        for n in ("q", "k"):
            out[n] = out[n] * rng.uniform(*QKN_SCALE, (*out[n].shape[:-1], 1))
    return out


# domain -> the inputs of its cases: outside case sources (a flashinfer-bench workload's domain
# ``fib-<definition>-<uuid prefix>``, registered by wkvbench/run/fibench.py for the workloads it loaded)
CASE_SOURCES: dict[str, Callable[[Any], dict]] = {}


def generate(case) -> dict:
    """Canonical inputs of ``case`` (float32 arrays; ``scale`` a float where the operator has one; the
    integer ``cu_seqlens`` (int64) and ``state_indices`` (int32) of production conventions). A case of an
    outside source (``CASE_SOURCES``) gets its source's inputs."""
    if case.domain in CASE_SOURCES:
        return CASE_SOURCES[case.domain](case)
    if case.domain.startswith("fib-"):
        raise ValueError(f"case {case.id} is a flashinfer-bench workload: its inputs need its definition and "
                         "workloads loaded (verify --fib-definition D --fib-workloads W; docs/flashinfer-bench.md)")
    if case.shape.in_conventions:
        raw = _with_conventions(case.op, _rng(case), case.domain, case.shape)
    else:
        raw = _drawn(case.op, _rng(case), case.domain, case.shape)
    return {n: (x if not isinstance(x, np.ndarray) or x.dtype.kind in "iu"
                else np.ascontiguousarray(x, dtype=np.float32)) for n, x in raw.items()}
