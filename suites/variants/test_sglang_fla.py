"""SGLang's adapters (wkvkernels/_sglang.py, gdn/sglang_*.py, kda/sglang_triton.py) beyond the verify matrix:
what they convert (the state pool and its guards, the packed decode's one-row q|k|v, the CuTe-DSL decode's
bf16 dt_bias), what they refuse, and the skip reason without sglang. Runs without sglang (the CI env);
the kernels themselves run in sglang's own virtualenv: ``nox -s "history(sglang==0.5.23)"``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from wkvkernels import get, variants
from wkvkernels.cases import POOL_GUARD, Case, Shape
from wkvkernels.releases import PACKAGES
from wkvoracle.inputs import generate

pytest.importorskip("torch")

SGLANG = sorted(v.name for v in variants() if ".sglang." in v.name)


def test_every_variant_is_declared_with_its_package():
    assert {"gdn.sglang.chunk", "gdn.sglang.fused_recurrent", "gdn.sglang.fused_recurrent_update",
            "gdn.sglang.packed_decode", "gdn.sglang.cutedsl_decode", "kda.sglang.chunk",
            "kda.sglang.fused_recurrent", "kda.sglang.packed_decode"} <= set(SGLANG)
    assert PACKAGES["sglang"].variants == "*.sglang.*"
    for n in SGLANG:
        v = get(n)
        assert v.source == "sglang" and "0.5.23" in v.releases and "0.5.24" not in v.releases
        if not n.endswith("cutedsl_decode"):
            assert (n.endswith(".interp")) == (v.device == "cpu")
            assert get(n.removesuffix(".interp") + ".interp")  # each Triton one has its twin


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
@pytest.mark.parametrize("name", SGLANG)
def test_without_sglang_each_variant_skips_saying_how_to_get_it(name):
    av = get(name).available()
    assert not av and 'nox -s "history(sglang==0.5.23)"' in av.reason and "torch==2.14.1" in av.reason


def _case(op, dtype="fp32", **kw):
    base = dict(B=3, T=1, H=2, N=64, HV=4, P=6, pad=1, raw=True, qkn=True)
    base.update(kw)
    return Case(op, "model", Shape(**base), dtype)


def test_a_pooled_case_passes_its_pool_between_two_guard_slots():
    v, case = get("gdn.sglang.fused_recurrent_update.interp"), _case("gdn", raw=False, T=2)
    inputs = generate(case)
    buf, idx = v.pool(inputs, case)
    assert buf.shape == (8, 4, 64, 64)  # [P + 2, HV, V, K]: the fork's K-last pool, canonical as it is
    np.testing.assert_array_equal(buf[1:-1].numpy(), inputs["state_pool"])
    assert (buf[[0, -1]] == POOL_GUARD).all()
    assert idx.dtype.is_signed and idx.tolist() == inputs["state_indices"].tolist() and -1 in idx.tolist()


def test_a_case_without_pool_becomes_a_pool_of_its_sequences():
    v = get("gdn.sglang.chunk.interp")
    case = Case("gdn", "model", Shape(3, 50, 1, 64, h0=True, HV=2, varlen=True, qkn=True), "fp16")
    inputs = generate(case)
    buf, idx = v.pool(inputs, case)
    assert idx.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(buf[1:-1].numpy(), inputs["state"])
    no_h0 = Case("gdn", "model", Shape(2, 37, 1, 64, HV=2), "fp16")
    buf, idx = v.pool(generate(no_h0), no_h0)
    assert idx.tolist() == [0, 1] and not buf[1:-1].any()  # zeros: no initial state


@pytest.mark.parametrize("op", ["gdn", "kda"])
def test_the_packed_decode_gets_one_row_q_k_v_per_sequence(op):
    v, case = get(f"{op}.sglang.packed_decode.interp"), _case(op)
    inputs = generate(case)
    kw, buf = v.packed(inputs, case)
    B, H, HV, K = 3, 2, 4, 64
    row = kw["mixed_qkv"].numpy()
    assert row.shape == (B, 2 * H * K + HV * K)
    np.testing.assert_array_equal(row[:, :H * K], inputs["q"].reshape(B, -1))
    np.testing.assert_array_equal(row[:, H * K:2 * H * K], inputs["k"].reshape(B, -1))
    np.testing.assert_array_equal(row[:, 2 * H * K:], inputs["v"].reshape(B, -1))
    assert kw["a"].shape == ((B, HV) if op == "gdn" else (B, HV * K))
    assert kw["dt_bias"].shape == ((HV,) if op == "gdn" else (HV * K,)) and kw["b"].shape == (B, HV)
    assert kw["out"].shape == (B, 1, HV, K) and kw["out"].isnan().all()
    assert kw["initial_state"].data_ptr() == buf[1:-1].data_ptr() and kw["use_qk_l2norm_in_kernel"]


@pytest.mark.parametrize("name,case,why", [
    ("gdn.sglang.chunk.interp", _case("gdn", raw=False), "dtype fp32 not supported"),
    ("gdn.sglang.packed_decode.interp", _case("gdn", T=2), "one token per sequence"),
    ("gdn.sglang.packed_decode.interp", _case("gdn", raw=False), "raw gates (A_log"),
    ("gdn.sglang.fused_recurrent.interp", _case("gdn", raw=False), "takes no state pool"),
    ("gdn.sglang.chunk.interp", _case("gdn", "fp16"), "takes no raw gating"),
    ("kda.sglang.chunk.interp", _case("kda", raw=False), "takes no grouped value heads"),
    ("gdn.sglang.cutedsl_decode", _case("gdn", "bf16"), "K = 128 only"),
    ("gdn.sglang.cutedsl_decode", _case("gdn", "bf16", N=128, qkn=False), "q/k normalised"),
    ("gdn.sglang.cutedsl_decode", _case("gdn", "fp32", N=128), "dtype fp32"),
])
def test_what_each_refuses(name, case, why):
    av = get(name).supports(case)
    assert not av and why in av.reason


def test_the_cutedsl_decode_tells_the_oracle_its_bf16_dt_bias():
    v, case = get("gdn.sglang.cutedsl_decode"), _case("gdn", "bf16", N=128)
    inputs = generate(case)
    assert v.supports(case)
    eff = v.effective_inputs(inputs, "bf16")
    from wkvkernels.ops import round_to

    np.testing.assert_array_equal(eff["dt_bias"], round_to(inputs["dt_bias"].astype(np.float64), "bf16"))
    assert not np.array_equal(eff["dt_bias"], inputs["dt_bias"].astype(np.float64))


def test_packed_sequences_go_through_the_pool_of_their_states(monkeypatch):
    """``properties --property packing``: the N packed sequences' initial states become the pool, cu_seqlens is
    passed, and their final states are read back from the pool (before, FlaTriton's two-tuple unpacking of
    ``prepare`` raised on this adapter's four-tuple)."""
    import torch

    from wkvkernels.gdn import sglang_triton

    seen = {}

    def chunk(**kw):
        seen.update(kw)
        kw["initial_state"][:] += 1.0  # the fork updates the pool in place
        return kw["q"].clone(), None, None

    monkeypatch.setattr(sglang_triton, "fn", lambda *_: chunk)
    v = get("gdn.sglang.chunk.interp")
    case = Case("gdn", "model", Shape(1, 20, 1, 64, h0=True, HV=2), "fp16")
    inputs = generate(case)
    cu = np.array([0, 5, 5, 20])
    inputs["state"] = np.stack([inputs["state"][0]] * 3)  # one initial state per packed sequence
    native = v.prepare_packed(inputs, case, cu)
    out = v.to_canonical(v.run(native))
    assert seen["cu_seqlens"].tolist() == [0, 5, 5, 20] and seen["initial_state_indices"].tolist() == [0, 1, 2]
    assert seen["initial_state"].dtype == torch.float32 and seen["initial_state"].shape == (3, 2, 64, 64)
    np.testing.assert_array_equal(out["state"], inputs["state"] + 1.0)
    assert out["y"].shape == inputs["q"].shape
