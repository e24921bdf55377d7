"""Half-precision cases are easy to get right: a plug-in function receives its inputs rounded to the
case dtype (the fp32 originals beside them), and a failure whose pattern matches a state held in
bf16/fp16 or a kernel that computed on unrounded inputs says so in its hint."""

from __future__ import annotations

import numpy as np
import pytest

from wkvbench.judge.check import FAIL, PASS, Checker
from wkvbench.run.plugins import as_dtype, register_function
from wkvkernels.base import unregister
from wkvkernels.cases import Case
from wkvkernels.ops import round_to
from wkvoracle import recurrent_gla
from wkvoracle.inputs import generate

CASE = Case.parse("gla/model/B1-T37-H2-N64-h0/fp16/s0")  # fp16: no ml_dtypes needed for y
SEEN: dict = {}


def _good(x, dtype):
    SEEN["inputs"] = x
    o = recurrent_gla(**x)
    return {"y": as_dtype(o["y"], dtype), "state": o["state"].astype(np.float32)}


def _unrounded(x, dtype):
    o = recurrent_gla(**x.fp32)
    return {"y": as_dtype(o["y"], dtype), "state": o["state"].astype(np.float32)}


def _half_state(x, dtype):
    q, k, v, lw, S = (x[n].astype(np.float64) for n in ("q", "k", "v", "lw", "state"))
    ys = []
    for t in range(q.shape[1]):  # the state rounded to the case dtype after every token
        S = round_to(S * np.exp(lw[:, t])[..., None, :] + v[:, t, ..., None] * k[:, t, :, None, :], dtype)
        ys.append(np.einsum("bhvk,bhk->bhv", S, q[:, t]) * x["scale"])
    return {"y": as_dtype(np.stack(ys, 1), dtype), "state": S.astype(np.float32)}


@pytest.fixture(scope="module")
def plugins():
    made = [register_function(f"gla.hp.{f.__name__.strip('_')}", "gla", f, dtypes=("fp32", "fp16"))
            for f in (_good, _unrounded, _half_state)]
    yield {v.name.rsplit(".", 1)[1]: v for v in made}
    for v in made:
        unregister(v.name)


def test_a_plugin_receives_its_inputs_rounded_with_the_fp32_originals(plugins):
    res = Checker().check(plugins["good"], CASE)
    assert res.status == PASS, res.reason
    got, raw = SEEN["inputs"], generate(CASE)
    for name in ("q", "k", "v"):  # activations: fp16 values, in float32 arrays
        assert got[name].dtype == np.float32 and np.array_equal(got[name], round_to(raw[name], "fp16"))
        assert not np.array_equal(got[name], raw[name])
        assert np.array_equal(got.fp32[name], raw[name])
    assert np.array_equal(got["lw"], raw["lw"]) and got["scale"] == raw["scale"]  # decays stay fp32


def test_unrounded_inputs_are_named_in_the_hint(plugins):
    res = Checker().check(plugins["unrounded"], CASE)
    assert res.status == FAIL and "computed on unrounded inputs" in res.hint, (res.reason, res.hint)
    assert "state held" not in res.hint and res.as_dict()["hint"] == res.hint


def test_a_half_precision_state_is_named_in_the_hint(plugins):
    res = Checker().check(plugins["half_state"], CASE)
    assert res.status == FAIL and "consistent with a state held in fp16 between tokens" in res.hint, res.hint
    assert "unrounded" not in res.hint


def test_no_hint_on_fp32_or_on_a_pass(plugins):
    fp32 = Case.parse("gla/model/B1-T37-H2-N64-h0/fp32/s0")
    assert Checker().check(plugins["unrounded"], fp32).hint == ""  # fp32: nothing rounded, it passes
    assert Checker().check(plugins["good"], CASE).hint == ""
