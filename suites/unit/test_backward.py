"""Backward: every variant with a backward x the default cases vs the float64 backward oracle."""

from __future__ import annotations

import numpy as np
import pytest

from suites.helpers import Tampered
from wkvbench.judge.case_sets import default_cases
from wkvbench.judge.check import FAIL, PASS, SKIP, XFAIL, Checker, check_backward
from wkvkernels import register, unregister, variants
from wkvkernels.cases import Case, Shape

CHECKER = Checker()
PAIRS = [(v, c) for c in default_cases() if c.op != "gdn_wy" for v in variants(c.op) if v.supports_backward]


@pytest.mark.parametrize(("variant", "case"), PAIRS, ids=[f"{v.name}-{c.id}" for v, c in PAIRS])
def test_gradients_match_the_float64_backward(variant, case):
    res = check_backward(CHECKER, variant, case)
    if res.status == SKIP:
        pytest.skip(f"{variant.name}: {res.reason}")
    if res.status == XFAIL:
        pytest.xfail(res.reason)
    assert res.status == PASS, f"{res.status}: {res.reason}\n  reproduce: {res.reproduce}"
    assert res.errors, "no gradient was compared"


@pytest.mark.parametrize("corrupt,needle", [
    (lambda g: g.__setitem__("lw", g["lw"] * 1.01), "grad_lw"),
    (lambda g: g.__setitem__("state", np.zeros_like(g["state"])), "grad_state"),
    (lambda g: g.__setitem__("a", np.swapaxes(g["a"], 0, 1).reshape(g["a"].shape)), "grad_a"),
    (lambda g: g.pop("b"), "no gradient for ['b']"),
], ids=["lw-scaled", "state-zero", "a-scrambled", "b-missing"])
def test_wrong_gradients_fail(corrupt, needle):
    v = Tampered("wkv7.test.badgrad", corrupt_grad=corrupt)
    register(v)
    try:
        res = check_backward(CHECKER, v, Case("wkv7", "model", Shape(2, 9, 2, 16, h0=True), "fp32"))
    finally:
        unregister(v.name)
    assert res.status == FAIL and needle in res.reason, res.reason


def test_a_backward_the_package_refuses_here_is_a_skip_with_its_reason(monkeypatch):
    """FLA refuses its gated chunk_bwd_dqkwg on Hopper with Triton < 3.7.1 (every gdn.fla.chunk
    backward case raised on the H100 box); such a refusal is a SKIP naming it, never an ERROR."""
    from wkvkernels import _fla_env
    from wkvkernels.base import get

    chunk = get("gdn.fla.chunk")
    assert chunk.gated_dqkwg_backward and not get("gla.fla.chunk").gated_dqkwg_backward
    monkeypatch.setattr(_fla_env, "gated_dqkwg_refused", lambda: "FLA refuses (test)")
    case = Case("gdn", "model", Shape(1, 5, 1, 16), "fp32")
    assert chunk.backward_unavailable(case) == "FLA refuses (test)"
    v = Tampered("wkv7.test.refusing", base="wkv7.torch.recurrent")
    v.backward_unavailable = lambda case: "the package refuses on this GPU"
    register(v)
    try:
        res = check_backward(CHECKER, v, Case("wkv7", "model", Shape(1, 5, 1, 16), "fp32"))
    finally:
        unregister(v.name)
    assert res.status == SKIP and res.reason == "the package refuses on this GPU"
