"""Conventions of ggml's CPU WKV-6, WKV-7, GLA and gated-delta-net ops, pinned on small shapes.

What is pinned (spec §3.2, §4.5, §5.1, §8):

* each adapter matches the float64 oracle at fp32 rounding level, with and without an initial
  state (ggml requires one; the adapters pass zeros), including B=1, T=1;
* state orientation: wkv6 and GLA keep ``[key][value]`` (the canonical transpose), wkv7 and GDN
  ``[value][key]``; the other orientation is wrong;
* decays: wkv6/wkv7/GLA take the multiplicative ``exp(lw)``, GDN the log gate itself;
* GLA's scale is an argument; GDN's is fixed at ``1/sqrt(N)`` and a case asking for another raises
  ``Unsupported`` (a SKIP);
* GDN's K snapshot slots: slot ``j`` is the state after token ``T-1-j``, slot 0 the final state;
* the wkv7 CPU SIMD loop needs ``N % GGML_F32_STEP == 0``: below that it is wrong and writes past
  its ``dst`` (caught by the guard band);
* the plan runs ``N_THREADS`` threads with results identical to one thread; graphs are freed.

Every check runs the real ggml-python build against the oracle; the module skips with the
availability reason when ggml-python is missing.
"""

from __future__ import annotations

import gc
import importlib
import os

import numpy as np
import pytest

from wkvkernels._ggml import env as ggml_env
from wkvkernels._ggml import graphs as ggml_graphs
from wkvkernels.base import Unsupported, get
from wkvkernels.cases import Case, Shape
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

_MISSING = ggml_env.ggml_unavailable()
pytestmark = [pytest.mark.thirdparty, pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "")]


def module(op: str):
    """The adapter module of ``op`` (importing it registers the variant)."""
    return importlib.import_module(f"wkvkernels.{op}.ggml_cpu")


def variant(op: str):
    module(op)
    return get(f"{op}.ggml.cpu")


OPS = ("wkv6", "wkv7", "gla", "gdn")
SMALL = Shape(2, 5, 2, 64, h0=True)
FP32_REL = 2e-6  # measured 0.3e-7 .. 1.6e-7 (y and state, N=64, all domains, 2026-11-22)
WRONG = 0.1  # a convention error shows up as an O(1) relative error


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def errors(variant, inputs: dict, case: Case, ref_inputs: dict | None = None) -> dict[str, float]:
    """Relative L2 error of ``y`` and ``state`` against the oracle fed ``ref_inputs`` (default: the same)."""
    ref_inputs = inputs if ref_inputs is None else ref_inputs
    ref = ORACLES[variant.operator](**variant.effective_inputs(ref_inputs, case.dtype))
    out = variant.to_canonical(variant.run(variant.prepare(inputs, case)))
    return {t: rel(out[t], ref[t]) for t in ("y", "state")}


