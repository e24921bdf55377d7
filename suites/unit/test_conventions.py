"""Production conventions as case parameters (docs/conventions.md): ids, inputs, the oracle's reading of
them, the judge's pool check, the baseline, the adapters' refusals and validation."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import wkvkernels  # noqa: F401  (registers the built-in variants)
from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import FAIL, PASS, SKIP, Checker
from wkvbench.judge.validate import InvalidInput, validate_inputs
from wkvkernels import get
from wkvkernels.base import KernelVariant, register, unregister
from wkvkernels.cases import CONVENTIONS, POOL_GUARD, Case, Shape
from wkvkernels.ops import round_inputs
from wkvoracle import ALTERNATES, ORACLES
from wkvoracle.conventions import L2NORM_EPS, canonical, real_rows, solve
from wkvoracle.inputs import generate

IDS = ("gdn/model/B3-T1-H2-HV4-N16-P6-pad1-raw-qkn/fp32/s0", "gdn/stress/B3-T20-H1-HV2-N16-varlen-raw-qkn-h0/bf16/s1",
       "gdn/uniform/B3-T4-H1-HV3-N16-P4/fp16/s2", "gdn/model/B4-T30-H1-HV2-N16-P7-pad2-varlen/bf16/s0",
       "gdn/model/B2-T9-H2-HV4-N16-h0/fp32/s3")


@pytest.mark.parametrize("text", ["B2-T64-H2-N64", "B8-T1-H2-HV4-N128-P32-pad1-raw-qkn", "B2-T37-H2-N64-C16-h0",
                                  "B4-T100-H1-HV2-N64-varlen-raw-h0", "B3-T4-H1-N64-P5"])
def test_a_shape_reads_back_as_written(text):
    assert str(Shape.parse(text)) == text


@pytest.mark.parametrize("cid, why", [
    ("wkv7/model/B2-T4-H1-HV2-N64/fp32/s0", "wkv7 takes no gva"),
    ("gdn/model/B2-T4-H2-HV3-N64/fp32/s0", "multiple of the key heads"),
    ("gdn/model/B2-T4-H1-N64-pad1/fp32/s0", "need a state pool"),
    ("gdn/model/B2-T4-H1-N64-P4-h0/fp32/s0", "drop -h0"),
    ("gdn/model/B4-T4-H1-N64-P2/fp32/s0", "cannot hold"),
    ("gdn/model/B4-T3-H1-N64-varlen/fp32/s0", "T < B"),
    ("gdn/lw0/B2-T4-H1-N64-raw/fp32/s0", "raw gates are drawn"),
    ("gdn_wy/model/B2-T4-H1-N64-C16-raw/fp32/s0", "gdn_wy takes no raw"),
])
def test_impossible_conventions_are_refused_with_the_reason(cid, why):
    with pytest.raises(ValueError, match=why):
        Case.parse(cid)


def _digest(x: dict) -> str:
    h = hashlib.sha1()
    for n in sorted(x):
        h.update(n.encode())
        h.update(np.ascontiguousarray(x[n]).tobytes() if isinstance(x[n], np.ndarray) else repr(x[n]).encode())
    return h.hexdigest()


def test_cases_without_conventions_keep_their_inputs_bit_for_bit():
    """The generator's seed key grows only for cases with conventions: these five ids gave this digest
    before conventions existed (commit ec584c9), so every tolerance measured on them still holds."""
    ids = ["gdn/model/B2-T37-H2-N64-h0/bf16/s0", "gdn/uniform/B1-T1-H2-N64-h0/fp32/s3",
           "gdn_wy/model/B2-T37-H2-N64-C16/fp32/s0", "wkv7/stress/B1-T256-H1-N64-h0/fp16/s1",
           "gdn/hmix/B1-T17-H2-N64-h0/fp32/s0"]
    h = hashlib.sha1()
    for cid in ids:
        x = generate(Case.parse(cid))
        for n in sorted(x):
            h.update(n.encode())
            h.update(np.ascontiguousarray(x[n]).tobytes() if isinstance(x[n], np.ndarray) else repr(x[n]).encode())
    assert h.hexdigest() == "e222f15153c0d0887edddcdbbbdd83ee7780aa59"


@pytest.mark.parametrize("cid", IDS)
def test_inputs_come_in_the_conventions_the_id_names_and_reproduce(cid):
    case = Case.parse(cid)
    s = case.shape
    x = generate(case)
    assert _digest(x) == _digest(generate(case))
    rows = 1 if s.varlen else s.B
    assert x["q"].shape == x["k"].shape == (rows, s.T, s.H, s.N)
    assert x["v"].shape == (rows, s.T, s.value_heads, s.N)
    assert ("A_log" in x) == s.raw and ("g" in x) == (not s.raw)
    if s.raw:
        assert x["A_log"].shape == x["dt_bias"].shape == (s.value_heads,)
        assert x["a"].shape == x["b"].shape == (rows, s.T, s.value_heads)
    if s.varlen:
        cu = x["cu_seqlens"]
        assert cu.dtype == np.int64 and cu[0] == 0 and cu[-1] == s.T and len(cu) == s.B + 1 and (np.diff(cu) >= 1).all()
    if s.P:
        idx = x["state_indices"]
        assert idx.dtype == np.int32 and "state" not in x and x["state_pool"].shape == (s.P, s.value_heads, s.N, s.N)
        assert (idx == -1).sum() == s.pad and len(set(idx[idx >= 0].tolist())) == s.B - s.pad
    if s.qkn:
        assert not np.allclose(np.linalg.norm(x["q"], axis=-1), 1.0, rtol=1e-3)
    validate_inputs(case.op, x)


def test_the_conventions_are_read_as_defined():
    """Gates, normalisation and the head map against their definitions, written out independently."""
    x = generate(Case.parse("gdn/model/B2-T3-H2-HV6-N16-raw-qkn-h0/fp32/s0"))
    c = canonical(x, qkn=True)
    z = x["a"].astype(np.float64) + x["dt_bias"].astype(np.float64)
    g = -np.exp(x["A_log"].astype(np.float64)) * np.log1p(np.exp(z))
    beta = 1 / (1 + np.exp(-x["b"].astype(np.float64)))
    np.testing.assert_allclose(c["g"], g, rtol=1e-13)
    np.testing.assert_allclose(c["beta"], beta, rtol=1e-13)
    q = x["q"].astype(np.float64)
    for hv in range(6):  # value head hv reads key head hv // 3
        ref = q[:, :, hv // 3] / np.sqrt((q[:, :, hv // 3] ** 2).sum(-1, keepdims=True) + L2NORM_EPS)
        np.testing.assert_allclose(c["q"][:, :, hv], ref, rtol=1e-14)


@pytest.mark.parametrize("cid", IDS)
def test_the_oracle_in_conventions_agrees_with_the_independent_formulation(cid):
    """``solve`` over the recurrence and over the transition-matrix form: 1e-12 relative."""
    case = Case.parse(cid)
    x = round_inputs("gdn", generate(case), case.dtype)
    a = solve(ORACLES["gdn"], x, qkn=case.shape.qkn)
    b = solve(ALTERNATES["gdn"], x, qkn=case.shape.qkn)
    for n in a:
        assert np.linalg.norm(a[n] - b[n]) <= 1e-12 * np.linalg.norm(a[n]), n


def test_packed_sequences_are_independent_problems():
    """Each packed sequence equals the canonical oracle run alone on its own tokens and state."""
    x = generate(Case.parse("gdn/model/B3-T20-H1-HV2-N16-varlen-h0/fp32/s0"))
    out = solve(ORACLES["gdn"], x)
    cu = x["cu_seqlens"]
    for n in range(3):
        sl = slice(cu[n], cu[n + 1])
        alone = ORACLES["gdn"](q=np.repeat(x["q"][:, sl], 2, axis=2), k=np.repeat(x["k"][:, sl], 2, axis=2),
                               v=x["v"][:, sl], g=x["g"][:, sl], beta=x["beta"][:, sl], scale=x["scale"],
                               state=x["state"][n:n + 1])
        np.testing.assert_array_equal(out["y"][:, sl], alone["y"])
        np.testing.assert_array_equal(out["state"][n], alone["state"][0])


def test_a_pool_keeps_its_untouched_slots():
    x = generate(Case.parse("gdn/model/B4-T3-H1-HV2-N16-P7-pad2/fp32/s0"))
    out = solve(ORACLES["gdn"], x)
    idx = x["state_indices"]
    assert sorted(real_rows(x).tolist()) == [b for b in range(4) if idx[b] >= 0]
    for s in range(7):
        if s not in idx:
            np.testing.assert_array_equal(out["state_pool"][s], x["state_pool"][s])
    for b in real_rows(x):
        np.testing.assert_array_equal(out["state_pool"][idx[b]], out["state"][b])


CHECKER = Checker()


@pytest.mark.parametrize("cid", [c.id for c in default_cases(("gdn",), ("fp32", "bf16")) if c.shape.conventions][:12])
def test_the_baseline_takes_every_convention(cid):
    res = CHECKER.check(get("gdn.torch.recurrent"), Case.parse(cid))
    assert res.status == PASS, res.reason


def test_a_variant_without_a_convention_is_a_skip_naming_it():
    res = CHECKER.check(get("gdn.fla.naive_recurrent"), Case.parse("gdn/model/B3-T1-H2-HV4-N64-P6-pad1-raw-qkn/fp32/s0"))
    assert res.status == SKIP and res.reason == f"takes no {CONVENTIONS['gva']}"  # the first it lacks
    fla = get("gdn.fla.fused_recurrent")  # takes every convention but the pool (fla-core 0.6.0's GDN has no indices)
    assert fla.supports(Case.parse("gdn/model/B3-T9-H2-HV4-N64-varlen-raw-qkn-h0/fp32/s0"))
    refused = fla.supports(Case.parse("gdn/model/B3-T1-H2-HV4-N64-P6-pad1-raw-qkn/fp32/s0"))
    assert not refused and refused.reason == f"takes no {CONVENTIONS['pool']}"


class _PoolScribbler(KernelVariant):
    """The oracle's answer, with one element of a slot that no real sequence names moved by one float32
    ulp (as a kernel writing a padding row's state, or rounding the whole pool, would)."""

    name, operator, source, backend, algorithm = "gdn.test.pool_scribbler", "gdn", "test", "numpy", "recurrent"
    dtypes = frozenset({"fp32"})
    conventions = frozenset(CONVENTIONS)

    def prepare(self, inputs, case):
        return round_inputs("gdn", inputs, case.dtype), case

    def run(self, native):
        x, case = native
        out = solve(ORACLES["gdn"], x, qkn=case.shape.qkn)
        idx = x["state_indices"]
        free = [s for s in range(len(x["state_pool"])) if s not in idx]
        slot = out["state_pool"][free[0]]  # one float32 ulp off in one element
        slot.flat[0] = np.nextafter(np.float32(slot.flat[0]), np.float32(np.inf))
        return out

    def to_canonical(self, out):
        return out


def test_a_touched_slot_that_no_sequence_names_fails_and_is_named():
    v = register(_PoolScribbler)
    try:
        case = Case.parse("gdn/model/B3-T2-H1-HV2-N16-P6-pad1/fp32/s0")
        res = Checker().check(v, case)
        x = generate(case)
        free = [s for s in range(6) if s not in x["state_indices"]]
        assert res.status == FAIL and f"slots [{free[0]}] changed" in res.reason, res.reason
    finally:
        unregister(v.name)


@pytest.mark.parametrize("change, why", [
    (lambda x: x.update(state_indices=np.array([0, 0, -1], np.int32)), "distinct slots"),
    (lambda x: x.update(state_indices=np.array([0, 9, -1], np.int32)), "distinct slots"),
    (lambda x: x.update(state_indices=x["state_indices"].astype(np.float32)), "integer array"),
    (lambda x: x.update(state=np.zeros((3, 2, 16, 16), np.float32)), "either as state or in state_pool"),
    (lambda x: x.update(v=x["v"][:, :, :1].repeat(3, axis=2)), "multiple of key heads"),
])
def test_bad_inputs_in_conventions_are_refused_with_a_message(change, why):
    x = generate(Case.parse("gdn/model/B3-T2-H2-HV4-N16-P6-pad1/fp32/s0"))
    change(x)
    with pytest.raises(InvalidInput, match=why):
        validate_inputs("gdn", x)


def test_bad_cu_seqlens_are_refused():
    x = generate(Case.parse("gdn/model/B3-T20-H1-HV2-N16-varlen-h0/fp32/s0"))
    x["cu_seqlens"] = np.array([0, 12, 7, 20], np.int64)
    with pytest.raises(InvalidInput, match="cu_seqlens"):
        validate_inputs("gdn", x)


def test_every_timed_row_in_conventions_is_judged_at_its_own_shape(tmp_path):
    """The at-size judge of ``bench`` (``wkvbench.perf.at_size``) on a case in conventions: the fast oracle
    per sequence, the real rows, and the pool's untouched slots."""
    from wkvbench.perf import at_size
    from wkvbench.perf.shapes import bench_inputs

    case = Case.parse("gdn/model/B3-T2-H1-HV2-N16-P6-pad1-raw-qkn/bf16/s0")
    ref = at_size._oracle_job(None, case.id, str(tmp_path / "ref"), 1)
    v = get("gdn.torch.recurrent")
    out = v.to_canonical(v.run(v.prepare(bench_inputs(case), case)))
    at_size.save_arrays(str(tmp_path / "out"), at_size.compact(out))
    assert at_size._judge_job(v.name, case.id, str(tmp_path / "out"), ref)["status"] == PASS
    x = bench_inputs(case)
    free = [s for s in range(6) if s not in x["state_indices"]][0]
    out["state_pool"][free] *= 1.5
    at_size.save_arrays(str(tmp_path / "out"), at_size.compact(out))
    verdict = at_size._judge_job(v.name, case.id, str(tmp_path / "out"), ref)
    assert verdict["status"] == FAIL and f"slots [{free}] changed" in verdict["reason"]


def test_the_models_set_names_its_sources_and_keeps_its_conventions_at_the_gate():
    from wkvbench.perf.shapes import MODEL_ROWS, expand_sets, gate_case, model_source

    assert expand_sets(["models"]) == tuple(MODEL_ROWS)
    for name, (op, shape) in MODEL_ROWS.items():
        assert model_source(name)
        if op not in wkvkernels.ops.OPS:  # an operator not in this tree yet
            continue
        case = Case(op, "model", shape, "bf16", 0)
        gate = gate_case(op, shape, "bf16")
        assert gate.shape.conventions == case.shape.conventions, name
    qwen = MODEL_ROWS["qwen3-next.decode-b256"][1]
    assert (qwen.H, qwen.value_heads, qwen.N, qwen.B) == (16, 32, 128, 256) and qwen.P > qwen.B and qwen.pad
    assert {MODEL_ROWS[f"qwen3-next-tp{n}.decode-b64"][1].H for n in (2, 4, 8)} == {8, 4, 2}
    assert {s.T for n, (op, s) in MODEL_ROWS.items() if n.startswith("qwen3-next.mtp")} == {2, 4}
    assert {s.T for n, (op, s) in MODEL_ROWS.items() if n.startswith("qwen3-next.prefill")} == {8192, 32768}


class _GuardWriter(_PoolScribbler):
    """The oracle's answer, with the guard slots a pooled adapter watches: the one before slot 0 written,
    as a kernel that takes the padding index -1 for a slot does (FLA's fused_recurrent_kda_fwd)."""

    name = "gdn.test.guard_writer"

    def run(self, native):
        x, case = native
        out = solve(ORACLES["gdn"], x, qkn=case.shape.qkn)
        guard = np.full((2, *out["state_pool"].shape[1:]), POOL_GUARD)
        guard[0, 0, 0, 0] = 0.5 if self.bad else POOL_GUARD
        return {**{n: t.astype(np.float32) for n, t in out.items()}, "state_pool_guard": guard}

    bad = True


@pytest.mark.parametrize("bad", [True, False])
def test_a_write_outside_the_pool_fails_and_says_so(bad):
    v = register(type("GuardWriter", (_GuardWriter,), {"bad": bad}))
    try:
        res = Checker().check(v, Case.parse("gdn/model/B3-T2-H1-HV2-N16-P6-pad1/fp32/s0"))
        if bad:
            assert res.status == FAIL and "written outside the pool" in res.reason, res.reason
        else:
            assert res.status == PASS, res.reason
    finally:
        unregister(v.name)


def test_fla_releases_without_the_raw_gate_flags_or_kda_refuse_with_the_reason(monkeypatch):
    """fla-core reads unknown keywords into **kwargs: before 0.5.2 (no use_beta_sigmoid_in_kernel) a raw-gate
    case would run with its flags dropped, so it is refused; before 0.4.2 there is no fla.ops.kda."""
    from wkvkernels import base, releases

    raw = Case.parse("gdn/model/B3-T4-H1-HV2-N64-raw-qkn-h0/fp32/s0")
    canonical = Case.parse("gdn/model/B2-T37-H2-N64-h0/fp32/s0")
    monkeypatch.setattr(releases, "installed", lambda p: ("fla-core", "0.5.0"))
    base.availability.cache_clear()
    try:
        fla = get("gdn.fla.fused_recurrent")
        refused = fla.supports(raw)
        assert not refused and "use_beta_sigmoid_in_kernel" in refused.reason
        assert fla.supports(canonical)
        assert get("kda.fla.chunk").supports(Case.parse("kda/model/B2-T37-H2-N64-h0/fp32/s0"))
        monkeypatch.setattr(releases, "installed", lambda p: ("fla-core", "0.3.2"))
        base.availability.cache_clear()
        for name in ("kda.fla.chunk", "kda.fla.fused_recurrent", "kda.fla.fused_recurrent_pool",
                     "kda.fla.naive_recurrent", "kda.fla.naive_chunk"):
            why = base.availability(name)
            assert not why and "fla.ops.kda" in why.reason, (name, why)
    finally:
        base.availability.cache_clear()
