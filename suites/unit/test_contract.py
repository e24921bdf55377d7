"""The declared contract: the dtype each output comes back in, and the precision a state is held in.

An output that comes back in another dtype than its variant declares fails, naming both; the results
record the dtype that came back. A variant may declare its state held in bf16/fp16 by design: it is
then judged against the baseline with its state rounded to that precision after every token, and every
verdict shows the declared contract. An undeclared half-precision state still fails.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
import torch

from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import FAIL, PASS, CheckResult, Checker
from wkvbench.report.matrix import cell, result_rows
from wkvbench.results.committed import VerifyRun
from wkvbench.results.model import from_doc
from wkvbench.run.plugins import as_dtype, register_function
from wkvbench.run.show import summary_table
from wkvbench.run.verify import Report
from wkvkernels.base import KernelVariant, register, unregister
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state, op_spec, round_to
from wkvoracle import ORACLES

CASE = Case("wkv7", "model", Shape(2, 9, 2, 16, h0=True), "bf16")
CHECKER = Checker()


@pytest.fixture
def plugin():
    """``plugin(fn, **kwargs)`` registers ``fn`` as ``wkv7.test.contract`` for one test."""
    made = []

    def make(fn, name="wkv7.test.contract", op="wkv7", **kwargs):
        kwargs.setdefault("dtypes", ("fp32", "bf16", "fp16"))
        made.append(register_function(name, op, fn, **kwargs).name)
        return made[-1]

    yield make
    for name in made:
        unregister(name)


def _exact(y_as, state_as=np.float32):
    """A plug-in computing the float64 oracle on the rounded inputs, ``y`` returned by ``y_as(y, dtype)``."""
    def fn(inputs, dtype):
        from wkvkernels.base import get

        eff = get("wkv7.torch.recurrent").effective_inputs(inputs, dtype)
        out = ORACLES["wkv7"](**{**default_state("wkv7", eff), **eff})
        return {"y": y_as(out["y"], dtype), "state": np.asarray(out["state"], state_as)}
    return fn


# ---- A: the output dtype -------------------------------------------------------------------------

def test_fp16_y_on_a_bf16_case_fails_naming_the_dtype(plugin):
    name = plugin(_exact(lambda y, dt: y.astype(np.float16)))
    res = CHECKER.check(_get(name), CASE)
    assert res.status == FAIL and "y came back fp16, declared bf16" in res.reason
    assert res.errors["y"].returned_dtype == "fp16" and res.errors["y"].declared_dtype == "bf16"
    assert res.errors["y"].out_dtype == "bf16"  # the floor stays the declared dtype's


def test_fp32_y_on_a_bf16_case_fails_unless_declared(plugin):
    fp32_y = _exact(lambda y, dt: y.astype(np.float32))
    res = CHECKER.check(_get(plugin(fp32_y)), CASE)
    assert res.status == FAIL and "y came back fp32, declared bf16" in res.reason
    declared = plugin(fp32_y, name="wkv7.test.declared_fp32", output_dtypes={"y": "fp32"})
    res = CHECKER.check(_get(declared), CASE)
    assert res.status == PASS, res.reason
    # judged at the fp32 floor: fp32 arithmetic, not the bf16 limits
    assert res.errors["y"].out_dtype == "fp32" and res.errors["y"].floor_x < 4
    # a y that is really bf16 arithmetic declared fp32 fails at the fp32 floor
    lying = plugin(_exact(lambda y, dt: round_to(y, dt).astype(np.float32)), name="wkv7.test.lying",
                   output_dtypes={"y": "fp32"})
    assert CHECKER.check(_get(lying), CASE).status == FAIL


@pytest.mark.parametrize("as_bf16", [lambda y, dt: as_dtype(y, dt),
                                     lambda y, dt: torch.from_numpy(y).to(torch.bfloat16)],
                         ids=["ml_dtypes", "torch"])
def test_a_numpy_plugin_returns_bf16_as_ml_dtypes_or_torch(plugin, as_bf16):
    res = CHECKER.check(_get(plugin(_exact(as_bf16))), CASE)
    assert res.status == PASS, res.reason
    assert res.errors["y"].returned_dtype == "bf16"
    assert as_dtype(np.ones(3), "bf16").dtype == ml_dtypes.bfloat16


def test_float64_arrays_are_fp64_not_the_case_dtype(plugin):
    name = plugin(_exact(lambda y, dt: y, state_as=np.float64))
    res = CHECKER.check(_get(name), Case("wkv7", "model", Shape(1, 5, 1, 16, h0=True), "fp32"))
    assert res.status == FAIL and "y came back fp64, declared fp32" in res.reason


def test_the_results_record_the_returned_dtype(plugin):
    res = CHECKER.check(_get(plugin(_exact(lambda y, dt: y.astype(np.float16)))), CASE)
    row = json.loads(json.dumps(res.as_dict()))
    assert row["errors"]["y"]["returned_dtype"] == "fp16"
    assert row["errors"]["y"]["declared_dtype"] == "bf16" and row["errors"]["y"]["out_dtype"] == "bf16"
    assert row["errors"]["state"]["returned_dtype"] == "fp32"
    back = CheckResult.from_dict(row)
    assert back.errors["y"].returned_dtype == "fp16" and back.status == FAIL
    # a row written before the dtype contract reads back with the dtypes unknown
    for e in row["errors"].values():
        del e["returned_dtype"], e["declared_dtype"]
    old = CheckResult.from_dict(row)
    assert old.errors["y"].returned_dtype is None and old.state_precision == "fp32"
    doc = {"schema": "wkvbench.verify/1", "results": [res.as_dict(), row]}
    assert len(from_doc(_path("verify.json"), doc).rows) == 2


def test_register_function_refuses_unknown_declarations():
    from wkvbench.judge.validate import InvalidInput

    with pytest.raises(InvalidInput, match="unknown outputs"):
        register_function("wkv7.test.bad", "wkv7", _exact(lambda y, dt: y), output_dtypes={"o": "fp32"})
    with pytest.raises(InvalidInput, match="state_precision_reason"):
        register_function("wkv7.test.bad", "wkv7", _exact(lambda y, dt: y), state_precision="bf16")


# ---- B: a declared state precision ---------------------------------------------------------------

def _held_in(hold, returned=None, garbage: float = 0.0):
    """A wkv7 plug-in whose state is held rounded by ``hold(x)`` between tokens (the float64 step
    otherwise), y rounded to the case dtype; the state returned as ``returned(state)`` (default: the
    values as float32). ``garbage`` adds that much relative noise to y."""
    def fn(inputs, dtype):
        state = hold(inputs.get("state", default_state("wkv7", inputs)["state"]))
        ys = []
        for t in range(inputs["k"].shape[1]):
            step = {k: (v[:, t:t + 1] if k in "rkvab" or k == "lw" else v)
                    for k, v in inputs.items() if k != "state"}
            low = op_spec("wkv7").activations
            step = {k: round_to(v, dtype if k in low else "fp32") for k, v in step.items()}
            out = ORACLES["wkv7"](**step, state=state)
            state = hold(out["state"])
            ys.append(out["y"])
        y = np.concatenate(ys, axis=1)
        y = y * (1 + garbage * np.random.default_rng(0).standard_normal(y.shape))
        return {"y": as_dtype(y, dtype), "state": (returned or (lambda s: s.astype(np.float32)))(state)}
    return fn


def bf16(x):
    return round_to(x, "bf16")


def _e4m3_like(x):
    """Rounded to 3 mantissa bits (fp8 e4m3's precision): a state far coarser than bf16."""
    m, e = np.frexp(np.asarray(x, np.float64))
    return np.ldexp(np.round(m * 16) / 16, e)


BF16_STATE = {"state_precision": "bf16", "state_precision_reason": "test: FlashInfer-like bf16 state"}
CASES = [c for c in default_cases(("wkv7",), ("fp32", "bf16")) if c.shape.T > 1]


def test_a_bf16_state_fails_undeclared_and_passes_declared(plugin):
    undeclared = _get(plugin(_held_in(bf16), name="wkv7.test.bf16_state"))
    declared = _get(plugin(_held_in(bf16, lambda s: as_dtype(s, "bf16")), name="wkv7.test.bf16_declared",
                           **BF16_STATE))
    for case in CASES:
        res = CHECKER.check(undeclared, case)
        assert res.status == FAIL and "state: rel" in res.reason, (case.id, res.reason)
        res = CHECKER.check(declared, case)
        assert res.status == PASS, (case.id, res.reason)
        assert res.verdict == "PASS (bf16 state, declared)"
        assert res.errors["state"].out_dtype == "bf16" and res.errors["state"].returned_dtype == "bf16"
        assert res.baseline["state"] > 0  # held to the baseline run with its state in bf16
    row = res.as_dict()
    assert row["state_precision"] == "bf16" and row["state_reason"] == BF16_STATE["state_precision_reason"]
    assert CheckResult.from_dict(row).verdict == "PASS (bf16 state, declared)"


def test_a_declared_bf16_state_computing_garbage_fails(plugin):
    v = _get(plugin(_held_in(bf16, lambda s: as_dtype(s, "bf16"), garbage=0.02), **BF16_STATE))
    res = CHECKER.check(v, CASES[0])
    assert res.status == FAIL and "y: rel" in res.reason
    assert res.verdict == "FAIL (bf16 state, declared)"


def test_a_declared_bf16_state_kept_otherwise_fails(plugin):
    as_fp16 = _get(plugin(_held_in(lambda s: round_to(s, "fp16"), lambda s: s.astype(np.float16)),
                          name="wkv7.test.fp16_held", **BF16_STATE))
    res = CHECKER.check(as_fp16, CASES[0])
    assert res.status == FAIL and "state came back fp16, declared bf16" in res.reason
    coarser = _get(plugin(_held_in(_e4m3_like, lambda s: as_dtype(s, "bf16")), name="wkv7.test.e4m3_held",
                          **BF16_STATE))
    for case in CASES:
        res = CHECKER.check(coarser, case)
        assert res.status == FAIL and "state: rel" in res.reason, (case.id, res.reason)


def test_every_table_shows_the_declared_contract(plugin):
    v = _get(plugin(_held_in(bf16, lambda s: as_dtype(s, "bf16")), **BF16_STATE))
    results = [CHECKER.check(v, c) for c in CASES[:2]]
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(summary_table(Report(results=results)))
    assert "(bf16 state, declared)" in console.export_text()
    rows = [r.as_dict() for r in results]
    assert "(bf16 state, declared)" in cell(rows).head
    run = VerifyRun(_path("v.json"), {}, rows)
    assert all(r.verdict.endswith("(bf16 state, declared)") for r in result_rows(run))


def test_a_state_precision_needs_a_reason_and_a_state():
    class Bad(KernelVariant):
        name, operator, source, backend, algorithm = "wkv7.test.noreason", "wkv7", "t", "t", "t"
        state_precision = "bf16"

        def prepare(self, inputs, case): ...
        def run(self, native): ...
        def to_canonical(self, out): ...

    with pytest.raises(ValueError, match="state_precision_reason"):
        register(Bad)
    Bad.state_precision = "fp8"
    with pytest.raises(ValueError, match="not one of"):
        register(Bad)


def _get(name):
    from wkvkernels.base import get

    return get(name)


def _path(name):
    from pathlib import Path

    return Path(name)


@pytest.mark.thirdparty
def test_every_available_variant_says_what_came_back():
    """Every variant available here reports the dtype of every output (never unknown) on a small case
    of each of its dtypes; the tolerance tests (suites/variants/test_variants.py) fail any mismatch."""
    from wkvkernels.base import availability, variants

    unknown = []
    for v in variants():
        if not availability(v.name) or v.name.startswith(("wkv7.test.", "gdn.test.")):
            continue
        for dt in sorted(v.dtypes):
            shape = (Shape(1, 1, 1, 64, C=16) if v.operator == "gdn_wy" else
                     Shape(1, 5, 1, 64, h0=True) if v.operator == "wkv4" else Shape(1, 5, 2, 64, h0=True))
            res = CHECKER.check(v, Case(v.operator, "model", shape, dt, 0))
            unknown += [f"{v.name} {dt} {n}" for n, e in res.errors.items() if e.returned_dtype is None]
    assert not unknown, unknown
