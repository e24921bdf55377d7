"""ggml's CUDA WKV-6, WKV-7, GLA and gated-delta-net kernels against the float64 oracle (GPU box only).

Runs ``wkv6/wkv7/gla/gdn.ggml.cuda`` (ggml-python built with ``tools/build_ggml_cuda.sh``) and
pins what the CPU adapters pin, now for ggml-cuda's kernels (spec §3.2, §4.5, §5.1): the output
and final state match the oracle at fp32 rounding level in the orientation the op mixins declare
(the same as ggml's CPU ops), with and without an initial state, for every head size the kernels
have; GDN's snapshot slots; ``dst`` is fully written (NaN-poisoned before) and nothing past it
(guard tensor); runs repeat bit-identically. The CUDA result is compared with the CPU adapter's
too. Unsupported head sizes are NOT run here: they abort the process (``supports`` refuses them,
tested in ``suites/variants/test_ggml_backend.py``).

Skips with the exact reason (no CUDA build, no device, wrong architecture) elsewhere.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from wkvkernels._ggml import env as ggml_env
from wkvkernels.base import get
from wkvkernels.cases import Case, Shape
from wkvoracle import ORACLES
from wkvoracle.inputs import generate

_MISSING = ggml_env.cuda_unavailable()
pytestmark = [pytest.mark.thirdparty, pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "")]

OPS = ("wkv6", "wkv7", "gla", "gdn")
# Not yet measured on a GPU; ggml's CPU code measures 0.3e-7 .. 2.2e-7 on these shapes. ggml-cuda
# compiles with -use_fast_math: the WKV/GLA kernels are exp-free fp32 FMA loops (same bound as the
# CPU), but GDN's expf(g) becomes __expf (a few ulp more per step), hence its looser bound.
FP32_REL = {"wkv6": 2e-6, "wkv7": 2e-6, "gla": 2e-6, "gdn": 1e-5}


def variant(op: str, device: str):
    importlib.import_module(f"wkvkernels.{op}.ggml_{device}")
    return get(f"{op}.ggml.{device}")


def rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def shapes(op: str) -> list[Shape]:
    heads = ggml_env.CUDA_HEAD_SIZES[op]
    out = [Shape(2, 37, 2, 64, h0=True), Shape(1, 1, 2, 64, h0=True), Shape(2, 64, 1, 64),
           Shape(1, 256, 1, 64, h0=True), Shape(8, 128, 4, 64, h0=True)]
    out += [Shape(2, 19, 3, n, h0=True) for n in heads if n != 64]
    return out


CASES = [pytest.param(op, s, id=f"{op}-{s}") for op in OPS for s in shapes(op)]


@pytest.mark.parametrize(("op", "shape"), CASES)
def test_cuda_matches_oracle_and_cpu(op, shape):
    case = Case(op, "model", shape, "fp32")
    cu, cpu = variant(op, "cuda"), variant(op, "cpu")
    assert cu.supports(case), cu.supports(case).reason
    inputs = generate(case)
    native = cu.prepare(inputs, case)
    assert np.isnan(native.read()).all()  # poisoned before the first run
    out = cu.to_canonical(cu.run(native))
    ref = ORACLES[op](**cu.effective_inputs(inputs, "fp32"))
    err = {t: rel(out[t], ref[t]) for t in ("y", "state")}
    assert max(err.values()) < FP32_REL[op], err
    if cpu.supports(case):
        want = cpu.to_canonical(cpu.run(cpu.prepare(inputs, case)))
        diff = {t: rel(out[t], want[t]) for t in ("y", "state")}
        assert max(diff.values()) < FP32_REL[op], diff


@pytest.mark.parametrize("op", OPS)
def test_cuda_other_state_orientation_is_wrong(op):
    cu = variant(op, "cuda")
    flipped = type("Flipped", (type(cu),), {"state_key_major": not cu.state_key_major})()
    case = Case(op, "model", Shape(2, 5, 2, 64, h0=True), "fp32")
    inputs = generate(case)
    out = flipped.to_canonical(flipped.run(flipped.prepare(inputs, case)))
    ref = ORACLES[op](**cu.effective_inputs(inputs, "fp32"))
    assert min(rel(out[t], ref[t]) for t in ("y", "state")) > 0.1


def test_cuda_gdn_snapshots():
    """ggml-cuda takes a separate kernel (``keep_rs_t``) for K > 1: slot j = state after token T-1-j."""
    case = Case("gdn", "model", Shape(2, 5, 2, 64, h0=True), "fp32")
    inputs = generate(case)
    K, (B, T, H, N) = 3, inputs["q"].shape
    v3 = type("Gdn3", (type(variant("gdn", "cuda")),), {"snapshots": K})()
    slots = v3.run(v3.prepare(inputs, case)).read()[B * T * H * N:].reshape(K, B, H, N, N).astype(np.float64)
    eff = v3.effective_inputs(inputs, "fp32")
    for j in range(K):
        cut = {n: (x[:, : T - j] if n in ("q", "k", "v", "g", "beta") else x) for n, x in eff.items()}
        assert rel(slots[j], ORACLES["gdn"](**cut)["state"]) < FP32_REL["gdn"], j


@pytest.mark.parametrize("op", OPS)
def test_cuda_repeat_is_identical(op):
    case = Case(op, "model", Shape(2, 37, 2, 64, h0=True), "fp32")
    cu, inputs = variant(op, "cuda"), generate(case)
    native = cu.prepare(inputs, case)
    first = cu.to_canonical(cu.run(native))
    for _ in range(3):
        cu.run(native)
    native.synchronize()
    again = cu.to_canonical(native)
    for t in ("y", "state"):
        assert np.array_equal(first[t], again[t]), t


def test_cuda_build_facts():
    import ggml

    assert ggml.GGML_USE_CUDA and ggml.ggml_backend_cuda_get_device_count() >= 1
    assert ggml_env.cuda_description(0)
    assert ggml_env.cuda_build_archs(), ggml_env.cuda_features()