SHAPES = [SMALL, Shape(1, 1, 1, 64), Shape(1, 1, 2, 64, h0=True), Shape(2, 3, 1, 128)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_matches_oracle(op, shape):
    case = Case(op, "model", shape, "fp32")
    v = variant(op)
    assert v.supports(case), v.supports(case).reason
    err = errors(v, generate(case), case)
    assert max(err.values()) < FP32_REL, err


@pytest.mark.parametrize("op", OPS)
def test_fp32_only(op):
    ok = variant(op).supports(Case(op, "model", SMALL, "bf16"))
    assert not ok and "bf16" in ok.reason


@pytest.mark.parametrize("op", OPS)
def test_other_state_orientation_is_wrong(op):
    """wkv6/GLA keep ``[key][value]``, wkv7/GDN ``[value][key]``: the flipped choice breaks both outputs."""
    v = variant(op)
    flipped = type("Flipped", (type(v),), {"state_key_major": not v.state_key_major})()
    case = Case(op, "model", SMALL, "fp32")
    err = errors(flipped, generate(case), case)
    assert min(err.values()) > WRONG, err
    assert v.state_key_major == (op in ("wkv6", "gla"))


@pytest.mark.parametrize("op", ["wkv6", "wkv7", "gla"])
def test_decay_is_multiplicative(op, monkeypatch):
    """Feeding the log decay itself (as the canonical form and FLA take it) is wrong."""
    monkeypatch.setattr(ggml_graphs, "exp_f32", lambda lw: np.asarray(lw, np.float32))
    case = Case(op, "model", SMALL, "fp32")
    err = errors(variant(op), generate(case), case)
    assert err["y"] > WRONG, err


def test_gdn_gate_is_log():
    """GDN exponentiates its gate itself: feeding ``exp(g)`` is wrong."""
    case = Case("gdn", "model", SMALL, "fp32")
    inputs = generate(case)
    err = errors(variant("gdn"), dict(inputs, g=np.exp(inputs["g"]).astype(np.float32)), case, inputs)
    assert err["state"] > WRONG, err


def test_gla_scale_is_an_argument():
    case = Case("gla", "model", SMALL, "fp32")
    inputs = dict(generate(case), scale=0.3)
    err = errors(variant("gla"), inputs, case)
    assert max(err.values()) < FP32_REL, err


def test_gdn_scale_is_fixed():
    case = Case("gdn", "model", SMALL, "fp32")
    inputs = generate(case)
    assert inputs["scale"] == pytest.approx(64 ** -0.5, rel=1e-12)
    with pytest.raises(Unsupported, match=r"1/sqrt\(N\)"):
        variant("gdn").prepare(dict(inputs, scale=1.0), case)


def test_gdn_snapshot_slots():
    """With K=3, slot j is the state after token T-1-j; slot 0 (the adapter's read-out) is the final one."""
    case = Case("gdn", "model", SMALL, "fp32")
    inputs = generate(case)
    K, (B, T, H, N) = 3, inputs["q"].shape
    v3 = type("Gdn3", (type(variant("gdn")),), {"snapshots": K})()
    native = v3.run(v3.prepare(inputs, case))
    slots = native.read()[B * T * H * N:].reshape(K, B, H, N, N).astype(np.float64)
    eff = v3.effective_inputs(inputs, "fp32")
    for j in range(K):
        cut = {n: (x[:, : T - j] if n in ("q", "k", "v", "g", "beta") else x) for n, x in eff.items()}
        assert rel(slots[j], ORACLES["gdn"](**cut)["state"]) < FP32_REL, j
    assert np.array_equal(v3.to_canonical(native)["state"], slots[0])


def test_wkv7_simd_step_of_this_build():
    step = ggml_env.f32_simd_step()
    v = variant("wkv7")
    assert v.supports(Case("wkv7", "model", Shape(1, 1, 1, 64), "fp32"))
    if step is None:
        assert v.supports(Case("wkv7", "model", Shape(1, 1, 1, 8), "fp32"))
        return
    ok = v.supports(Case("wkv7", "model", Shape(1, 1, 1, step // 2), "fp32"))
    assert not ok
    assert f"N % {step} == 0 ({ggml_env.simd_name()} build), got N={step // 2}" in ok.reason
    if ggml_env.simd_name() == "AVX-512":
        assert step == 64


def test_wkv7_below_simd_step_is_wrong():
    """What ``supports`` guards against: at N=8 the SIMD loop runs past every state row (spec §4.5)."""
    if (ggml_env.f32_simd_step() or 0) <= 8:
        pytest.skip(f"this build's wkv7 CPU loop ({ggml_env.simd_name()}) handles N=8")
    case = Case("wkv7", "model", Shape(2, 5, 2, 8, h0=True), "fp32")
    v = variant("wkv7")
    assert not v.supports(case)
    inputs = generate(case)
    native = v.run(v.prepare(inputs, case))
    with pytest.raises(RuntimeError, match="wrote past the end of dst"):
        native.read()
    raw = v.unpack(native.read(check_guard=False).astype(np.float64), 2, 5, 2, 8)
    ref = ORACLES["wkv7"](**v.effective_inputs(inputs, "fp32"))
    for t in ("y", "state"):
        assert not np.isfinite(raw[t]).all() or rel(raw[t], ref[t]) > WRONG, t


@pytest.mark.parametrize("op", ["wkv6", "gdn"])
def test_threads_and_repeat(op, monkeypatch):
    """The plan runs N_THREADS threads, bit-identical to one thread; repeated runs are idempotent."""
    case = Case(op, "model", SMALL, "fp32")
    v, inputs = variant(op), generate(case)
    native = v.prepare(inputs, case)
    assert native.n_threads == ggml_env.N_THREADS == 2
    first = v.to_canonical(v.run(native))
    again = v.to_canonical(v.run(v.run(native)))
    monkeypatch.setattr(ggml_env, "N_THREADS", 1)
    single = v.to_canonical(v.run(v.prepare(inputs, case)))
    for t in ("y", "state"):
        assert np.array_equal(first[t], again[t]) and np.array_equal(first[t], single[t]), t


def test_graphs_are_freed():
    case = Case("wkv6", "model", Shape(1, 1, 1, 64), "fp32")
    v, inputs = variant("wkv6"), generate(case)
    native = v.prepare(inputs, case)
    fin = native._finalizer
    del native
    gc.collect()
    assert not fin.alive
    if not os.path.exists("/proc/self/statm"):
        return

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    for _ in range(20):
        v.to_canonical(v.run(v.prepare(inputs, case)))
    before = rss()
    for _ in range(200):
        v.to_canonical(v.run(v.prepare(inputs, case)))
    assert rss() - before < 4 * 2**20
