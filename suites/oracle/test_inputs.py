"""Case ids and the seeded generators: reproducible, and in the advertised value domains."""

from __future__ import annotations

import numpy as np
import pytest

from wkvbench.judge.case_sets import default_cases
from wkvkernels.cases import DOMAINS, Case, Shape
from wkvkernels.ops import OPS, op_spec, round_to
from wkvoracle.inputs import LW_MODEL_BOUND, generate


def test_case_id_round_trips():
    for case in default_cases():
        assert Case.parse(case.id) == case
    assert Case.parse("gdn_wy/uniform/B1-T64-H2-N32-C64/fp16/s7").shape.C == 64


@pytest.mark.parametrize("bad", ["wkv7/model/B2-T64/bf16/s0", "wkv9/model/B1-T1-H1-N8/bf16/s0",
                                 "wkv7/model/B1-T1-H1-N8/int8/s0", "wkv7/nope/B1-T1-H1-N8/fp32/s0",
                                 "gdn_wy/model/B1-T4-H1-N8/fp32/s0", "wkv7/model/B0-T1-H1-N8/fp32/s0"])
def test_bad_case_ids_are_rejected_with_a_message(bad):
    with pytest.raises(ValueError, match=r"\w"):
        Case.parse(bad)


@pytest.mark.parametrize("op", list(OPS))
def test_generation_is_a_pure_function_of_the_id(op):
    case = next(c for c in default_cases((op,)) if c.domain == "model")
    a, b = generate(case), generate(Case.parse(case.id))
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(np.asarray(a[k]), np.asarray(b[k]))
    other = generate(Case(case.op, case.domain, case.shape, case.dtype, case.seed + 1))
    assert any(not np.array_equal(np.asarray(a[k]), np.asarray(other[k])) for k in a if k != "scale")
    assert generate(case.with_dtype("bf16")).keys() == a.keys()  # dtype never changes the inputs


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("domain", DOMAINS)
def test_inputs_are_complete_float32_and_finite(op, domain):
    shape = Shape(2, 9, 2, 16, h0=op != "gdn_wy", C=8 if op == "gdn_wy" else 0)
    x = generate(Case(op, domain, shape, "fp32"))
    spec = op_spec(op)
    assert set(spec.inputs) <= set(x)
    assert spec.has_scale == ("scale" in x)
    for k, v in x.items():
        if isinstance(v, np.ndarray):
            assert v.dtype == np.float32 and np.isfinite(v).all(), k
    for name in spec.state:
        assert name in x


def test_wkv7_model_domain_is_the_rwkv7_parametrization():
    x = generate(Case("wkv7", "model", Shape(2, 64, 2, 32), "fp32"))
    assert (x["lw"] < 0).all() and (x["lw"] > LW_MODEL_BOUND).all()
    kk = -x["a"].astype(np.float64)
    assert np.allclose(np.linalg.norm(kk, axis=-1), 1, atol=1e-6)  # a = -κ̂, unit per head
    iclr = x["b"] / kk
    assert (iclr > 0).all() and (iclr < 1).all()  # b = κ̂ ⊙ iclr, iclr = σ(.)


def test_gdn_domains():
    for domain in DOMAINS:
        x = generate(Case("gdn", domain, Shape(1, 32, 2, 16), "fp32"))
        assert np.allclose(np.linalg.norm(x["k"], axis=-1), 1, atol=1e-5)
        assert ((x["beta"] >= 0) & (x["beta"] <= 1)).all() and (x["g"] <= 0).all()
    u = generate(Case("gdn", "uniform", Shape(1, 256, 2, 16), "fp32"))
    assert u["g"].min() >= -20 and u["v"].min() >= -0.3 and u["v"].max() <= 5


def test_kda_domains():
    for domain in DOMAINS:
        x = generate(Case("kda", domain, Shape(1, 32, 2, 16), "fp32"))
        assert x["g"].shape == x["k"].shape and (x["g"] <= 0).all()
        assert np.allclose(np.linalg.norm(x["q"], axis=-1), 1, atol=1e-5)
        assert ((x["beta"] >= 0) & (x["beta"] <= 1)).all()
    # model: Kimi Linear's -A softplus(f) with A in [1, 16] per head, so g / A per head is a softplus
    g = generate(Case("kda", "model", Shape(1, 256, 2, 16), "fp32"))["g"].astype(np.float64)
    ratio = g.max(axis=(0, 1, 3)) / g.min(axis=(0, 1, 3))  # per head the gates span over a decade
    assert (ratio < 0.1).all() and (g.min() >= -16 * 8) and (g.max() < 0)
    assert (g.std(axis=-1) > 0).all()  # the gate varies over the keys of every token


