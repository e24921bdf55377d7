"""The edge case set (``--set edge``): its shapes and value domains, and that the oracle stays finite."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import wkvoracle.inputs as inputs_mod
from wkvbench.judge.case_sets import default_cases
from wkvkernels.cases import BOUNDARY_DOMAINS, EDGE_OP_DOMAINS, Case, Shape
from wkvkernels.ops import default_state
from wkvoracle import BACKWARDS, ORACLES
from wkvoracle.inputs import BOUNDARY_RANGES, boundary_violations, generate

EDGE = default_cases(case_set="edge")


def test_edge_set_covers_the_edges():
    ts = {c.shape.T for c in EDGE}
    assert {1, 15, 17, 63, 65} <= ts
    assert any(c.shape.N == 128 for c in EDGE)
    assert {c.domain for c in EDGE} == {"lw0", "lwneg", "beta0", "beta1", "ggmlend", "hmix", "safegate"}
    for op, domains in EDGE_OP_DOMAINS.items():
        assert {c.domain for c in EDGE if c.op == op} == set(domains), op
    # the default set keeps its three domains
    assert {c.domain for c in default_cases()} == {"model", "stress", "uniform"}


def test_edge_domains_are_what_they_say():
    s = Shape(1, 17, 1, 64, h0=True)
    assert (generate(Case("gdn", "beta0", s, "fp32"))["beta"] == 0).all()
    assert (generate(Case("gdn", "beta1", s, "fp32"))["beta"] == 1).all()
    x = generate(Case("wkv7", "beta1", s, "fp32"))
    np.testing.assert_array_equal(x["b"], -x["a"])  # iclr = 1
    assert (generate(Case("wkv7", "beta0", s, "fp32"))["b"] == 0).all()
    lw = generate(Case("wkv6", "lw0", s, "fp32"))["lw"]
    assert (lw < 0).all() and (lw > -1.1e-6).all()
    assert (generate(Case("gla", "lwneg", s, "fp32"))["lw"] <= -20).all()
    assert (generate(Case("gdn", "lwneg", s, "fp32"))["g"] <= -20).all()
    assert (generate(Case("kda", "lwneg", s, "fp32"))["g"] <= -20).all()
    assert (generate(Case("kda", "beta1", s, "fp32"))["beta"] == 1).all()
    assert (generate(Case("wkv4", "lw0", Shape(1, 17, 1, 64), "fp32"))["w4"] > -1.1e-6).all()


def test_an_edge_domain_that_does_not_apply_is_refused():
    with pytest.raises(ValueError, match="does not apply to wkv6"):
        Case("wkv6", "beta0", Shape(1, 1, 1, 64), "fp32")
    assert Case.parse("gdn/beta1/B1-T17-H1-N64-h0/bf16/s0").domain == "beta1"


@pytest.mark.parametrize("case", [c for c in EDGE if c.dtype == "fp32"], ids=lambda c: c.id)
def test_edge_inputs_are_reproducible_and_the_oracle_finite(case):
    x, y = generate(case), generate(case)
    for k in x:
        if isinstance(x[k], np.ndarray):
            assert np.array_equal(x[k], y[k]) and np.isfinite(x[k]).all(), k
    full = {**default_state(case.op, x), **{k: (np.asarray(v, np.float64) if isinstance(v, np.ndarray) else v)
                                            for k, v in x.items()}}
    out = ORACLES[case.op](**full)
    assert all(np.isfinite(v).all() for v in out.values())
    if case.op in BACKWARDS and case.op != "wkv4":
        up = {"dy": np.ones_like(out["y"])}
        if "state" in out:
            up["dstate"] = np.ones_like(out["state"])
        assert all(np.isfinite(v).all() for v in BACKWARDS[case.op](**full, **up).values())


# ---- Boundary domains: documented input ranges at their ends ------------------------------------------

BOUNDARY = [c for c in EDGE if c.domain in BOUNDARY_DOMAINS and c.dtype == "fp32"]
F32_BELOW_1 = 0.99999994  # float32 1 - 2^-24


def _digest(x: dict) -> str:
    h = hashlib.sha1()
    for k in sorted(x):
        h.update(k.encode())
        h.update(np.ascontiguousarray(x[k]).tobytes() if isinstance(x[k], np.ndarray) else repr(x[k]).encode())
    return h.hexdigest()


def test_boundary_domains_cover_every_range_on_two_heads():
    assert {(c.domain, c.op) for c in BOUNDARY} == set(BOUNDARY_RANGES)
    assert {c.shape.T for c in BOUNDARY} == {1, 17, 64, 65} and all(c.shape.H == 2 for c in BOUNDARY)
    assert len([c for c in EDGE if c.domain in BOUNDARY_DOMAINS]) <= 120  # CPU cost stays modest


@pytest.mark.parametrize("case", BOUNDARY, ids=lambda c: c.id)
def test_boundary_inputs_stay_at_their_documented_ends(case):
    assert boundary_violations(case, generate(case)) == []


def test_boundary_ranges_are_the_cited_numbers():
    """Against literals from the sources (not from the table), so an edited range fails here."""
    g = BOUNDARY_RANGES[("ggmlend", "gdn")]
    assert (g["g"].lo, g["g"].hi) == (-20.0, float(np.nextafter(np.float32(-1e-4), np.float32(-1))))
    assert (g["beta"].lo, g["beta"].hi) == (0.0, float(np.float32(F32_BELOW_1)))
    assert g["v"].lo == float(np.float32(-0.3)) and g["v"].hi == float(np.nextafter(np.float32(5), np.float32(0)))
    assert (g["state"].lo, g["state"].hi) == (-1.0, float(np.float32(F32_BELOW_1)))
    lw = BOUNDARY_RANGES[("ggmlend", "wkv6")]["lw"]
    assert np.float32(np.exp(np.float32(lw.hi))) == np.float32(F32_BELOW_1)  # the weakest float32 decay
    assert abs(np.exp(lw.lo) - 1e-6) < 1e-12
    wkv7 = BOUNDARY_RANGES[("hmix", "wkv7")]["lw"].lo
    assert -0.6065306597126334 <= wkv7 < -0.60653060  # FLA's RWKV-7 lower_bound, float32, not below it
    assert BOUNDARY_RANGES[("safegate", "wkv7")]["lw"].lo == -5.0  # FLA safe_gate: [-5, 0)
    assert BOUNDARY_RANGES[("safegate", "kda")]["g"].lo == -5.0  # FLA chunk_kda lower_bound: [-5, 0)
    assert abs(BOUNDARY_RANGES[("hmix", "gla")]["lw"].lo + 10 * np.log(2)) < 1e-6  # logsigmoid(0) / 0.1
    assert BOUNDARY_RANGES[("hmix", "gdn")]["g"].lo == -20.0
    for bounds in BOUNDARY_RANGES.values():
        for b in bounds.values():
            assert b.lo <= b.hi and b.source and np.float32(b.lo) == b.lo and np.float32(b.hi) == b.hi


def test_hmix_puts_strong_and_weak_decays_in_one_chunk():
    for op, name, strong in (("wkv7", "lw", -0.6065306), ("gdn", "g", -20.0), ("gla", "lw", -6.9314718)):
        x = generate(Case(op, "hmix", Shape(1, 64, 2, 64), "fp32"))[name]
        assert np.allclose(x[0, :, 0], strong) and (x[0, :, 1] >= -1.0001e-4).all(), op  # head 0 strong, head 1 weak
    lw = generate(Case("wkv7", "safegate", Shape(1, 17, 2, 64, h0=True), "fp32"))["lw"]
    assert (lw[0, :, 0] == -5).all() and (np.float32(np.exp(lw[0, :, 1])) == np.float32(F32_BELOW_1)).all()
    g = generate(Case("kda", "safegate", Shape(1, 17, 2, 64, h0=True), "fp32"))["g"]  # per key, every key
    assert (g[0, :, 0] == -5).all() and (np.float32(np.exp(g[0, :, 1])) == np.float32(F32_BELOW_1)).all()


def test_ggmlend_hits_both_ends_of_each_range():
    x = generate(Case("gdn", "ggmlend", Shape(1, 65, 2, 64, h0=True), "fp32"))
    for name in ("g", "beta", "v", "state"):
        b = BOUNDARY_RANGES[("ggmlend", "gdn")][name]
        assert set(np.unique(x[name])) == {np.float32(b.lo), np.float32(b.hi)}, name
    np.testing.assert_allclose(np.linalg.norm(x["k"], axis=-1), 1, rtol=1e-6)


@pytest.mark.parametrize("cid, digest", [
    ("gdn/ggmlend/B1-T17-H2-N64-h0/fp32/s0", "0d07fd79cde0ba4c607da8d23cd215aded40525a"),
    ("wkv7/ggmlend/B1-T17-H2-N64-h0/fp32/s0", "c75550ef4416bd4d025eb03ffc90538a3e6e090e"),
    ("gla/hmix/B1-T65-H2-N64-h0/fp32/s0", "ea8759a412d264d17202c7b426f0e7a5a8b9d019"),
    ("wkv7/safegate/B1-T64-H2-N64/fp32/s0", "ba72bef807a680ef478e976aa2268b785222a891"),
    ("wkv6/ggmlend/B1-T1-H2-N64-h0/fp32/s1", "5662954b007b62923c475d9a8690f8f44fb784d6"),
    ("kda/safegate/B1-T17-H2-N64-h0/fp32/s0", "20ee3e502b0207be079700acdec5e6e53214ff93"),
])
def test_boundary_inputs_are_bit_for_bit_per_case_id(cid, digest):
    case = Case.parse(cid)
    assert _digest(generate(case)) == _digest(generate(Case.parse(cid.replace("/fp32/", "/bf16/")))) == digest
    assert _digest(generate(Case.parse(cid.replace("/s0", "/s7").replace("/s1", "/s7")))) != digest


def test_a_generator_that_leaves_the_range_is_caught(monkeypatch):
    """Planted violations: a gate a little past ggml's -20, an hmix strong head below FLA's RWKV-7 bound,
    a value between the ends, and a generator drawing g from U(-20.5, -1e-4) instead of the ends."""
    case = Case("gdn", "ggmlend", Shape(1, 17, 2, 64, h0=True), "fp32")
    x = generate(case)
    assert any(v.startswith("g: outside") for v in boundary_violations(case, {**x, "g": x["g"] * 1.01}))
    assert any(v.startswith("beta: values between") for v in boundary_violations(case, {**x, "beta": x["beta"] * 0.5}))
    c7 = Case("wkv7", "hmix", Shape(1, 17, 2, 64, h0=True), "fp32")
    y = generate(c7)
    lw = y["lw"].copy()
    lw[0, 3, 0, 5] = np.float32(-0.6066)
    assert any(v.startswith("lw: outside") for v in boundary_violations(c7, {**y, "lw": lw}))
    real = inputs_mod._boundary

    def planted(op, rng, domain, s):
        out = real(op, rng, domain, s)
        out["g"] = rng.uniform(-20.5, -1e-4, out["g"].shape)
        return out

    monkeypatch.setattr(inputs_mod, "_boundary", planted)
    assert any(v.startswith("g: outside") for v in boundary_violations(case, generate(case)))