def test_stress_domain_reaches_both_decay_extremes():
    x = generate(Case("wkv6", "stress", Shape(1, 64, 1, 64), "fp32"))
    d = np.exp(x["lw"].astype(np.float64))
    assert (d > 0.999).any() and (d < 1e-4).any()


def test_bf16_rounding_matches_torch_bit_for_bit():
    torch = pytest.importorskip("torch", reason="torch not installed")
    x = np.random.default_rng(0).standard_normal(100_000).astype(np.float32) * 10.0 ** np.random.default_rng(1).uniform(-30, 30, 100_000).astype(np.float32)
    x[:4] = [0.0, -0.0, np.inf, 1.0 + 2**-8]  # 1 + 2^-8 is a tie: rounds to even (1.0)
    ours = round_to(x, "bf16")
    theirs = torch.from_numpy(x).to(torch.bfloat16).double().numpy()
    assert np.array_equal(ours, theirs)
    assert np.array_equal(round_to(x, "fp16"), torch.from_numpy(x).half().double().numpy())


def test_const_domain_holds_the_decay_over_time_and_nothing_else():
    shape = Shape(2, 37, 2, 64, h0=True)
    x, m = generate(Case("wkv6", "const", shape, "fp32")), generate(Case("wkv6", "model", shape, "fp32"))
    lw = x["lw"]
    np.testing.assert_array_equal(lw, np.broadcast_to(lw[:, :1], lw.shape))  # lw[:, t] = lw[:, 0]
    assert len(np.unique(lw[0, 0])) > 100 and not np.array_equal(lw[0], lw[1])  # per head/key and sequence
    assert (lw < 0).all() and lw.min() >= -np.exp(0.5) * 1.0001 and lw.max() <= -np.exp(-6.0) * 0.9999
    assert len(np.unique(x["r"][0, :, 0, 0])) == 37  # the tokens still vary
    assert x.keys() == m.keys() and np.std(x["state"]) < 1  # model-domain scales (state 0.5 N(0, 1))
    with pytest.raises(ValueError, match="does not apply to wkv7"):
        Case("wkv7", "const", shape, "fp32")


def test_const_cases_are_in_the_gpu_set_only():
    """bf16 and fp16 only: fp32 is not calibrated for a constant decay (wkvbench/judge/case_sets.py)."""
    gpu = {c.id for c in default_cases(("wkv6",), case_set="gpu") if c.domain == "const"}
    assert gpu == {f"wkv6/const/{s}/{dt}/s0" for s in ("B1-T37-H2-N64-h0", "B1-T64-H2-N64")
                   for dt in ("bf16", "fp16")}
    assert not [c for c in default_cases() if c.domain == "const"]
    assert not [c for c in default_cases(case_set="gpu") if c.domain == "const" and c.op != "wkv6"]


@pytest.mark.thirdparty
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_cpu_wkv6_variants_pass_the_const_cases(dtype):
    """bf16/fp16 pass under the existing ceilings. fp32 does not for the CPU recurrences that round
    exp(lw) themselves (state 24.3x floor vs the 13x ceiling, wkvbench/judge/case_sets.py), so it is not
    here."""
    from wkvbench.judge.check import PASS, SKIP, Checker
    from wkvkernels import variants

    checker, ran = Checker(), 0
    for case in (c for c in default_cases(("wkv6",), (dtype,), case_set="gpu") if c.domain == "const"):
        for v in variants("wkv6"):
            if v.device != "cpu":
                continue
            r = checker.check(v, case)
            assert r.status in (PASS, SKIP), f"{v.name} {case.id}: {r.status} {r.reason}"
            ran += r.status == PASS
    assert ran >= 4


def test_bf16_rounding_edges_random_bits_nan_and_no_mutation():
    """``round_to(..., "bf16")`` (in-place uint32 arithmetic) against torch's own float32 -> bfloat16
    cast beyond the test above: random bit patterns over every exponent, 1000 exact ties, the largest
    finite float32 (rounds to inf), subnormals; NaN stays NaN; the input is left as it was."""
    torch = pytest.importorskip("torch", reason="torch not installed")

    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 2**16, 1000, dtype=np.uint64).astype(np.uint32) << 16) | np.uint32(0x8000)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 3.3961776e38, -3.3961776e38, 3.4028235e38, 1e-45, -1e-40,
                        1.0 + 2**-8, 1.0 + 3 * 2**-8], dtype=np.float32)
    x32 = np.concatenate([bits.view(np.float32), ties.view(np.float32), special])
    finite = x32[~np.isnan(x32)]
    before = finite.copy()
    got = round_to(finite, "bf16")
    want = torch.from_numpy(finite).to(torch.bfloat16).to(torch.float64).numpy()
    assert np.array_equal(got, want)
    assert np.array_equal(finite, before)  # not rounded in place
    nan = round_to(np.array([np.nan, 1.0]), "bf16")
    assert np.isnan(nan[0]) and nan[1] == 1.0
